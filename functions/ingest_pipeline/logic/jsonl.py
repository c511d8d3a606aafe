"""JSON Lines input: one JSON object per line, its keys the contract's columns.

A value is checked for its JSON type, then turned into the text a CSV file would hold for
it and converted by the contract's own converters (``logic.contracts.CONVERTERS``) under
the CSV path's rules (stripped; empty or null is a missing value), so a row is written
exactly as ``logic/transform.py`` writes the same row read from CSV, and its problems read
the same. Accepted per column type: string: a string; integer: an integer or a string of
digits; decimal: a number or a numeric string (numbers are read as decimals: no float
rounding); boolean: true/false or the CSV spellings; date and datetime: ISO strings.

``logic/transform.py`` reads the lines (``convert``: the same line limits, encoding errors
and summary as CSV) and collects the problems; this module makes one row of one line.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from ingest_pipeline.errors import HeaderError, MalformedJsonError
from ingest_pipeline.logic.contracts import ColumnType, Contract, convert_row

_JSON_BLANKS = " \t\r\n"
_EXPECTED = {
    ColumnType.STRING: "a JSON string",
    ColumnType.INTEGER: "an integer",
    ColumnType.DECIMAL: "a number",
    ColumnType.BOOLEAN: "true or false",
    ColumnType.DATE: "an ISO date string",
    ColumnType.DATETIME: "an ISO datetime string",
}


def is_blank(line: str) -> bool:
    return not line.strip(_JSON_BLANKS)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def row(line: str, number: int, contract: Contract, problems: list[dict[str, Any]]) -> str | None:
    """The JSON line of line ``number`` (not blank), or None after appending its value
    problems to ``problems``. A line that is not a JSON object raises MalformedJsonError,
    a key that is no column HeaderError."""
    try:
        record = json.loads(line, parse_float=Decimal, parse_constant=_no_constant)
    except ValueError as exc:  # JSONDecodeError, NaN, a number too long
        raise MalformedJsonError(f"not valid JSON: {exc}", line=number) from None
    except RecursionError:  # nested deeper than the parser goes
        raise MalformedJsonError("not valid JSON: nested too deeply", line=number) from None
    if not isinstance(record, dict):
        raise MalformedJsonError(
            f"expected a JSON object, found {type(record).__name__}: {line.strip()[:40]!r}",
            line=number,
        )
    names = contract.header
    unexpected = [key for key in record if key not in names]
    if unexpected:
        raise HeaderError(
            f"key {unexpected[0]!r} is not a column of the {contract.dataset!r} contract "
            f"(columns: {names})",
            line=number,
            missing=[],
            unexpected=unexpected,
        )
    values: list[str | dict[str, Any]] = []
    for column in contract.columns:
        value = record.get(column.name)
        text = _csv_text(value, column.type)
        if text is not None:
            values.append(text)
            continue
        shown = (
            str(value)  # a number as written (json.dumps would quote a Decimal)
            if isinstance(value, Decimal)
            else json.dumps(value, ensure_ascii=False, default=str)
        )[:40]
        error = f"not {_EXPECTED[column.type]}: {shown}"
        values.append({"line": number, "column": column.name, "error": error})
    return convert_row(contract.columns, values, number, problems)


def _csv_text(value: Any, type_: ColumnType) -> str | None:
    """The text a CSV file would hold for this JSON value; None when the column does not
    take its JSON type (bool is an int in Python: tested first)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return ("true" if value else "false") if type_ is ColumnType.BOOLEAN else None
    if isinstance(value, int) and type_ in (ColumnType.INTEGER, ColumnType.DECIMAL):
        return str(value)
    if isinstance(value, Decimal) and type_ is ColumnType.DECIMAL:
        return str(value)
    return None
