"""A dataset's files as the UTF-8 bytes the converters read (the contract's ``input``).

The converters (``logic/transform.py``: CSV, and JSON Lines through ``logic/jsonl.py``) read
UTF-8 only. Rather than teach them compression and encodings, which would slow the plain
path every file takes, ``utf8_stream`` puts what a contract declares in front of them, as
streams: gzip is decompressed (``gzip.GzipFile`` over the body: never the whole file in
memory) and any other encoding is transcoded to UTF-8 a block at a time. Nothing is read
before the converter's first read, so the converters raise every error where they did.

The plain case (no gzip, UTF-8) costs one look at the first two bytes: after that the
converter reads the source itself (``_Input`` hands over the source's own ``read``).

The large-file path takes every input (``split_mode``): uncompressed UTF-8 (CSV of any
dialect, with or without a header, and JSON Lines) is cut at byte offsets of the object
itself; gzip and other encodings are read once, in order, by SplitObject, which writes the
UTF-8 text in pieces of whole records (``logic/chunks.py``).
"""

from __future__ import annotations

import codecs
import gzip
import zlib
from collections.abc import Callable
from enum import StrEnum
from typing import IO, Protocol, cast

from ingest_pipeline.errors import CompressionError, EncodingError
from ingest_pipeline.logic.contracts import Compression, Input, InputFormat

GZIP_MAGIC = b"\x1f\x8b"


class SplitMode(StrEnum):
    """How the large-file path cuts an object (``logic/chunks.py``)."""

    BYTE_RANGE = "byte-range"  # the raw object at offsets: uncompressed UTF-8
    STREAM = "stream"  # one ordered pass writes UTF-8 pieces of whole records


def is_utf8(encoding: str) -> bool:
    return codecs.lookup(encoding).name == "utf-8"


def split_mode(spec: Input, *, gzipped: bool) -> SplitMode:
    """Byte ranges of the raw object are records' UTF-8 text only when it is uncompressed
    UTF-8 (any CSV dialect, header or not, or JSON Lines); anything else (gzip cannot be
    read from an offset, another encoding's bytes are not the text the converter reads) is
    decompressed and transcoded in one ordered pass."""
    return SplitMode.STREAM if gzipped or not is_utf8(spec.encoding) else SplitMode.BYTE_RANGE


def is_gzipped(spec: Input, head: bytes) -> bool:
    """Is an object whose first bytes are ``head`` read as gzip under this contract?"""
    return spec.compression is Compression.GZIP or (
        spec.compression is Compression.AUTO and head[: len(GZIP_MAGIC)] == GZIP_MAGIC
    )


def describe(spec: Input, *, gzipped: bool) -> str:
    """What a file of this input is, in a data owner's words: "gzip-compressed JSON Lines"."""
    if spec.format is InputFormat.JSONL:
        kind = "JSON Lines"
    else:
        kind = "CSV" if spec.delimiter == "," else f"{spec.delimiter!r}-separated CSV"
        if not spec.header:
            kind += " without a header"
    if not is_utf8(spec.encoding):
        kind += f" in {spec.encoding}"
    return f"gzip-compressed {kind}" if gzipped else kind


def utf8_stream(source: IO[bytes], spec: Input) -> IO[bytes]:
    """``source`` as the UTF-8 bytes of its content: decompressed as ``spec.compression``
    says (``auto``: when it starts with gzip's magic bytes), transcoded from
    ``spec.encoding``. Read lazily; a bad gzip stream raises CompressionError, a byte
    sequence invalid in the encoding EncodingError (with its line)."""
    return _Input(source, spec)  # type: ignore[return-value]  # read() is all they use


class _Input:
    """The stream ``utf8_stream`` returns: on the first read, looks at the first bytes and
    chooses the stream to read from; then ``read`` is that stream's (or its decoder's)."""

    def __init__(self, source: IO[bytes], spec: Input) -> None:
        self._source = source
        self._spec = spec
        self.read: Callable[[int], bytes] = self._first_read

    def _first_read(self, size: int = -1) -> bytes:
        source, spec = self._source, self._spec
        head = _read_exactly(source, len(GZIP_MAGIC))
        gzipped = head == GZIP_MAGIC and spec.compression is not Compression.NONE
        if spec.compression is Compression.GZIP and head and not gzipped:
            raise CompressionError(
                "the dataset's contract says gzip, but the file is not gzip-compressed "
                f"(it starts with {head!r}, not {GZIP_MAGIC!r})"
            )
        replay = _Replay(head, source)
        stream: _Readable = _Gunzip(replay) if gzipped else replay
        if not is_utf8(spec.encoding):
            stream = _Transcode(stream, spec.encoding)
        plain = not gzipped and is_utf8(spec.encoding)
        # The plain path: once the head is given back, the converter reads the source itself.
        self.read = source.read if plain and size >= len(head) else stream.read
        return stream.read(size)


class _Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


def _read_exactly(source: IO[bytes], size: int) -> bytes:
    """The first ``size`` bytes (fewer only at the end): a raw stream may return less."""
    data = source.read(size)
    while data and len(data) < size:
        more = source.read(size - len(data))
        if not more:
            break
        data += more
    return data


class _Replay:
    """``head`` (already read from ``source``), then the rest of ``source``; once ``head``
    is given back, ``read`` is the source's own (no cost per read on the plain path)."""

    def __init__(self, head: bytes, source: IO[bytes]) -> None:
        self._head = head
        self._source = source
        self.read: Callable[[int], bytes] = self._read_head

    def _read_head(self, size: int = -1) -> bytes:
        head, source = self._head, self._source
        if 0 <= size < len(head):
            self._head = head[size:]
            return head[:size]
        self._head = b""
        self.read = source.read
        return head + (source.read() if size < 0 else source.read(size - len(head)))


class _Gunzip:
    """Decompressed bytes; a corrupt or truncated gzip stream is bad data."""

    def __init__(self, raw: _Replay) -> None:
        self._file = gzip.GzipFile(fileobj=cast(IO[bytes], raw), mode="rb")

    def read(self, size: int = -1) -> bytes:
        try:
            return self._file.read(size)
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            problem = "it ends early" if isinstance(exc, EOFError) else str(exc)
            raise CompressionError(f"the file is not valid gzip: {problem}") from exc


class _Transcode:
    """UTF-8 bytes of a stream in another encoding, a block at a time (an incremental
    decoder keeps a character cut between two blocks). ``lines`` counts the line breaks
    given out, so an invalid byte sequence is reported on its line."""

    def __init__(self, stream: _Readable, encoding: str) -> None:
        self._stream = stream
        self._encoding = encoding
        self._decoder = codecs.getincrementaldecoder(encoding)()
        self._lines = 0

    def read(self, size: int = -1) -> bytes:
        while True:
            raw = self._stream.read(size)
            try:
                text = self._decoder.decode(raw, final=not raw)
            except UnicodeDecodeError as exc:
                raise self._error(exc) from None
            if text or not raw:
                self._lines += text.count("\n")
                return text.encode("utf-8")

    def _error(self, exc: UnicodeDecodeError) -> EncodingError:
        before = exc.object[: exc.start]
        line = self._lines + codecs.decode(before, self._encoding, "replace").count("\n") + 1
        return EncodingError(
            f"not valid {self._encoding} ({exc.reason}): "
            f"{bytes(exc.object[exc.start : exc.end])!r}",
            line=line,
        )
