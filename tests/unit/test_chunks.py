"""The large-file path's logic (logic/chunks.py), run end to end in memory: plan, convert
each chunk, merge. Its output and errors must be exactly the single-Lambda path's
(``logic.transform.convert`` over the whole object), whatever the chunk size."""

from __future__ import annotations

import io
from typing import Any

import pytest

from ingest_pipeline.errors import (
    ColumnCountError,
    DataError,
    HeaderError,
    MalformedCsvError,
    ValueTypeError,
)
from ingest_pipeline.logic import chunks
from ingest_pipeline.logic.contracts import load_contract
from ingest_pipeline.logic.transform import Summary, convert

pytestmark = pytest.mark.unit

ORDERS = load_contract("orders")
HEADER = b"order_id,customer_id,amount,currency,quantity,ordered_at,gift\n"
WINDOW = 64 * 1024


def row(n: int, *, amount: str = "12.50", customer: str | None = None, nl: str = "\n") -> bytes:
    customer = customer if customer is not None else f"c-{n}"
    return f"o-{n},{customer},{amount},EUR,2,2026-11-21T07:55:00+00:00,false{nl}".encode()


def single(data: bytes) -> tuple[bytes, int]:
    summary = Summary(dataset="orders")
    out = b"".join(convert(io.BytesIO(data), ORDERS, summary))
    return out, summary.rows


def plan(data: bytes, chunk_bytes: int) -> tuple[list[chunks.Chunk], int]:
    end = chunks.header_end(data[: 1024 * 1024], at_eof=len(data) <= 1024 * 1024)
    assert end is not None
    starts = []
    for cut in chunks.nominal_cuts(len(data), end, chunk_bytes):
        window = data[cut - 1 : cut - 1 + WINDOW]
        found = chunks.line_start_after(window, 1, len(ORDERS.header))
        if found is not None:
            starts.append(cut - 1 + found)
    return chunks.plan_chunks(len(data), end, starts), end


def run_chunk(data: bytes, header: bytes, chunk: chunks.Chunk) -> tuple[chunks.ChunkReport, bytes]:
    summary = Summary(dataset="orders")
    stream = chunks.chunk_stream(header, io.BytesIO(data[chunk.start :]))
    try:
        out = b"".join(convert(stream, ORDERS, summary, stop_at=chunks.stop_at(chunk, header)))
    except DataError as exc:
        return chunks.chunk_report(chunk, header, summary, part_key=None, error=exc), b""
    return chunks.chunk_report(chunk, header, summary, part_key=f"part-{chunk.index}"), out


def large(data: bytes, chunk_bytes: int) -> tuple[bytes, int, int]:
    """The large-file path in memory: (output, rows, rounds)."""
    planned, end = plan(data, chunk_bytes)
    header = data[:end]
    for round_ in range(1, 20):
        results = [run_chunk(data, header, chunk) for chunk in planned]
        merged = chunks.merge_chunks(planned, [r for r, _ in results], header.count(b"\n"))
        if isinstance(merged, chunks.Realign):
            planned = merged.chunks
            continue
        outputs = {r.part_key: out for r, out in results}
        body = b"".join(outputs[part.part_key] for part in merged.parts)
        return body, merged.rows, round_
    raise AssertionError("did not converge")


def same_error(data: bytes, chunk_bytes: int) -> DataError:
    with pytest.raises(DataError) as whole:
        single(data)
    with pytest.raises(DataError) as split:
        large(data, chunk_bytes)
    assert type(split.value) is type(whole.value)
    assert split.value.line == whole.value.line
    assert split.value.message == whole.value.message
    assert split.value.details == whole.value.details
    return split.value


GOOD = HEADER + b"".join(row(n) for n in range(1, 400))


@pytest.mark.parametrize("chunk_bytes", [1, 97, 500, 4096, 10**6])
def test_output_is_the_single_paths_whatever_the_chunk_size(chunk_bytes: int) -> None:
    body, rows, _ = large(GOOD, chunk_bytes)
    assert (body, rows) == single(GOOD)


def test_a_quoted_newline_across_a_cut_is_kept_in_its_record() -> None:
    records = [row(n) for n in range(1, 60)]
    # Customer ids with newlines inside quotes, everywhere: many cuts fall inside them.
    records = [
        row(n, customer=f'"c-{n}\nsecond line\nthird"') if n % 2 else r
        for n, r in enumerate(records, start=1)
    ]
    data = HEADER + b"".join(records)
    for chunk_bytes in (50, 120, 333, 1000):
        body, rows, _ = large(data, chunk_bytes)
        assert (body, rows) == single(data), chunk_bytes
        assert rows == 59


def test_a_cut_inside_a_quoted_field_that_looks_like_records_is_realigned() -> None:
    # The quoted field holds text that parses as orders rows: the planner's guess starts
    # inside it; merging notices (the chunk before ended later) and plans again.
    fake = "".join(row(900 + i).decode() for i in range(12))
    data = HEADER + row(1) + row(2, customer=f'"{fake}"') + b"".join(row(n) for n in range(3, 40))
    cut = len(HEADER) + len(row(1)) + 200
    body, rows, rounds = large(data, cut - len(HEADER))
    assert (body, rows) == single(data)
    assert rounds == 2


def test_crlf_lines() -> None:
    data = HEADER.replace(b"\n", b"\r\n") + b"".join(row(n, nl="\r\n") for n in range(1, 200))
    for chunk_bytes in (64, 1000):
        assert large(data, chunk_bytes)[:2] == single(data)


def test_bom_only_before_the_header() -> None:
    data = b"\xef\xbb\xbf" + GOOD
    body, rows, _ = large(data, 300)
    assert (body, rows) == single(data)
    assert b"\xef\xbb\xbf" not in body


def test_header_only_file_has_no_chunks_and_no_rows() -> None:
    planned, end = plan(HEADER, 10)
    assert planned == [] and end == len(HEADER)
    assert single(HEADER) == (b"", 0)


def test_bad_value_in_the_last_chunk_has_its_file_line_number() -> None:
    records = [row(n) for n in range(1, 300)]
    records[-1] = row(299, amount="12.5x")
    data = HEADER + b"".join(records)
    error = same_error(data, 700)
    assert isinstance(error, ValueTypeError)
    assert error.line == 300  # the header is line 1


def test_bad_values_in_several_chunks_are_reported_together_in_file_order() -> None:
    records = [row(n, amount="x" if n % 40 == 0 else "1.00") for n in range(1, 600)]
    data = HEADER + b"".join(records)
    error = same_error(data, 900)
    assert isinstance(error, ValueTypeError)
    assert [p["line"] for p in error.details["errors"]] == [41 + 40 * i for i in range(10)]


def test_structural_error_in_a_middle_chunk() -> None:
    records = [row(n) for n in range(1, 300)]
    records[150] = b"o-151,c-1,1.00\n"
    error = same_error(HEADER + b"".join(records), 500)
    assert isinstance(error, ColumnCountError)
    assert error.line == 152


def test_unterminated_quote_at_the_end() -> None:
    data = GOOD + b'o-999,"c-9,1.00,EUR,1,2026-11-21T07:55:00+00:00,false\n'
    assert isinstance(same_error(data, 800), MalformedCsvError)


def test_bad_header_is_found_by_the_plan() -> None:
    data = b"id,amount\n" + b"1,2\n" * 10
    end = chunks.header_end(data, at_eof=True)
    assert end == len(b"id,amount\n")
    summary = Summary(dataset="orders")
    with pytest.raises(HeaderError):
        list(convert(io.BytesIO(data[:end]), ORDERS, summary))


def test_realign_drops_chunks_the_record_swallowed() -> None:
    planned = chunks.plan_chunks(100, 10, [20, 30, 40])
    fixed = chunks._realigned(planned, 1, 35)
    assert [(c.start, c.stop) for c in fixed] == [(10, 35), (35, 40), (40, 100)]
    assert chunks._realigned(planned, 1, 100) == [chunks.Chunk(0, 10, 100)]


def steps_summary(steps: list[Any]) -> list[tuple[str, int]]:
    return [
        ("copy", s.piece.size) if isinstance(s, chunks.CopyPart) else ("upload", s.size)
        for s in steps
    ]


def test_assembly_copies_big_parts_and_joins_small_ones() -> None:
    mib = 1024 * 1024
    steps = chunks.assembly_steps(
        [("a", 64 * mib), ("b", 2 * mib), ("c", 64 * mib), ("d", 1 * mib)], min_part=5 * mib
    )
    assert steps_summary(steps) == [
        ("copy", 64 * mib),
        ("upload", 5 * mib),  # all of b and the first 3 MiB of c
        ("copy", 61 * mib),
        ("upload", 1 * mib),  # the last part may be small
    ]
    total = sum(size for _, size in steps_summary(steps))
    assert total == 131 * mib


def test_assembly_of_only_small_parts() -> None:
    steps = chunks.assembly_steps([("a", 10), ("b", 0), ("c", 20)], min_part=100)
    assert steps_summary(steps) == [("upload", 30)]
    assert chunks.assembly_steps([], min_part=100) == []
