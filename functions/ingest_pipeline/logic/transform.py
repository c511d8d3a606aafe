"""Streaming CSV -> JSON Lines conversion, validated against a dataset contract.

Memory stays bounded whatever the file size: the source is read one physical line at a
time (each line capped at ``max_line_bytes``), and output lines are yielded one by one.
Errors carry the physical line number where they were found.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from ingest_pipeline.errors import (
    ColumnCountError,
    DataError,
    EmptyFileError,
    EncodingError,
    HeaderError,
    LineTooLongError,
    MalformedCsvError,
    ValueTypeError,
)
from ingest_pipeline.logic.contracts import CONVERTERS, Contract

UTF8_BOM = b"\xef\xbb\xbf"
DEFAULT_MAX_LINE_BYTES = 1024 * 1024
MAX_REPORTED_ERRORS = 10


@dataclass
class Summary:
    """What one conversion did; small enough to travel in the state machine's state."""

    dataset: str
    rows: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    sha256: str = ""
    _digest: Any = field(default_factory=hashlib.sha256, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "rows": self.rows,
            "bytesIn": self.bytes_in,
            "bytesOut": self.bytes_out,
            "sha256": self.sha256,
        }


class _Lines:
    """Physical lines of a binary stream, decoded as UTF-8, each at most ``limit`` bytes."""

    def __init__(self, source: IO[bytes], summary: Summary, limit: int) -> None:
        self._source = source
        self._summary = summary
        self._limit = limit
        self.number = 0

    def __iter__(self) -> Iterator[str]:
        while True:
            raw = self._source.readline(self._limit + 1)
            if not raw:
                return
            self.number += 1
            self._summary.bytes_in += len(raw)
            if len(raw) > self._limit and not raw.endswith(b"\n"):
                raise LineTooLongError(f"line is longer than {self._limit} bytes", line=self.number)
            if self.number == 1:
                raw = raw.removeprefix(UTF8_BOM)
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise EncodingError(
                    f"not valid UTF-8 at byte {exc.start} of the line "
                    f"({raw[exc.start : exc.start + 4]!r})",
                    line=self.number,
                ) from exc


def convert(
    source: IO[bytes],
    contract: Contract,
    summary: Summary,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[bytes]:
    """Yield one UTF-8 JSON line per CSV record; raise a DataError at the first bad line.

    Value errors are collected (up to ``MAX_REPORTED_ERRORS``) before raising, so a data
    owner sees several problems at once; structural errors stop at once.
    """
    lines = _Lines(source, summary, max_line_bytes)
    csv.field_size_limit(max_line_bytes)
    reader = csv.reader(lines, strict=True)
    problems: list[dict[str, Any]] = []
    try:
        header = _read_header(reader, lines, contract)
        converters = [(c, CONVERTERS[c.type]) for c in contract.columns]
        for record in reader:
            if not record or record == [""]:
                continue  # blank line
            line = lines.number
            if len(record) != len(header):
                raise ColumnCountError(
                    f"expected {len(header)} columns, found {len(record)}",
                    line=line,
                    expected=len(header),
                    found=len(record),
                )
            row: dict[str, Any] = {}
            for (column, to_value), raw in zip(converters, record, strict=True):
                value = raw.strip()
                if value == "":
                    if column.required:
                        problems.append(
                            {"line": line, "column": column.name, "error": "required value missing"}
                        )
                    row[column.name] = None
                    continue
                try:
                    row[column.name] = to_value(value)
                except ValueError as exc:
                    problems.append(
                        {
                            "line": line,
                            "column": column.name,
                            "error": f"{exc}: {value[:40]!r}",
                        }
                    )
            if len(problems) >= MAX_REPORTED_ERRORS:
                break
            if problems:
                continue
            out = (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
            summary.rows += 1
            summary.bytes_out += len(out)
            summary._digest.update(out)
            yield out
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise LineTooLongError(
                f"a field is longer than {max_line_bytes} bytes", line=lines.number
            ) from exc
        raise MalformedCsvError(str(exc), line=lines.number) from exc
    if problems:
        first = problems[0]
        raise ValueTypeError(
            f"{len(problems)}{'+' if len(problems) >= MAX_REPORTED_ERRORS else ''} bad "
            f"value(s); first: column {first['column']!r}: {first['error']}",
            line=first["line"],
            errors=problems,
        )
    summary.sha256 = summary._digest.hexdigest()


def _read_header(reader: Any, lines: _Lines, contract: Contract) -> list[str]:
    for record in reader:
        if not record or record == [""]:
            continue
        header = [name.strip() for name in record]
        if header != contract.header:
            missing = [c for c in contract.header if c not in header]
            unexpected = [c for c in header if c not in contract.header]
            raise HeaderError(
                f"header does not match the {contract.dataset!r} contract: expected "
                f"{contract.header}, found {header}",
                line=lines.number,
                missing=missing,
                unexpected=unexpected,
            )
        return header
    if lines.number == 0:
        raise EmptyFileError("the file is empty (0 bytes)")
    raise EmptyFileError("the file has no header line (only blank lines)", line=lines.number)


__all__ = ["DataError", "Summary", "convert"]
