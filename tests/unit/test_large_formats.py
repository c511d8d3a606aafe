"""Every input format on the large-file path, in memory (issue 40): the plan, each chunk's
conversion and the merge give exactly the single pass's output and errors, whether the
object is cut at byte offsets (uncompressed UTF-8: any CSV dialect, headerless CSV, JSON
Lines) or read once in order and cut into pieces of whole records (gzip, other encodings:
``logic/pieces.py``)."""

from __future__ import annotations

import ast
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from ingest_pipeline.errors import DataError, ValueTypeError
from ingest_pipeline.logic import chunks, formats, pieces
from ingest_pipeline.logic.contracts import Contract, parse_contract
from ingest_pipeline.logic.summary import Summary
from ingest_pipeline.logic.transform import DEFAULT_MAX_LINE_BYTES, convert

pytestmark = pytest.mark.unit

COLUMNS = [
    {"name": "order_id", "type": "string"},
    {"name": "note", "type": "string", "required": False},
    {"name": "amount", "type": "decimal"},
    {"name": "quantity", "type": "integer"},
]
NAMES = [c["name"] for c in COLUMNS]
PREFIX_BYTES = DEFAULT_MAX_LINE_BYTES + 2


def contract(**input_: Any) -> Contract:
    return parse_contract(json.dumps({"dataset": "orders", "input": input_, "columns": COLUMNS}))


def csv_rows(count: int, *, sep: str = ",", quote: str = '"', header: bool = True) -> str:
    """Rows whose every third note holds the delimiter and line breaks, quoted."""
    lines = [sep.join(NAMES)] if header else []
    for n in range(1, count + 1):
        note = f"{quote}n{n}{sep} floor 2\nbuilding {quote}{quote}B{quote}{quote}\n{quote}"
        lines.append(sep.join([f"o-{n}", note if n % 3 == 0 else f"plain {n}", f"{n}.5", str(n)]))
    return "\n".join(lines) + "\n"


def jsonl_rows(count: int) -> str:
    return "".join(
        json.dumps({"order_id": f"o-{n}", "note": f"é {n}", "amount": f"{n}.5", "quantity": n})
        + "\n"
        + ("\n" if n % 7 == 0 else "")  # blank lines too
        for n in range(1, count + 1)
    )


def single(data: bytes, c: Contract) -> tuple[bytes, int]:
    summary = Summary(dataset="orders")
    return b"".join(convert(io.BytesIO(data), c, summary)), summary.rows


def run_chunks(
    c: Contract, header: bytes, planned: list[chunks.Chunk], body_of: Any
) -> tuple[chunks.Merged | chunks.Realign, dict[str | None, bytes]]:
    reports, outputs = [], {}
    for chunk in planned:
        summary = Summary(dataset="orders")
        stream = chunks.chunk_stream(header, io.BytesIO(body_of(chunk)))
        stop = chunks.stop_at(chunk, header)
        try:
            out = b"".join(convert(stream, c, summary, stop_at=stop))
        except DataError as exc:
            reports.append(chunks.chunk_report(chunk, header, summary, part_key=None, error=exc))
            continue
        report = chunks.chunk_report(chunk, header, summary, part_key=f"p{chunk.index}")
        reports.append(report)
        outputs[report.part_key] = out
    return chunks.merge_chunks(planned, reports, header.count(b"\n")), outputs


def by_ranges(data: bytes, c: Contract, chunk_bytes: int) -> tuple[bytes, int, int]:
    """SplitObject's byte-range plan, the chunks, AssembleOutput's merge and realignments
    (the last round: the rest as one chunk). (output, rows, rounds)"""
    dialect = chunks.Dialect.of(c.input)
    end = chunks.header_end(data[:PREFIX_BYTES], at_eof=len(data) <= PREFIX_BYTES, dialect=dialect)
    assert end is not None
    starts = []
    for cut in chunks.nominal_cuts(len(data), end, chunk_bytes):
        window = data[cut - 1 : cut - 1 + 64 * 1024]
        found = chunks.line_start_after(window, 1, len(NAMES), dialect)
        if found is not None:
            starts.append(cut - 1 + found)
    planned = chunks.plan_chunks(len(data), end, starts)
    for round_ in range(1, chunks.MAX_ROUNDS + 1):
        merged, outputs = run_chunks(c, data[:end], planned, lambda k: data[k.start :])
        if isinstance(merged, chunks.Realign):
            assert round_ < chunks.MAX_ROUNDS, "the last round cannot be misaligned"
            planned = merged.tail if round_ + 1 == chunks.MAX_ROUNDS else merged.chunks
            continue
        return b"".join(outputs[p.part_key] for p in merged.parts), merged.rows, round_
    raise AssertionError("unreachable")


class _Prefixed:
    def __init__(self, head: bytes, stream: Any) -> None:
        self._head, self._stream = head, stream

    def read(self, size: int = -1) -> bytes:
        head, self._head = self._head, b""
        return head or self._stream.read(size)


def by_pieces(raw: bytes, c: Contract, piece_bytes: int) -> tuple[bytes, int, int]:
    """SplitObject's single ordered pass, then one chunk per piece. (output, rows, pieces)"""
    text = formats.utf8_stream(io.BytesIO(raw), c.input)
    prefix = text.read(PREFIX_BYTES)
    dialect = chunks.Dialect.of(c.input)
    end = chunks.header_end(prefix, at_eof=len(prefix) < PREFIX_BYTES, dialect=dialect)
    assert end is not None
    cut = list(
        pieces.cut(
            _Prefixed(prefix[end:], text),
            dialect,
            piece_bytes=piece_bytes,
            max_line_bytes=DEFAULT_MAX_LINE_BYTES,
        )
    )
    planned, position = [], end
    for index, piece in enumerate(cut):
        planned.append(chunks.Chunk(index, position, position + len(piece), f"piece-{index}"))
        position += len(piece)
    merged, outputs = run_chunks(c, prefix[:end], planned, lambda k: cut[k.index])
    assert isinstance(merged, chunks.Merged), "a piece always starts at a record"
    return b"".join(outputs[p.part_key] for p in merged.parts), merged.rows, len(cut)


SEMICOLONS = contract(delimiter=";", quote="'")
HEADERLESS = contract(header=False)
JSONL = contract(format="jsonl")


@pytest.mark.parametrize("chunk_bytes", [1, 61, 700, 10**6])
@pytest.mark.parametrize(
    ("c", "data"),
    [
        (SEMICOLONS, csv_rows(120, sep=";", quote="'").encode()),
        (HEADERLESS, csv_rows(120, header=False).encode()),
        (JSONL, jsonl_rows(150).encode()),
        (JSONL, b"\xef\xbb\xbf" + jsonl_rows(20).encode()),
    ],
    ids=["semicolons-quoted-newlines", "headerless", "jsonl", "jsonl-bom"],
)
def test_byte_ranges_of_every_uncompressed_utf8_input(
    c: Contract, data: bytes, chunk_bytes: int
) -> None:
    body, rows, _ = by_ranges(data, c, chunk_bytes)
    assert (body, rows) == single(data, c)


@pytest.mark.parametrize("piece_bytes", [1, 97, 4096, 10**6])
@pytest.mark.parametrize(
    ("c", "raw"),
    [
        (contract(), gzip.compress(csv_rows(200).encode())),
        (SEMICOLONS, gzip.compress(csv_rows(90, sep=";", quote="'").encode())),
        (HEADERLESS, gzip.compress(csv_rows(90, header=False).encode())),
        (JSONL, gzip.compress(jsonl_rows(90).encode())),
        (contract(encoding="latin-1"), csv_rows(90).replace("floor", "étage").encode("latin-1")),
        (contract(encoding="utf-16"), csv_rows(60).encode("utf-16")),
    ],
    ids=["gzip-csv", "gzip-semicolons", "gzip-headerless", "gzip-jsonl", "latin-1", "utf-16"],
)
def test_pieces_of_every_input_read_in_one_pass(
    c: Contract, raw: bytes, piece_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pieces, "_BATCH", 7)  # records between two looks at a piece's size
    monkeypatch.setattr(pieces, "READ_BYTES", 333)
    body, rows, count = by_pieces(raw, c, piece_bytes)
    assert (body, rows) == single(raw, c)
    assert count > 1 or piece_bytes >= 4096


def test_a_cut_that_keeps_landing_in_a_quoted_field_ends_in_one_ordered_pass() -> None:
    """Every note holds text that parses as records (fake rows in quotes), so the plan's
    guesses are wrong round after round: the last round converts the rest, from the last
    proven record start, as one chunk."""
    fake = "".join(f"x-{i};plain;1.5;{i}\n" for i in range(30))
    rows = ["order_id;note;amount;quantity"] + [f"o-{n};'{fake}';{n}.5;{n}" for n in range(1, 25)]
    data = ("\n".join(rows) + "\n").encode()
    c = contract(delimiter=";", quote="'")
    body, count, rounds = by_ranges(data, c, 300)
    assert (body, count) == single(data, c)
    assert rounds == chunks.MAX_ROUNDS


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: t.replace("o-40;", "o-40;'unterminated ", 1),  # a stray quote
        lambda t: t.replace("40.5", "forty", 1),  # a bad value
        lambda t: t.replace("o-80;", "o-80;extra;", 1),  # a column too many
    ],
    ids=["stray-quote", "bad-value", "columns"],
)
def test_bad_data_in_a_piece_is_the_single_paths_error(
    damage: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pieces, "_BATCH", 5)
    c = contract(delimiter=";", quote="'")
    raw = gzip.compress(damage(csv_rows(120, sep=";", quote="'")).encode())
    with pytest.raises(DataError) as whole:
        single(raw, c)
    with pytest.raises(DataError) as split:
        by_pieces(raw, c, 200)
    assert type(split.value) is type(whole.value)
    assert (split.value.line, split.value.message) == (whole.value.line, whole.value.message)


def test_a_parquet_rows_error_is_numbered_from_the_files_first_row() -> None:
    """The Parquet writer numbers rows from its part's first: merged, from the file's."""
    plan = [chunks.Chunk(0, 10, 20), chunks.Chunk(1, 20, 30)]
    error = ValueTypeError("row 3, column 'amount': too many digits", row=3, column="amount")
    reports = [
        chunks.ChunkReport(0, 10, 20, end=20, lines=5, rows=5, part_key="a"),
        chunks.ChunkReport(1, 20, 30, end=None, lines=2, error=error.to_dict()),
    ]
    with pytest.raises(ValueTypeError) as raised:
        chunks.merge_chunks(plan, reports, header_lines=1)
    assert raised.value.details["row"] == 8
    assert raised.value.message.startswith("row 8, column 'amount'")


def test_no_import_cycle_between_the_transform_and_the_processing_step() -> None:
    """Not even under TYPE_CHECKING: what both need (Summary) is in logic/summary.py."""
    logic = Path(__file__).parents[2] / "functions" / "ingest_pipeline" / "logic"

    def imports(name: str) -> set[str]:
        tree = ast.parse((logic / f"{name}.py").read_text())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        return found

    assert "ingest_pipeline.logic.transform" not in imports("processing")
    assert not any(name.startswith("ingest_pipeline.logic.") for name in imports("summary"))
