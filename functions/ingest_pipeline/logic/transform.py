"""Streaming CSV -> JSON Lines conversion, validated against a dataset contract.

``convert`` is every conversion's entry point: the contract's ``input`` may also declare
gzip, another encoding, another CSV dialect, no header line, or JSON Lines;
``logic/formats.py`` makes any of them UTF-8 bytes as they are read, and JSON Lines rows
are made by ``logic/jsonl.py``. What follows is about the CSV converter, which every plain
UTF-8 CSV file still reaches unchanged.

Memory stays bounded whatever the file size: the source is read in blocks of
``READ_BLOCK_BYTES``, cut into physical lines (each capped at ``max_line_bytes``), records
are converted in batches of at most ``BATCH_RECORDS`` (from at most two blocks), and output
lines are yielded one by one (one chunk per record). Errors carry the physical line number
where they were found.

Speed (issue 12; ``scripts/bench_transform.py`` measures it): the work per record is done
by C code wherever Python allows. A block is decoded and split into lines at once; the
``csv`` module parses them; a batch of records is turned into columns, and each column
into JSON texts by a converter chosen once per column (``logic/_fastpath.py``: ``map`` over
C functions, a regular expression over the whole column, a memo of the values already
seen); the rows are then one ``%`` format each of a template made from the contract. A
record the fast path is not sure about (an empty required value, a bad value, an unusual
spelling, a blank line, a wrong number of columns) goes through the original per-record
code instead, in order, which builds its row with ``json.dumps`` and reports its problems
as before. Output and errors (type, code, line, message, details) are byte-identical to
the original code's: ``tests/unit/test_transform_equivalence.py`` runs both.

Small batches keep the garbage collector idle: a batch's records are freed before enough
containers pile up to trigger a collection.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from operator import call
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
from ingest_pipeline.logic import formats, jsonl, processing
from ingest_pipeline.logic._fastpath import RowFormat, row_format
from ingest_pipeline.logic.contracts import Contract, InputFormat, convert_row
from ingest_pipeline.logic.summary import Summary

UTF8_BOM = b"\xef\xbb\xbf"
DEFAULT_MAX_LINE_BYTES = 1024 * 1024
MAX_REPORTED_ERRORS = 10
READ_BLOCK_BYTES = 256 * 1024  # read from the source at a time (dal.s3's buffer size)
BATCH_RECORDS = 256  # records converted together, at most (few enough for the GC to stay idle)


class _LineSource:
    """Physical lines of a binary stream (split on ``\\n`` only, which each keeps), decoded
    as UTF-8, each at most ``limit`` bytes without its ``\\n``; a UTF-8 BOM before the
    first line is dropped. ``lines`` is an iterator in C over lists of lines made a block
    at a time (``blocks`` counts them): a bad line raises its error only once the lines
    before it were consumed."""

    def __init__(
        self,
        source: IO[bytes],
        summary: Summary,
        limit: int,
        stop_at: int | None = None,
        at_record_end: Callable[[], bool] | None = None,
    ) -> None:
        self._source = source
        self._summary = summary
        self._limit = limit
        self._stop_at = stop_at
        self._at_record_end = at_record_end
        self.continued = 0  # bytes read after stop_at (whole lines), to finish a record
        self.blocks = 0
        self.lines: Iterator[str] = chain.from_iterable(self._blocks())

    def _blocks(self) -> Iterator[list[str]]:
        limit = self._limit
        number = 0  # lines handed out so far
        pending = b""  # the start of a line whose end was not read yet
        left = self._stop_at  # bytes before the stop (None: read to the end)
        while True:
            want = READ_BLOCK_BYTES if left is None else min(READ_BLOCK_BYTES, left)
            block = self._source.read(want) if want else b""
            if block:
                if left is not None:
                    left -= len(block)
                self._summary.bytes_in += len(block)
                data = pending + block if pending else block
                cut = data.rfind(b"\n") + 1
                complete, pending = data[:cut], data[cut:]
            else:
                complete, pending = pending, b""
                if not complete:
                    break
            if complete:
                lines, error = _decode_lines(complete, number, limit)
                if lines:
                    self.blocks += 1
                    yield lines
                    number += len(lines)
                if error is not None:
                    raise error
            if len(pending) > limit:  # already longer than a line may be, whatever follows
                raise LineTooLongError(f"line is longer than {limit} bytes", line=number + 1)
        if left == 0:
            yield from self._continuation(number)

    def _continuation(self, number: int) -> Iterator[list[str]]:
        """After ``stop_at``: the lines that finish the record in progress, one at a time,
        until the reader is at a record's end (``at_record_end``) or the source ends."""
        limit = self._limit
        at_record_end = self._at_record_end or (lambda: True)
        while not at_record_end():
            raw = self._source.readline(limit + 2)
            if not raw:
                return
            number += 1
            if len(raw.removesuffix(b"\n")) > limit:
                raise LineTooLongError(f"line is longer than {limit} bytes", line=number)
            self._summary.bytes_in += len(raw)
            self.continued += len(raw)
            try:
                yield [raw.decode("utf-8")]
            except UnicodeDecodeError as exc:
                raise EncodingError(
                    f"not valid UTF-8 at byte {exc.start} of the line "
                    f"({raw[exc.start : exc.start + 4]!r})",
                    line=number,
                ) from None


def _decode_lines(data: bytes, number: int, limit: int) -> tuple[list[str], DataError | None]:
    """The lines of ``data`` (whole lines; only the file's last one may lack its ``\\n``)
    that come after ``number`` lines, and the error of the first bad one, if any (the lines
    before it are returned)."""
    error: DataError | None = None
    if len(data) > limit:
        lengths = [len(line) for line in data.split(b"\n")]
        if max(lengths) > limit:
            index = next(i for i, n in enumerate(lengths) if n > limit)
            error = LineTooLongError(f"line is longer than {limit} bytes", line=number + index + 1)
            data = data[: sum(lengths[:index]) + index]  # the lines before it, with their \n
    if number == 0:
        data = data.removeprefix(UTF8_BOM)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _decode_each(data, number)
    if not text:  # nothing before a bad line, or the file is a BOM
        return ([""] if error is None else []), error
    return _split_lines(text), error


# What str.splitlines also splits on, besides \n, \r\n and \r.
_OTHER_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _split_lines(text: str) -> list[str]:
    """``text`` split after each ``\\n`` only (each line keeps it; the last may lack it)."""
    if not any(brk in text for brk in _OTHER_BREAKS) and (
        "\r" not in text or text.count("\r") == text.count("\r\n")
    ):
        return text.splitlines(keepends=True)  # the same lines, twice as fast
    parts = text.split("\n")
    last = parts.pop()  # "" after a final \n; else the file's last line, without one
    lines = [part + "\n" for part in parts]
    if last:
        lines.append(last)
    return lines


def _decode_each(data: bytes, number: int) -> tuple[list[str], DataError]:
    """Line by line, to find where ``data`` is not UTF-8 (that line's error, as the line
    sees it)."""
    lines: list[str] = []
    for raw in _split_lf(data):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            return lines, EncodingError(
                f"not valid UTF-8 at byte {exc.start} of the line "
                f"({raw[exc.start : exc.start + 4]!r})",
                line=number + len(lines) + 1,
            )
    raise AssertionError("unreachable: the block did not decode")  # pragma: no cover


def _split_lf(data: bytes) -> list[bytes]:
    """``data`` split after each ``\\n`` only (bytes.splitlines also splits on ``\\r``)."""
    parts = data.split(b"\n")
    last = parts.pop()
    return [part + b"\n" for part in parts] + ([last] if last else [])


def convert(
    source: IO[bytes],
    contract: Contract,
    summary: Summary,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    stop_at: int | None = None,
) -> Iterator[bytes]:
    """Yield one UTF-8 JSON line per record of ``source``, read as the contract's ``input``
    says (CSV or JSON Lines, compressed or not, in any encoding); raise a DataError at the
    first bad line. Every conversion goes through here.

    Value errors are collected (up to ``MAX_REPORTED_ERRORS``) before raising, so a data
    owner sees several problems at once; structural errors stop at once.

    ``logic/formats.py`` turns the object into UTF-8 bytes (decompressed, transcoded) as it
    is read, so the CSV converter below and the JSON Lines one (``_convert_jsonl``) only
    ever read UTF-8. Nothing is read before the first line is asked for.

    ``stop_at`` (a line start, in bytes from the start of ``source``) converts only the
    records that start before it: the source is read past it only to finish a record that
    started before (the large-file path's chunks, ``logic/chunks.py``). ``summary.lines``
    then tells how many lines were read, ``summary.bytes_in`` how many bytes. ``source`` is
    then already UTF-8 and uncompressed (the raw object when ``formats.split_mode`` says
    BYTE_RANGE, else a piece SplitObject wrote), in the contract's CSV dialect or JSON
    Lines; a chunk without a record is not an empty file (the whole object may not be).
    """
    lines = _converted(source, contract, summary, max_line_bytes=max_line_bytes, stop_at=stop_at)
    if contract.processor is None:
        return lines
    return processing.processed(lines, contract.processor, contract, summary)


def _converted(
    source: IO[bytes],
    contract: Contract,
    summary: Summary,
    *,
    max_line_bytes: int,
    stop_at: int | None,
) -> Iterator[bytes]:
    """``convert`` without the contract's processor."""
    spec = contract.input
    if stop_at is not None:  # a chunk: UTF-8 already
        if spec.format is InputFormat.JSONL:
            return _convert_jsonl(source, contract, summary, max_line_bytes, stop_at=stop_at)
        return _convert_csv(
            source,
            contract,
            summary,
            max_line_bytes=max_line_bytes,
            stop_at=stop_at,
            delimiter=spec.delimiter,
            quote=spec.quote,
            header=spec.header,
        )
    stream = formats.utf8_stream(source, spec)
    if spec.format is InputFormat.JSONL:
        return _convert_jsonl(stream, contract, summary, max_line_bytes)
    return _convert_csv(
        stream,
        contract,
        summary,
        max_line_bytes=max_line_bytes,
        delimiter=spec.delimiter,
        quote=spec.quote,
        header=spec.header,
    )


def _convert_csv(
    source: IO[bytes],
    contract: Contract,
    summary: Summary,
    *,
    max_line_bytes: int,
    stop_at: int | None = None,
    delimiter: str = ",",
    quote: str = '"',
    header: bool = True,
) -> Iterator[bytes]:
    """``convert`` for UTF-8 CSV (``delimiter`` and ``quote``: ``csv.reader``'s).
    Without a header line (``header=False``) the columns are the contract's, by position,
    and a file without a record is empty."""
    csv.field_size_limit(max_line_bytes)
    ends = [0]  # the line the last record ended on: between records when it is the reader's
    source_lines = _LineSource(
        source,
        summary,
        max_line_bytes,
        stop_at=stop_at,
        at_record_end=lambda: ends[0] == reader.line_num,
    )
    reader: Any = csv.reader(source_lines.lines, strict=True, delimiter=delimiter, quotechar=quote)
    try:
        columns = _read_header(reader, contract) if header else contract.header
    except csv.Error as exc:
        raise _csv_error(exc, reader.line_num, max_line_bytes) from exc
    ends[0] = reader.line_num
    rows = _Rows(row_format(contract), len(columns))
    digest = summary._digest.update
    while True:
        start = reader.line_num
        batch, error = _read_batch(reader, source_lines, max_line_bytes, ends)
        text, stop = rows.convert(batch, start, reader.line_num)
        if text:
            out = text.encode()
            lines = out.splitlines(keepends=True)  # JSON escapes \r and \n: one per row
            summary.rows += len(lines)
            summary.bytes_out += len(out)
            digest(out)
            yield from lines
        if stop is not None:
            raise stop
        if error is not None:
            raise error
        if not batch:
            break
    summary.lines = reader.line_num
    if rows.problems:
        raise value_error(rows.problems)
    if not header and not summary.rows and stop_at is None:
        raise _no_records(summary.lines)
    summary.sha256 = summary._digest.hexdigest()


def _convert_jsonl(
    source: IO[bytes],
    contract: Contract,
    summary: Summary,
    max_line_bytes: int,
    *,
    stop_at: int | None = None,
) -> Iterator[bytes]:
    """``convert`` for UTF-8 JSON Lines: the lines read as CSV's are (``_LineSource``), each
    made a row by ``logic/jsonl.py``, problems collected as CSV's are."""
    problems: list[dict[str, Any]] = []
    digest = summary._digest.update
    number = 0
    lines = _LineSource(source, summary, max_line_bytes, stop_at=stop_at).lines
    for number, line in enumerate(lines, 1):
        if jsonl.is_blank(line):
            continue
        text = jsonl.row(line, number, contract, problems)
        if text is None:
            if len(problems) >= MAX_REPORTED_ERRORS:
                raise value_error(problems)
            continue
        if problems:
            continue  # valid, but nothing is written after a bad value
        out = text.encode()
        summary.rows += 1
        summary.bytes_out += len(out)
        digest(out)
        yield out
    summary.lines = number
    if problems:
        raise value_error(problems)
    if not summary.rows and stop_at is None:
        raise _no_records(number)
    summary.sha256 = summary._digest.hexdigest()


def _no_records(lines: int) -> EmptyFileError:
    """A file without a header has nothing at all when it has no record."""
    if lines == 0:
        return EmptyFileError("the file is empty (0 bytes)")
    return EmptyFileError("the file has no records (only blank lines)", line=lines)


def _read_batch(
    reader: Any, source_lines: _LineSource, limit: int, ends: list[int]
) -> tuple[list[list[str]], DataError | None]:
    """The next records (at most ``BATCH_RECORDS``, from at most two blocks of the source:
    memory stays bounded), and the error that stopped reading them, if any; ``ends[0]``:
    the line the last one ended on."""
    batch: list[list[str]] = []
    append = batch.append
    blocks = source_lines.blocks
    try:
        for record in islice(reader, BATCH_RECORDS):
            append(record)
            ends[0] = reader.line_num
            if source_lines.blocks != blocks:
                break
    except DataError as exc:
        return batch, exc
    except csv.Error as exc:
        return batch, _csv_error(exc, reader.line_num, limit)
    return batch, None


def _csv_error(exc: csv.Error, line: int, limit: int) -> DataError:
    error: DataError
    if "field larger than field limit" in str(exc):
        error = LineTooLongError(f"a field is longer than {limit} bytes", line=line)
    else:
        error = MalformedCsvError(str(exc), line=line)
    error.__cause__ = exc
    return error


class _Rows:
    """Records to JSON lines, a batch at a time; value problems are collected across
    batches (``problems``) as the original per-value code did."""

    def __init__(self, fast: RowFormat, width: int) -> None:
        self._fast = fast
        self._width = width
        self.problems: list[dict[str, Any]] = []

    def convert(self, batch: list[list[str]], start: int, end: int) -> tuple[str, Exception | None]:
        """The JSON lines of a batch of records (read from the lines after ``start`` up
        to ``end``), as one text, and the error to raise after them, if any."""
        fast, width = self._fast, self._width
        if (
            batch
            and all(map(width.__eq__, map(len, batch)))
            and (width > 1 or [""] not in batch)  # no blank line
        ):
            texts = [
                bulk(column)
                for bulk, column in zip(fast.bulk, zip(*batch, strict=True), strict=True)
            ]
            if not any(None in column for column in texts):
                if self.problems:
                    return "", None  # valid, but nothing is written after a bad value
                return fast.rows(texts), None
            return self._one_by_one(
                batch, _line_numbers(batch, start, end), zip(*texts, strict=True)
            )
        return self._one_by_one(batch, _line_numbers(batch, start, end), None)

    def _one_by_one(
        self,
        batch: list[list[str]],
        numbers: Iterable[int],
        converted: Iterator[tuple[str | None, ...]] | None,
    ) -> tuple[str, Exception | None]:
        fast, width, problems = self._fast, self._width, self.problems
        template = fast.template
        outs: list[str] = []
        for record, line in zip(batch, numbers, strict=True):
            if converted is not None:
                row = next(converted)
            else:
                if not record or record == [""]:
                    continue  # blank line
                if len(record) != width:
                    return "".join(outs), ColumnCountError(
                        f"expected {width} columns, found {len(record)}",
                        line=line,
                        expected=width,
                        found=len(record),
                    )
                row = tuple(map(call, fast.one, record))
            if None in row:  # not sure: the precise code decides (and reports)
                try:
                    text = _check_row(fast, record, line, problems)
                except Exception as exc:  # a converter's bug: raised after the lines before
                    return "".join(outs), exc
                if text is None:
                    if len(problems) >= MAX_REPORTED_ERRORS:
                        return "".join(outs), value_error(problems)
                    continue
            else:
                text = template % row
            if not problems:
                outs.append(text)
        return "".join(outs), None


def _line_numbers(batch: list[list[str]], start: int, end: int) -> Iterable[int]:
    """The line each record of ``batch`` ends on: a record takes one line, and one more
    per newline in its (quoted) fields."""
    if end - start == len(batch):
        return range(start + 1, end + 1)
    numbers = []
    line = start
    for record in batch:
        line += 1 + sum(value.count("\n") for value in record)
        numbers.append(line)
    return numbers


def value_error(problems: list[dict[str, Any]]) -> ValueTypeError:
    first = problems[0]
    return ValueTypeError(
        f"{len(problems)}{'+' if len(problems) >= MAX_REPORTED_ERRORS else ''} bad "
        f"value(s); first: column {first['column']!r}: {first['error']}",
        line=first["line"],
        errors=problems,
    )


def _check_row(
    fast: RowFormat, record: list[str], line: int, problems: list[dict[str, Any]]
) -> str | None:
    """The precise (original) conversion of one record: its JSON line, or None after
    appending its problems to ``problems``."""
    return convert_row(fast.columns, record, line, problems)


def _read_header(reader: Any, contract: Contract) -> list[str]:
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
                line=reader.line_num,
                missing=missing,
                unexpected=unexpected,
            )
        return header
    if reader.line_num == 0:
        raise EmptyFileError("the file is empty (0 bytes)")
    raise EmptyFileError("the file has no header line (only blank lines)", line=reader.line_num)


__all__ = ["DataError", "Summary", "convert", "value_error"]
