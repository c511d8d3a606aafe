"""Dataset contracts: the columns a dataset's CSV files must have, and their types.

Contracts are JSON files in ``ingest_pipeline/contracts/<dataset>.json``; to onboard a
dataset, add a file. A file whose dataset has no contract is rejected as bad data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from functools import cache
from importlib import resources
from typing import Annotated, Any

from msgspec import Meta, Struct

from ingest_pipeline.errors import ConfigurationError, UnknownDatasetError
from ingest_pipeline.parsing import ParseError, parse

_DATASET_NAME = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,62}$")


class ColumnType(StrEnum):
    STRING = "string"
    INTEGER = "integer"
    DECIMAL = "decimal"
    BOOLEAN = "boolean"
    DATE = "date"
    DATETIME = "datetime"


class Column(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1)]
    type: ColumnType
    required: bool = True


class Contract(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    dataset: str
    description: str = ""
    columns: Annotated[tuple[Column, ...], Meta(min_length=1)]

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate column names in {names}")

    @property
    def header(self) -> list[str]:
        return [c.name for c in self.columns]


def parse_contract(text: str) -> Contract:
    """A contract file's text as a Contract (unknown keys refused); ConfigurationError else."""
    try:
        return parse(Contract, json.loads(text))
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"invalid dataset contract: not JSON: {exc}") from exc
    except ParseError as exc:
        raise ConfigurationError(f"invalid dataset contract: {exc}") from exc


@cache
def load_contract(dataset: str) -> Contract:
    """The packaged contract of ``dataset``; UnknownDatasetError if there is none."""
    if not _DATASET_NAME.match(dataset):
        raise UnknownDatasetError(f"{dataset!r} is not a valid dataset name")
    resource = resources.files("ingest_pipeline.contracts").joinpath(f"{dataset}.json")
    if not resource.is_file():
        raise UnknownDatasetError(
            f"no contract for dataset {dataset!r}; known: {', '.join(known_datasets())}"
        )
    contract = parse_contract(resource.read_text(encoding="utf-8"))
    if contract.dataset != dataset:
        raise ConfigurationError(f"contract file {dataset}.json declares {contract.dataset!r}")
    return contract


def known_datasets() -> list[str]:
    root = resources.files("ingest_pipeline.contracts")
    return sorted(p.name[: -len(".json")] for p in root.iterdir() if p.name.endswith(".json"))


# --- value conversion ------------------------------------------------------------------

_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


def _to_integer(raw: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", raw):
        raise ValueError("not an integer")
    return int(raw)


def _to_decimal(raw: str) -> str:
    try:
        value = Decimal(raw)
    except InvalidOperation as exc:
        raise ValueError("not a decimal number") from exc
    if not value.is_finite():
        raise ValueError("not a finite decimal number")
    # Kept as a string: JSON numbers would lose precision in most readers.
    return str(value)


def _to_boolean(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError("not a boolean (true/false/yes/no/1/0)")


def _to_date(raw: str) -> str:
    return date.fromisoformat(raw).isoformat()


def _to_datetime(raw: str) -> str:
    return datetime.fromisoformat(raw).isoformat()


CONVERTERS: dict[ColumnType, Callable[[str], Any]] = {
    ColumnType.STRING: lambda raw: raw,
    ColumnType.INTEGER: _to_integer,
    ColumnType.DECIMAL: _to_decimal,
    ColumnType.BOOLEAN: _to_boolean,
    ColumnType.DATE: _to_date,
    ColumnType.DATETIME: _to_datetime,
}
