"""The large-file path's pure logic: cut an object into chunks of whole CSV records, merge
what the chunks found, and plan the output's assembly. No AWS here (``handlers/split.py``,
``handlers/chunk.py`` and ``handlers/assemble.py`` do the reads and writes).

How an object of any size is processed by many Lambdas at once, with the single-Lambda
path's exact output and errors:

1. **Plan** (``plan_chunks``). The header (with its BOM, if any) ends at ``header_end``.
   From there the object is cut every ``chunk_bytes``. A cut must fall where a record
   starts, which bytes alone cannot tell (a quoted field may hold newlines), so each cut
   moves to the first line start after it whose next records parse as records of the
   contract's width (``line_start_after``): a guess, checked in step 3.
2. **Convert** each chunk (``logic.transform.convert`` with ``stop_at``). A chunk owns the
   records that *start* in ``[start, stop)``: it reads past ``stop`` only to finish a record
   that started before it, and reports ``end``, the offset where its last record ended,
   and ``lines``, how many physical lines it read. Its line numbers are its own (1 = its
   first line).
3. **Merge** (``merge_chunks``), in chunk order. Chunk 0 starts right after the header, so
   its records are real; if chunk *i*'s records are real, ``end`` is where the next record
   really starts. So chunk *i + 1* is right exactly when its ``start`` is chunk *i*'s
   ``end``; a chunk that is not is planned again from that offset (``Realign``) and nothing
   it reported counts (its "errors" may come from starting inside a quoted field). Line
   numbers become the file's by adding the lines of the header and the chunks before.
   Errors are reported as the single-Lambda path reports them: the first structural error
   stops; value errors are gathered, in file order, up to ``MAX_REPORTED_ERRORS``.
4. **Assemble** (``assembly_steps``): the chunks' outputs become one object by a multipart
   upload whose parts are copied by S3 (UploadPartCopy) where they are big enough, and
   joined in a bounded buffer where they are not (every part but the last must be at
   least 5 MiB).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import IO, Any

from msgspec import Struct, field

from ingest_pipeline.errors import (
    DataError,
    ValueTypeError,
    error_type_named,
)
from ingest_pipeline.logic.contracts import Input, InputFormat
from ingest_pipeline.logic.summary import Summary
from ingest_pipeline.logic.transform import MAX_REPORTED_ERRORS, UTF8_BOM, value_error

MIN_PART_BYTES = 5 * 1024 * 1024  # S3: every part of a multipart upload but the last
MAX_PARTS = 10_000  # S3: parts of one multipart upload
PROBE_RECORDS = 8  # records a cut's candidate start must parse into, to be chosen
MAX_ROUNDS = 3  # plans of one object (a realigned plan is a new round)


class Chunk(Struct, frozen=True):
    """Records that start in ``[start, stop)`` (byte offsets in the object); the last
    chunk's ``stop`` is the object's size. With ``key``: offsets in the object's UTF-8
    text, whose bytes ``[start, stop)`` are the piece ``key`` (``logic/pieces.py``)."""

    index: int
    start: int
    stop: int
    key: str = ""

    def to_item(self) -> dict[str, int | str]:
        item: dict[str, int | str] = {"index": self.index, "start": self.start, "stop": self.stop}
        if self.key:
            item["key"] = self.key
        return item


class Dialect(Struct, frozen=True):
    """What decides where records start: the contract's ``input`` (``Dialect.of``)."""

    delimiter: str = ","
    quote: str = '"'
    header: bool = True
    jsonl: bool = False  # JSON Lines: every line is a record

    @classmethod
    def of(cls, spec: Input) -> Dialect:
        if spec.format is InputFormat.JSONL:
            return cls(header=False, jsonl=True)
        return cls(spec.delimiter, spec.quote, spec.header)

    def reader(self, lines: Iterable[str]) -> Any:
        return csv.reader(lines, strict=True, delimiter=self.delimiter, quotechar=self.quote)


CSV = Dialect()  # the default: comma, double quote, a header


def header_end(prefix: bytes, *, at_eof: bool, dialect: Dialect = CSV) -> int | None:
    """The offset just after the header record (blank lines and a BOM before it included)
    in the object's first bytes ``prefix``; None when they hold no complete, readable
    header (the conversion of the prefix then raises the single-Lambda path's error).
    Without a header (``header: false``, JSON Lines): the BOM's length, if any."""
    if not dialect.header:
        return len(UTF8_BOM) if prefix.startswith(UTF8_BOM) else 0
    consumed = 0

    def lines() -> Iterable[str]:
        nonlocal consumed
        data = prefix.removeprefix(b"\xef\xbb\xbf")
        consumed = len(prefix) - len(data)
        position = 0
        while position < len(data):
            newline = data.find(b"\n", position)
            if newline == -1:
                if not at_eof:
                    return
                newline = len(data) - 1
            raw = data[position : newline + 1]
            position = newline + 1
            consumed += len(raw)
            yield raw.decode("utf-8")

    try:
        for record in dialect.reader(lines()):
            if record and record != [""]:
                return consumed
    except (csv.Error, UnicodeDecodeError):
        return None
    return None


def nominal_cuts(size: int, header_end: int, chunk_bytes: int) -> list[int]:
    """Where the data after the header would be cut every ``chunk_bytes`` (not yet moved
    to record starts); none for data shorter than two chunks' worth."""
    if chunk_bytes <= 0:
        raise ValueError("chunk_bytes must be positive")
    return list(range(header_end + chunk_bytes, size, chunk_bytes))


def line_start_after(window: bytes, cut: int, width: int, dialect: Dialect = CSV) -> int | None:
    """The offset in ``window`` of the line start at or after ``cut`` where a chunk should
    begin: the first one whose next records (up to ``PROBE_RECORDS``, within the window)
    parse as ``width``-column records; else the first line start (merging checks it). None
    when the window holds no line start at or after ``cut``. In JSON Lines every line start
    is a record start (a JSON text holds no raw line break)."""
    if dialect.jsonl:
        newline = window.find(b"\n", max(cut - 1, 0))
        return None if newline == -1 else newline + 1
    first: int | None = None
    newline = window.find(b"\n", max(cut - 1, 0))
    while newline != -1:
        candidate = newline + 1
        if candidate > len(window):
            break
        if first is None:
            first = candidate
        if _parses_as_records(window[candidate:], width, dialect):
            return candidate
        newline = window.find(b"\n", candidate)
    return first


def _parses_as_records(data: bytes, width: int, dialect: Dialect) -> bool:
    complete = data[: data.rfind(b"\n") + 1]
    if not complete:
        return False
    text = complete.decode("utf-8", errors="replace")
    parsed = 0
    try:
        for record in dialect.reader(text.splitlines(keepends=True)):
            if not record or record == [""]:
                continue
            if len(record) != width:
                return False
            parsed += 1
            if parsed >= PROBE_RECORDS:
                return True
    except csv.Error:
        return parsed > 0  # the window ended inside a record after good ones
    return parsed > 0


def plan_chunks(size: int, header_end: int, starts: Iterable[int]) -> list[Chunk]:
    """Chunks from the record starts chosen for the cuts (duplicates and starts outside
    the data dropped: a cut whose window had no line start merges into the chunk before).
    An object with nothing after its header has no chunks."""
    if header_end >= size:
        return []
    bounds = sorted({s for s in starts if header_end < s < size})
    edges = [header_end, *bounds, size]
    return [Chunk(i, edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


# --- converting one chunk ----------------------------------------------------------------


class _Joined(io.RawIOBase):
    """The header's bytes, then the chunk's (a stream of the object from the chunk's start)."""

    def __init__(self, header: bytes, body: IO[bytes]) -> None:
        self._header = memoryview(header)
        self._body = body

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._header:
            n = min(len(buffer), len(self._header))
            buffer[:n] = self._header[:n]
            self._header = self._header[n:]
            return n
        data = self._body.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def chunk_stream(header: bytes, body: IO[bytes], buffer_size: int = 256 * 1024) -> IO[bytes]:
    """What a chunk converts: the object's header (its BOM too), then the chunk's bytes, so
    the contract's checks and the transform are the single-Lambda path's own."""
    return io.BufferedReader(_Joined(header, body), buffer_size=buffer_size)


def stop_at(chunk: Chunk, header: bytes) -> int:
    """``chunk.stop`` in the chunk stream's offsets (``logic.transform.convert``'s ``stop_at``)."""
    return len(header) + chunk.stop - chunk.start


def chunk_report(
    chunk: Chunk,
    header: bytes,
    summary: Summary,
    *,
    part_key: str | None,
    error: DataError | None = None,
    keep_empty: bool = False,
) -> ChunkReport:
    """The report of a chunk's conversion: where its last record ended, how many lines it
    read; or its DataError, line numbers counted from the chunk's first line. A chunk
    without rows names no output unless ``keep_empty`` (a Parquet part of no row still
    holds the schema)."""
    header_lines = header.count(b"\n")
    if error is not None:
        return ChunkReport(
            index=chunk.index,
            start=chunk.start,
            stop=chunk.stop,
            end=_end_after_values(chunk, header, summary, error),
            lines=max(summary.lines - header_lines, 0),
            error=_relative(error, header_lines),
        )
    return ChunkReport(
        index=chunk.index,
        start=chunk.start,
        stop=chunk.stop,
        end=chunk.start + summary.bytes_in - len(header),
        lines=summary.lines - header_lines,
        rows=summary.rows,
        bytes_out=summary.bytes_out,
        sha256=summary.sha256,
        part_key=part_key if summary.rows or keep_empty else None,
    )


def _end_after_values(
    chunk: Chunk, header: bytes, summary: Summary, error: DataError
) -> int | None:
    """A chunk with fewer than ``MAX_REPORTED_ERRORS`` bad values read to its end (the
    conversion raised after it): that end still tells where the next chunk starts."""
    if (
        isinstance(error, ValueTypeError)
        and summary.lines
        and len(error.details.get("errors", [])) < MAX_REPORTED_ERRORS
    ):
        return chunk.start + summary.bytes_in - len(header)
    return None


def _relative(error: DataError, header_lines: int) -> dict[str, Any]:
    out = error.to_dict()
    if "line" in out:
        out["line"] = int(out["line"]) - header_lines
    details = out.get("details")
    if isinstance(details, dict) and "errors" in details:
        out["details"] = {
            **details,
            "errors": [
                {**problem, "line": int(problem["line"]) - header_lines}
                for problem in details["errors"]
            ],
        }
    return out


# --- merging the chunks' reports ---------------------------------------------------------


class ChunkReport(Struct, frozen=True):
    """What one chunk's conversion reported (``handlers/chunk.py`` builds it)."""

    index: int
    start: int
    stop: int
    end: int | None  # where its last record ended; None when it stopped at an error
    lines: int  # physical lines it read (its line numbers count from 1)
    rows: int = 0
    bytes_out: int = 0
    sha256: str = ""
    part_key: str | None = None  # its JSON Lines (None when it had an error or no rows)
    error: dict[str, Any] | None = None  # a DataError's to_dict(), lines its own

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunkReport:
        return cls(
            index=int(data["index"]),
            start=int(data["start"]),
            stop=int(data["stop"]),
            end=None if data.get("end") is None else int(data["end"]),
            lines=int(data.get("lines", 0)),
            rows=int(data.get("rows", 0)),
            bytes_out=int(data.get("bytesOut", 0)),
            sha256=str(data.get("sha256", "")),
            part_key=data.get("partKey") or None,
            error=data.get("error") or None,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "start": self.start,
            "stop": self.stop,
            "end": self.end,
            "lines": self.lines,
            "rows": self.rows,
            "bytesOut": self.bytes_out,
            "sha256": self.sha256,
            "partKey": self.part_key,
            "error": self.error,
        }


class Realign(Struct, frozen=True):
    """Chunk ``index`` did not start where the chunk before it ended: plan again, with
    ``chunks`` (guessed starts after it), or for the last round ``tail``: the rest of the
    object from that proven record start as one chunk (one ordered pass, which cannot be
    misaligned)."""

    index: int
    chunks: list[Chunk]
    tail: list[Chunk] = field(default_factory=list)


class Merged(Struct, frozen=True):
    """Every chunk started where the one before ended, and none had bad data."""

    rows: int
    bytes_out: int
    parts: list[ChunkReport] = field(default_factory=list)  # with rows, in order
    empty: ChunkReport | None = None  # the first output of no row (a Parquet schema)


def merge_chunks(
    plan: Sequence[Chunk], reports: Iterable[ChunkReport], header_lines: int
) -> Merged | Realign:
    """Check the chunks' alignment and merge their reports in file order.

    Raises the DataError the single-Lambda path would raise for the whole object, its line
    numbers the file's. Returns ``Realign`` with the corrected plan when a chunk started
    inside a record; ``Merged`` otherwise.
    """
    by_index = {report.index: report for report in reports}
    missing = [chunk.index for chunk in plan if chunk.index not in by_index]
    if missing:
        raise ValueError(f"no report for chunk(s) {missing[:10]}")
    problems: list[dict[str, Any]] = []
    lines_before = header_lines
    expected = plan[0].start if plan else 0
    parts: list[ChunkReport] = []
    empty: ChunkReport | None = None
    rows = bytes_out = 0
    for position, chunk in enumerate(plan):
        report = by_index[chunk.index]
        if (report.start, report.stop) != (chunk.start, chunk.stop):
            raise ValueError(f"chunk {chunk.index} reports another range than planned")
        if report.start != expected:
            tail = [*plan[:position], Chunk(chunk.index, expected, plan[-1].stop)]
            return Realign(chunk.index, _realigned(plan, position, expected), tail)
        if report.error is not None:
            error = _absolute(report.error, lines_before, rows)
            if "errors" not in error.details and isinstance(error, ValueTypeError):
                # The Parquet writer's (a row that cannot be written): after the bad values
                # of the chunks before, as the single path converts before it writes.
                raise value_error(problems) if problems else error
            if not isinstance(error, ValueTypeError):
                # A structural error stops the conversion, whatever bad values came before
                # it (as on the single-Lambda path).
                raise error
            problems.extend(error.details.get("errors", []))
            if len(problems) >= MAX_REPORTED_ERRORS or report.end is None:
                raise value_error(problems)
        if report.end is None:
            raise ValueError(f"chunk {chunk.index} reports no end and no error")
        if report.rows and report.part_key is not None:
            parts.append(report)
        elif report.part_key is not None and empty is None:
            empty = report
        rows += report.rows
        bytes_out += report.bytes_out
        lines_before += report.lines
        expected = report.end
    if problems:
        raise value_error(problems)
    return Merged(rows=rows, bytes_out=bytes_out, parts=parts, empty=empty)


def _realigned(plan: Sequence[Chunk], position: int, start: int) -> list[Chunk]:
    """The plan with chunk ``position`` starting at ``start`` (where the last record of the
    chunk before ended); the chunks after it keep their guessed starts, but for those that
    record swallowed whole, which are dropped."""
    starts = [c.start for c in plan[:position]] + [start]
    starts += [c.start for c in plan[position + 1 :] if c.start > start]
    size = plan[-1].stop
    starts = [s for s in starts if s < size] or [plan[0].start]
    return [
        Chunk(i, starts[i], starts[i + 1] if i + 1 < len(starts) else size)
        for i in range(len(starts))
    ]


def _absolute(error: dict[str, Any], lines_before: int, rows_before: int = 0) -> DataError:
    """A chunk's DataError (its ``to_dict()``) rebuilt with the file's line numbers (and
    the Parquet writer's row numbers counted from the file's first row)."""
    named = error_type_named(str(error.get("errorType")))
    cls = named if named is not None and issubclass(named, DataError) else DataError
    details = dict(error.get("details") or {})
    message = str(error.get("message", ""))
    if isinstance(details.get("row"), int) and rows_before:
        row = details["row"]
        details["row"] = row + rows_before
        message = message.replace(f"row {row}", f"row {row + rows_before}", 1)
    if "errors" in details:
        details["errors"] = [
            {**problem, "line": int(problem["line"]) + lines_before}
            for problem in details["errors"]
        ]
    line = error.get("line")
    return cls(message, line=None if line is None else int(line) + lines_before, **details)


# --- assembling the output ---------------------------------------------------------------


class Piece(Struct, frozen=True):
    """Bytes ``[first, last]`` (inclusive, as HTTP ranges) of the object ``key``."""

    key: str
    first: int
    last: int

    @property
    def size(self) -> int:
        return self.last - self.first + 1


class CopyPart(Struct, frozen=True):
    """A part S3 copies from one piece (UploadPartCopy)."""

    piece: Piece


class UploadPart(Struct, frozen=True):
    """A part uploaded from pieces read into memory (at most ``MIN_PART_BYTES`` + the
    pieces of one small part)."""

    pieces: tuple[Piece, ...]

    @property
    def size(self) -> int:
        return sum(piece.size for piece in self.pieces)


def assembly_steps(
    parts: Iterable[tuple[str, int]], min_part: int = MIN_PART_BYTES
) -> list[CopyPart | UploadPart]:
    """The parts of one multipart upload that joins the objects ``parts`` ((key, size), in
    order): each at least ``min_part`` bytes but the last. A source big enough is copied by
    S3 (what is left of it once a pending small part was filled up from its start); small
    sources are joined in memory."""
    steps: list[CopyPart | UploadPart] = []
    pending: list[Piece] = []
    pending_size = 0
    for key, size in parts:
        if size <= 0:
            continue
        position = 0
        if pending:
            take = min(size, min_part - pending_size)
            pending.append(Piece(key, 0, take - 1))
            pending_size += take
            position = take
            if pending_size >= min_part:
                steps.append(UploadPart(tuple(pending)))
                pending, pending_size = [], 0
        left = size - position
        if left == 0:
            continue
        if left >= min_part:
            steps.append(CopyPart(Piece(key, position, size - 1)))
        else:
            pending.append(Piece(key, position, size - 1))
            pending_size += left
    if pending:
        steps.append(UploadPart(tuple(pending)))
    if len(steps) > MAX_PARTS:
        raise ValueError(f"{len(steps)} parts: more than S3's {MAX_PARTS} per upload")
    return steps
