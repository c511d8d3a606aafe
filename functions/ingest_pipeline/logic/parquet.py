"""Parquet output: the JSON lines of ``logic/transform.py``'s ``convert`` written as one
Parquet file whose schema comes from the dataset contract (``output.format: parquet``).

Column types (nullable unless the column is ``required``)::

    string   -> string                 decimal  -> decimal128(38, scale)
    integer  -> int64                  date     -> date32
    boolean  -> bool                   datetime -> timestamp("us", tz="UTC")

A datetime without an offset is taken as UTC; one with an offset is converted to UTC.

Decimals are never rounded: a value is written at the column's scale only when that is exact
("12.5" and "12.500" are 12.50 at scale 2), and "12.505" at scale 2 is refused with a
``ValueTypeError`` naming the row and the column, as is a value of more than 38 digits at
that scale, a null in a required column, or a value of the wrong JSON type. The row number
counts the lines given (1 = the first), not the lines of the input file.

pyarrow is not part of the functions' package: it comes from the PyarrowLayer
(layers/pyarrow/Makefile) of the functions that write Parquet, and is imported only when a
file is written, so the functions without the layer import this module for nothing.

Rows are read ``BATCH_ROWS`` at a time by Arrow's JSON reader (C++, with the Arrow types of
the columns), about four times faster than decoding each line in Python. Where Arrow takes
what the rules above refuse, the batch is checked after it: a null in a required column, a
key missing from a line (a null of a nullable column whose key is not on every line), a
decimal of more than 38 digits, an instant outside years 1-9999, invalid UTF-8, a line that
is not one object. Dates are read as strings and converted as below. A batch Arrow refuses
or a check fails on is converted line by line in Python, which names the row and the column
(and writes what Arrow refused but the rules take: ``"1_000"`` as a decimal, ``20261127`` as
a date string). Both give the same values: ``tests/unit/test_parquet_output.py``.

Row groups are sized for scans: up to ``DEFAULT_ROW_GROUP_ROWS`` (1,048,576) rows, tens of
MiB of a typical dataset, so a reader skips or reads a whole row group per request (zstd;
dictionary encoding for string columns only). Memory stays bounded: a row group's batches
are held as Arrow arrays (a few bytes a value) until it is written. When an error is raised
the sink holds the start of a file with no footer: discard it.
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, date, datetime
from decimal import Context, Decimal, InvalidOperation
from typing import IO, Any

import msgspec

from ingest_pipeline.errors import ValueTypeError
from ingest_pipeline.logic.contracts import Column, ColumnType, Contract
from ingest_pipeline.logic.summary import Summary

CONTENT_TYPE = "application/vnd.apache.parquet"
SUFFIX = ".parquet"
DEFAULT_ROW_GROUP_ROWS = 1 << 20
BATCH_ROWS = 65536  # lines read at once
DECIMAL_PRECISION = 38
# datetime.min and datetime.max in microseconds since the epoch (Arrow reads years 0-9999)
_INSTANTS = (-62135596800000000, 253402300799999999)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# JSON numbers with a fraction are read as Decimal (exactly), never as float.
_DECODER = msgspec.json.Decoder(dict[str, Any], float_hook=Decimal)


class _Bad(ValueError):
    """A value that cannot be written to its column (the message says why)."""


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise _Bad("not a JSON string")
    return value


def _integer(value: Any) -> int:
    if type(value) is not int:
        raise _Bad("not a JSON integer")
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise _Bad("out of the 64-bit integer range")
    return value


def _boolean(value: Any) -> bool:
    if type(value) is not bool:
        raise _Bad("not true or false")
    return value


def _date(value: Any) -> date:
    if not isinstance(value, str):
        raise _Bad("not an ISO date string")
    return date.fromisoformat(value)


def _datetime(value: Any) -> datetime:
    if not isinstance(value, str):
        raise _Bad("not an ISO datetime string")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _decimal(scale: int) -> Callable[[Any], Decimal]:
    quantum = Decimal(1).scaleb(-scale)
    # At most 38 digits in all: quantize raises InvalidOperation beyond that.
    context = Context(prec=DECIMAL_PRECISION, traps=[InvalidOperation])

    def convert(value: Any) -> Decimal:
        if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
            raise _Bad("not a decimal number (a JSON string or number)")
        try:
            number = Decimal(value)
        except InvalidOperation:
            raise _Bad(f"not a decimal number: {value!r}") from None
        if not number.is_finite():
            raise _Bad("not a finite decimal number")
        try:
            exact = number.quantize(quantum, context=context)
        except InvalidOperation:
            raise _Bad(
                f"more than {DECIMAL_PRECISION} digits at scale {scale}: {value!r}"
            ) from None
        if exact != number:
            raise _Bad(f"more than {scale} digits after the point: {value!r} (not rounded)")
        return exact

    return convert


def _converter(column: Column) -> Callable[[Any], Any]:
    if column.type is ColumnType.DECIMAL:
        if column.scale is None:  # Contract refuses this for parquet output
            raise ValueError(f"decimal column {column.name!r} has no scale")
        return _decimal(column.scale)
    return {
        ColumnType.STRING: _string,
        ColumnType.INTEGER: _integer,
        ColumnType.BOOLEAN: _boolean,
        ColumnType.DATE: _date,
        ColumnType.DATETIME: _datetime,
    }[column.type]


def arrow_schema(contract: Contract) -> Any:
    """The contract's columns as a ``pyarrow.Schema`` (imports pyarrow)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    types: dict[ColumnType, Any] = {
        ColumnType.STRING: pa.string(),
        ColumnType.INTEGER: pa.int64(),
        ColumnType.BOOLEAN: pa.bool_(),
        ColumnType.DATE: pa.date32(),
        ColumnType.DATETIME: pa.timestamp("us", tz="UTC"),
    }
    return pa.schema(
        [
            pa.field(
                column.name,
                pa.decimal128(DECIMAL_PRECISION, column.scale or 0)
                if column.type is ColumnType.DECIMAL
                else types[column.type],
                nullable=not column.required,
            )
            for column in contract.columns
        ]
    )


class _Sink:
    """``sink`` until a failure, after which what pyarrow writes (the footer it writes when
    closed or collected) is dropped: a failed write leaves a file no reader takes as whole."""

    closed = False

    def __init__(self, sink: IO[bytes]) -> None:
        self._sink = sink
        self.failed = False

    def write(self, data: bytes) -> int:
        return len(data) if self.failed else self._sink.write(data)

    def flush(self) -> None:
        if not self.failed:
            self._sink.flush()


def _arrow_table(lines: list[bytes], contract: Contract, schema: Any) -> Any | None:
    """``lines`` as a ``pyarrow.Table`` of ``schema``, read by Arrow's JSON reader, or None
    where the Python path (``_python_table``) must decide: Arrow refused them or took a
    value the module's rules refuse."""
    import pyarrow as pa
    import pyarrow.json as pj  # type: ignore[import-untyped]

    # One flat object per line (Arrow would read two on a line, or none on a blank one).
    if not all(line[:1] == b"{" and line[-2:] == b"}\n" for line in lines):
        return None
    body = b"".join(lines)
    read = pa.schema(
        [pa.field(f.name, pa.string()) if f.type == pa.date32() else f for f in schema]
    )
    try:
        table = pj.read_json(
            pa.BufferReader(body),
            read_options=pj.ReadOptions(use_threads=False),
            parse_options=pj.ParseOptions(explicit_schema=read, unexpected_field_behavior="error"),
        )
        table.validate(full=True)  # UTF-8, and decimals within 38 digits
    except pa.ArrowException:
        return None
    if table.num_rows != len(lines):
        return None
    arrays = [
        _checked(column, array, body, len(lines))
        for column, array in zip(contract.columns, table.columns, strict=True)
    ]
    if any(array is None for array in arrays):
        return None
    return pa.Table.from_arrays(arrays, schema=schema)


def _checked(column: Column, read: Any, body: bytes, rows: int) -> Any | None:
    """The column Arrow ``read`` from ``body`` (``rows`` lines) as it is written, or None
    where the module's rules refuse a value of it."""
    import pyarrow as pa

    if read.null_count and (
        column.required
        # a missing key reads as null: each line must spell its key once (Arrow refuses a
        # key twice, and a string's quotes are escaped, so no value holds the text)
        or body.count(b"%s:" % msgspec.json.encode(column.name)) != rows
    ):
        return None
    if column.type is ColumnType.DATE:  # read as strings, converted as the rules say
        try:
            return pa.array(
                [None if v is None else _date(v) for v in read.to_pylist()], pa.date32()
            )
        except ValueError:
            return None
    if column.type is ColumnType.DATETIME:  # within the years 1-9999 (Arrow reads year 0)
        low, high = _INSTANTS
        for chunk in read.chunks:
            if chunk.null_count == len(chunk):
                continue
            values = memoryview(chunk.buffers()[1]).cast("q")
            values = values[chunk.offset : chunk.offset + len(chunk)]
            if values and (min(values) < low or max(values) > high):
                return None
    return read


class _Rows:
    """The values of a batch, column by column, checked and converted."""

    def __init__(self, contract: Contract) -> None:
        self.dataset = contract.dataset
        self.plan = [(c.name, _converter(c), c.required) for c in contract.columns]
        self.names = frozenset(c.name for c in contract.columns)
        self.columns: list[list[Any]] = [[] for _ in self.plan]

    def add(self, line: bytes, number: int) -> None:
        """Append the row of ``line`` (row ``number``); ValueTypeError when it cannot be."""
        try:
            record = _DECODER.decode(line)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise ValueTypeError(f"row {number}: not a JSON object: {exc}", row=number) from None
        name = ""
        try:
            for (name, convert, required), values in zip(self.plan, self.columns, strict=True):
                value = record.get(name)
                if value is None:
                    if name not in record:
                        raise _Bad("missing")
                    if required:
                        raise _Bad("null, but the column is required")
                    values.append(None)
                else:
                    values.append(convert(value))
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise ValueTypeError(
                f"row {number}, column {name!r}: {exc}", row=number, column=name
            ) from None
        if len(record) != len(self.plan):
            extra = next(key for key in record if key not in self.names)
            raise ValueTypeError(
                f"row {number}: {extra!r} is not a column of the {self.dataset!r} contract",
                row=number,
            )


def _python_table(lines: list[bytes], first: int, contract: Contract, schema: Any) -> Any:
    """``lines`` (``first``: the first one's row number) as a ``pyarrow.Table`` of
    ``schema``, each value checked and converted in Python; ValueTypeError at the first
    value that cannot be written."""
    import pyarrow as pa

    rows = _Rows(contract)
    for number, line in enumerate(lines, first):
        rows.add(line, number)
    arrays = [
        pa.array(values, type=field.type)
        for values, field in zip(rows.columns, schema, strict=True)
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def parquet_body(
    lines: Iterable[bytes], contract: Contract, summary: Summary, *, spool_bytes: int = 64 << 20
) -> Iterator[bytes]:
    """The Parquet file of ``lines``, in blocks to upload (``dal.s3.upload_stream``): written
    whole first (a Parquet file ends with its footer), in memory up to ``spool_bytes`` and
    on the function's /tmp beyond. ``summary`` then counts the file's bytes and SHA-256. An
    error while writing (bad data) raises before the first block: nothing is uploaded."""
    with tempfile.SpooledTemporaryFile(max_size=spool_bytes) as spool:
        write_parquet(lines, contract, spool)
        spool.seek(0)
        digest = hashlib.sha256()
        summary.bytes_out = 0
        while block := spool.read(1 << 20):
            digest.update(block)
            summary.bytes_out += len(block)
            yield block
        summary.sha256 = digest.hexdigest()


def write_parquet(
    lines: Iterable[bytes],
    contract: Contract,
    sink: IO[bytes],
    *,
    row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
) -> int:
    """Write ``lines`` (one JSON object per line, its keys the contract's columns) to
    ``sink`` as one Parquet file; return the number of rows written.

    ``sink`` needs only ``write`` (it is neither sought nor closed). No line gives a valid
    file of no row. Raises ValueTypeError at the first value that cannot be written as its
    column's type (see the module docstring).
    """
    if row_group_rows < 1:
        raise ValueError(f"row_group_rows must be at least 1, not {row_group_rows}")
    import pyarrow as pa
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    schema = arrow_schema(contract)
    out = _Sink(sink)
    writer = pq.ParquetWriter(
        out,
        schema,
        compression="zstd",  # Arrow's level (1): level 3 made no smaller files (measured)
        use_dictionary=[c.name for c in contract.columns if c.type is ColumnType.STRING] or False,
    )

    tables: list[Any] = []
    held = 0  # rows in ``tables``
    batch: list[bytes] = []
    batch_rows = min(BATCH_ROWS, row_group_rows)

    def convert(first: int) -> None:
        """The batch's table (``first``: its first row's number)."""
        nonlocal held
        table = _arrow_table(batch, contract, schema)
        if table is None:
            table = _python_table(batch, first, contract, schema)
        tables.append(table)
        held += table.num_rows
        batch.clear()

    def flush() -> None:
        nonlocal held
        writer.write_table(pa.concat_tables(tables), row_group_size=row_group_rows)
        tables.clear()
        held = 0

    rows = 0
    try:
        for rows, line in enumerate(lines, 1):
            batch.append(line)
            if len(batch) >= batch_rows:
                convert(rows - len(batch) + 1)
                if held >= row_group_rows:
                    flush()
        if batch:
            convert(rows - len(batch) + 1)
        if tables:
            flush()
    except BaseException:
        out.failed = True
        with contextlib.suppress(Exception):
            writer.close()
        raise
    writer.close()
    return rows
