"""Dataset contracts: the columns a dataset's files must have, their types, how the files are
read (``input``) and what is written (``output``).

A contract is JSON (docs/your-data.md)::

    {
        "dataset": "orders",
        "description": "...",
        "input": {
            "format": "csv",
            "delimiter": ";",
            "quote": '"',
            "encoding": "latin-1",
            "header": true,
            "compression": "auto",
        },
        "output": {"format": "jsonl"},
        "columns": [{"name": "order_id", "type": "string", "required": true}, ...],
    }

``input`` and ``output`` may be left out (CSV with a header, UTF-8, comma, JSON Lines out).
The packaged files ``ingest_pipeline/contracts/<dataset>.json`` are the defaults; contracts
registered at run time (``ingestctl dataset add``, dal/contracts.py) take precedence. A file
whose dataset has no contract is rejected as bad data.
"""

import codecs
import json
import re
from collections.abc import Callable, Iterable
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from msgspec import Meta, Struct

from ingest_pipeline.errors import ConfigurationError, UnknownDatasetError
from ingest_pipeline.parsing import ParseError, parse

DATASET_NAME = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,62}$")
# The packaged contracts (the package ingest_pipeline.contracts), read as plain files:
# importlib.resources' readers cost about 1 ms of the first invocation (cold start).
PACKAGED = Path(__file__).parent.parent / "contracts"


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
    # decimal only: digits after the point, the Parquet column's decimal128(38, scale)
    scale: Annotated[int, Meta(ge=0, le=38)] | None = None


class InputFormat(StrEnum):
    CSV = "csv"
    JSONL = "jsonl"  # one JSON object per line, its keys the columns


class Compression(StrEnum):
    AUTO = "auto"  # gzip when the object starts with gzip's magic bytes, else none
    GZIP = "gzip"
    NONE = "none"


_CSV_ONLY = {"delimiter": ",", "quote": '"', "header": True}
_OneChar = Annotated[str, Meta(min_length=1, max_length=1)]


class Input(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How the dataset's files are read."""

    format: InputFormat = InputFormat.CSV
    compression: Compression = Compression.AUTO
    encoding: str = "utf-8"  # any codec Python knows: "latin-1", "cp1252", "utf-16"
    delimiter: _OneChar = ","  # csv only
    quote: _OneChar = '"'  # csv only
    header: bool = True  # csv only: False when the file has no header line

    def __post_init__(self) -> None:
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise ValueError(f"encoding {self.encoding!r} is not one Python knows") from None
        if self.delimiter == self.quote:
            raise ValueError(f"delimiter and quote are both {self.delimiter!r}")
        if {self.delimiter, self.quote} & {"\n", "\r"}:
            raise ValueError("a line break cannot be the delimiter or the quote")
        if self.format is InputFormat.JSONL:
            for name, default in _CSV_ONLY.items():
                if getattr(self, name) != default:
                    raise ValueError(f"{name} applies to csv input only, not jsonl")


class OutputFormat(StrEnum):
    JSONL = "jsonl"
    PARQUET = "parquet"


class Output(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What is written to processed/."""

    format: OutputFormat = OutputFormat.JSONL


class Contract(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    dataset: Annotated[str, Meta(pattern=DATASET_NAME.pattern)]
    description: str = ""
    input: Input = Input()
    output: Output = Output()
    # a module of ingest_pipeline/processors/ every record goes through (logic/processing.py)
    processor: Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_]{0,62}$")] | None = None
    columns: Annotated[tuple[Column, ...], Meta(min_length=1)]

    def __post_init__(self) -> None:
        first: dict[str, int] = {}
        for index, column in enumerate(self.columns):
            if column.name in first:
                raise ValueError(
                    f"columns[{index}].name {column.name!r} repeats columns[{first[column.name]}]"
                )
            first[column.name] = index
            if column.scale is not None and column.type is not ColumnType.DECIMAL:
                raise ValueError(f"columns[{index}].scale applies to decimal columns only")
            if (
                self.output.format is OutputFormat.PARQUET
                and column.type is ColumnType.DECIMAL
                and column.scale is None
            ):
                raise ValueError(
                    f"columns[{index}] ({column.name}): a decimal column written to Parquet "
                    'needs its scale, the digits after the point (e.g. "scale": 2)'
                )

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


class Registered(Struct, frozen=True):
    """A contract as one object was processed with it: ``version`` 0 is the packaged default;
    1, 2, ... were registered at run time (``version_id``: the S3 object version holding it)."""

    contract: Contract
    version: int
    version_id: str = ""


@cache
def parse_registered(text: str, dataset: str, version: int, version_id: str) -> Registered:
    """A registered contract's text (cached: a version never changes); ConfigurationError when
    it is not a contract of ``dataset``."""
    contract = parse_contract(text)
    if contract.dataset != dataset:
        raise ConfigurationError(
            f"contract version {version} of dataset {dataset!r} declares {contract.dataset!r}"
        )
    return Registered(contract, version, version_id)


def is_packaged(dataset: str) -> bool:
    return (PACKAGED / f"{dataset}.json").is_file()


@cache
def load_contract(dataset: str) -> Contract:
    """The packaged contract of ``dataset``; UnknownDatasetError if there is none."""
    if not DATASET_NAME.match(dataset):
        raise UnknownDatasetError(f"{dataset!r} is not a valid dataset name")
    resource = PACKAGED / f"{dataset}.json"
    if not resource.is_file():
        raise UnknownDatasetError(
            f"no contract for dataset {dataset!r}; known: {', '.join(known_datasets())}"
        )
    contract = parse_contract(resource.read_text(encoding="utf-8"))
    if contract.dataset != dataset:
        raise ConfigurationError(f"contract file {dataset}.json declares {contract.dataset!r}")
    return contract


def known_datasets() -> list[str]:
    return sorted(p.name[: -len(".json")] for p in PACKAGED.iterdir() if p.name.endswith(".json"))


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


def convert_row(
    columns: Iterable[Column],
    values: Iterable[str | dict[str, Any]],
    line: int,
    problems: list[dict[str, Any]],
) -> str | None:
    """One record's JSON line (the contract's columns in order), or None after appending
    its problems to ``problems``, column by column. A value is the field's text (stripped
    here; empty is null, a problem when required), or a problem already found for that
    column (a JSON Lines value of the wrong type), kept in its column's place."""
    found = len(problems)
    row: dict[str, Any] = {}
    for column, raw in zip(columns, values, strict=True):
        if isinstance(raw, dict):
            problems.append(raw)
            continue
        value = raw.strip()
        if value == "":
            if column.required:
                problems.append(
                    {"line": line, "column": column.name, "error": "required value missing"}
                )
            row[column.name] = None
            continue
        try:
            row[column.name] = CONVERTERS[column.type](value)
        except ValueError as exc:
            problems.append(
                {"line": line, "column": column.name, "error": f"{exc}: {value[:40]!r}"}
            )
    if len(problems) > found:
        return None
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"
