"""The large-file path's single ordered pass: an object that cannot be cut at byte offsets
(gzip, which cannot be read from an offset; an encoding other than UTF-8, whose bytes are
not the text the converter reads; ``logic/formats.py`` ``split_mode``) is read once, in
order, as the UTF-8 text the converter would read, and written as *pieces* of whole
records: each piece ends where a record ends, found by the contract's own parser, so every
cut is provably a record start and no plan is ever realigned. Each piece is then converted
by its own chunk, as a byte range of the object is (``logic/chunks.py``).

Pure: ``cut`` reads a stream and yields bytes; ``handlers/split.py`` uploads them.

Where a record ends:

* JSON Lines: at every line end (a JSON text holds no raw line break).
* CSV (any delimiter and quote, header or not): after every record ``csv.reader`` returns
  with the contract's dialect, as the converter parses it (it never reads past a record's
  last line). Records are consumed ``_BATCH`` at a time in C; a piece is cut after the
  first batch that makes it ``piece_bytes`` or more.

Bad data is not judged here: when the parser stops (a stray quote, an unterminated quoted
field) or a line is longer than the converter allows, the pass stops and the last piece
ends with that line, so its chunk raises the single path's error on the file's line.
Invalid UTF-8 is carried through unchanged (``surrogateescape``) for the chunk to report.
"""

from __future__ import annotations

import csv
from collections import deque
from collections.abc import Callable, Iterator
from itertools import chain, islice
from typing import Protocol

from ingest_pipeline.logic.chunks import Dialect


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


READ_BYTES = 1024 * 1024  # read from the stream at a time
_BATCH = 1024  # CSV records consumed between two looks at the piece's size


def cut(
    stream: Readable,
    dialect: Dialect,
    *,
    piece_bytes: int,
    max_line_bytes: int,
    on_block: Callable[[], None] | None = None,
) -> Iterator[bytes]:
    """The pieces of ``stream`` (UTF-8 text after the header), each of whole records and
    at least ``piece_bytes`` long but the last. ``on_block`` is called after every block
    read (the caller's time budget)."""
    if piece_bytes <= 0:
        raise ValueError("piece_bytes must be positive")
    if dialect.jsonl:
        return _cut_lines(stream, piece_bytes, on_block)
    return _cut_records(stream, dialect, piece_bytes, max_line_bytes, on_block)


def _cut_lines(
    stream: Readable, piece_bytes: int, on_block: Callable[[], None] | None
) -> Iterator[bytes]:
    pending = bytearray()
    while block := stream.read(READ_BYTES):
        if on_block is not None:
            on_block()
        pending += block
        while len(pending) >= piece_bytes:
            newline = pending.find(b"\n", piece_bytes - 1)
            if newline == -1:
                break
            yield bytes(pending[: newline + 1])
            del pending[: newline + 1]
    if pending:
        yield bytes(pending)


class _Lines:
    """The stream's lines (split after ``\\n`` only, as the converter splits them), block
    by block; every line handed to the parser is kept in ``kept`` until it is cut off."""

    def __init__(self, stream: Readable, limit: int, on_block: Callable[[], None] | None) -> None:
        self._stream = stream
        self._limit = limit
        self._on_block = on_block
        self.kept: list[str] = []
        self.kept_bytes = 0  # since the last cut (approximately: characters)
        self.fed = 0  # lines handed to the parser
        self.too_long = ""  # the start of a line longer than the limit (the pass stops)

    def blocks(self) -> Iterator[list[str]]:
        pending = b""
        while True:
            block = self._stream.read(READ_BYTES)
            if self._on_block is not None:
                self._on_block()
            data = pending + block if block else pending
            if not data:
                return
            cut = data.rfind(b"\n") + 1 if block else len(data)
            complete, pending = data[:cut], data[cut:]
            if len(pending) > self._limit:  # the converter stops at this line
                self.too_long = pending[: self._limit + 1].decode("utf-8", "surrogateescape")
                pending = b""
            lines = complete.decode("utf-8", "surrogateescape").split("\n")
            last = lines.pop()
            lines = [line + "\n" for line in lines] + ([last] if last else [])
            self.kept.extend(lines)
            self.kept_bytes += len(complete)
            self.fed += len(lines)
            yield lines
            if self.too_long or not block:
                return

    def take(self, count: int) -> bytes:
        """The first ``count`` kept lines, as UTF-8 (the bytes read), no longer kept."""
        taken, self.kept = self.kept[:count], self.kept[count:]
        self.kept_bytes = sum(map(len, self.kept))
        return "".join(taken).encode("utf-8", "surrogateescape")


def _cut_records(
    stream: Readable,
    dialect: Dialect,
    piece_bytes: int,
    max_line_bytes: int,
    on_block: Callable[[], None] | None,
) -> Iterator[bytes]:
    csv.field_size_limit(max_line_bytes)
    source = _Lines(stream, max_line_bytes, on_block)
    reader = dialect.reader(chain.from_iterable(source.blocks()))
    cut_at = 0  # lines of the pieces given out
    while True:
        try:
            before = reader.line_num
            deque(islice(reader, _BATCH), maxlen=0)
        except csv.Error:
            break  # the chunk of the last piece raises it, on its line
        if reader.line_num == before:
            break  # the end of the stream
        if source.kept_bytes >= piece_bytes and reader.line_num > cut_at:
            yield source.take(reader.line_num - cut_at)
            cut_at = reader.line_num
    rest = source.take(len(source.kept)) + source.too_long.encode("utf-8", "surrogateescape")
    if rest:
        yield rest
