"""The large-file path's per-format figures (issue 40), printed:

1. **A chunk function's throughput** (MB of CSV input per second of process CPU time), as
   ProcessChunk converts a chunk: the header before the chunk's bytes, ``convert`` with
   ``stop_at``, then JSON Lines, or the Parquet part (``logic/parquet.parquet_body``: the
   whole part built, as it is before its upload). Beside it, in the same run on the same
   file: pyarrow's own CSV reader (``pyarrow.csv.read_csv`` with the contract's column
   types) plus its Parquet writer (``pyarrow.parquet.write_table``, zstd), and the ratio.
2. **SplitObject's single ordered pass** over a gzip CSV (decompress, find record ends with
   the contract's parser, cut pieces; not uploaded): MB/s of compressed input and of text,
   and the largest gzip object it reads in SplitObjectFunction's 900 s Timeout at that
   rate (minus the 15 s margin the time budget keeps), and at half that rate (the figure
   the docs use: a Graviton vCPU may be slower than one core here).

    .venv/bin/python scripts/bench_large_formats.py [--mb 20] [--repeat 2] [--json]

The best of ``--repeat`` runs of each (CPU time: what the work costs, whatever else the
machine is doing). Data: ``scripts/bench_transform.py``'s generator for the orders contract
(quoted fields with commas, quotes and newlines; non-ASCII text), amounts at scale 2 for
Parquet.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from bench_transform import generate
from ingest_pipeline.logic import chunks, formats, parquet, pieces
from ingest_pipeline.logic.contracts import Contract, load_contract, parse_contract
from ingest_pipeline.logic.deadline import MAX_MARGIN_SECONDS
from ingest_pipeline.logic.summary import Summary
from ingest_pipeline.logic.transform import DEFAULT_MAX_LINE_BYTES, convert

SPLIT_TIMEOUT_S = 900  # SplitObjectFunction's Timeout (template.yaml)


def parquet_contract() -> Contract:
    """The orders contract writing Parquet (its decimals at scale 2, as the data has them)."""
    raw = json.loads(json.dumps(load_contract("orders"), default=_builtins))
    for column in raw["columns"]:
        if column["type"] == "decimal":
            column["scale"] = 2
    raw["output"] = {"format": "parquet"}
    return parse_contract(json.dumps(raw))


def _builtins(value: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(value)


def best(run: Callable[[], Any], repeat: int) -> float:
    """The least CPU seconds of ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return min(times)


def chunk_runner(data: bytes, contract: Contract, *, to_parquet: bool) -> Callable[[], int]:
    """ProcessChunk's work on the whole file as one chunk (bytes written)."""
    end = chunks.header_end(data[: DEFAULT_MAX_LINE_BYTES + 2], at_eof=False)
    assert end is not None
    header = data[:end]
    chunk = chunks.Chunk(0, end, len(data))

    def run() -> int:
        summary = Summary(dataset=contract.dataset)
        stream = chunks.chunk_stream(header, io.BytesIO(data[end:]))
        lines = convert(stream, contract, summary, stop_at=chunks.stop_at(chunk, header))
        body = parquet.parquet_body(lines, contract, summary) if to_parquet else lines
        return sum(map(len, body))

    return run


def pyarrow_runner(data: bytes, contract: Contract) -> Callable[[], int]:
    """pyarrow's CSV reader with the contract's types, then its Parquet writer (zstd)."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.csv as pcsv  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    schema = parquet.arrow_schema(contract)
    types = {field.name: field.type for field in schema}
    # the generator's datetimes mix offsets and none: read as text, as pyarrow cannot
    types = {n: (pa.string() if pa.types.is_timestamp(t) else t) for n, t in types.items()}
    options = pcsv.ConvertOptions(
        column_types=types,
        true_values=["true", "True", "yes", "1"],
        false_values=["false", "FALSE", "no", "0"],
        strings_can_be_null=False,
    )

    def run() -> int:
        table = pcsv.read_csv(pa.BufferReader(data), convert_options=options)
        sink = io.BytesIO()
        pq.write_table(table, sink, compression="zstd")
        return sink.tell()

    return run


def one_pass_runner(gz: bytes, contract: Contract) -> Callable[[], int]:
    """SplitObject's single ordered pass over ``gz`` (pieces of 64 MiB, not uploaded)."""
    spec = parse_contract(
        json.dumps({**json.loads(json.dumps(contract, default=_builtins)), "output": {}})
    ).input
    dialect = chunks.Dialect.of(spec)

    def run() -> int:
        text = formats.utf8_stream(io.BytesIO(gz), spec)
        prefix = text.read(DEFAULT_MAX_LINE_BYTES + 2)
        end = chunks.header_end(prefix, at_eof=False, dialect=dialect) or 0

        class Rest:
            head = prefix[end:]

            def read(self, size: int) -> bytes:
                head, Rest.head = Rest.head, b""
                return head or text.read(size)

        cut = pieces.cut(
            Rest(), dialect, piece_bytes=64 << 20, max_line_bytes=DEFAULT_MAX_LINE_BYTES
        )
        return end + sum(map(len, cut))

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=20.0, help="MB of CSV generated")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)

    contract = parquet_contract()
    data = generate(load_contract("orders"), args.mb)
    mb = len(data) / 1e6
    jsonl_s = best(chunk_runner(data, contract, to_parquet=False), args.repeat)
    parquet_s = best(chunk_runner(data, contract, to_parquet=True), args.repeat)
    arrow_s = best(pyarrow_runner(data, contract), args.repeat)
    gz = gzip.compress(data, compresslevel=6)
    text_bytes = one_pass_runner(gz, contract)()
    assert text_bytes == len(data), (text_bytes, len(data))
    pass_s = best(one_pass_runner(gz, contract), args.repeat)
    gz_rate = len(gz) / pass_s
    seconds = SPLIT_TIMEOUT_S - MAX_MARGIN_SECONDS
    figures = {
        "csvMB": round(mb, 1),
        "chunkCsvToJsonlMBps": round(mb / jsonl_s, 2),
        "chunkCsvToParquetMBps": round(mb / parquet_s, 2),
        "pyarrowCsvToParquetMBps": round(mb / arrow_s, 2),
        "pyarrowOverChunkParquet": round(parquet_s / arrow_s, 1),
        "pyarrowOverChunkJsonl": round(jsonl_s / arrow_s, 1),
        "gzipRatio": round(len(data) / len(gz), 2),
        "onePassGzipMBps": round(gz_rate / 1e6, 1),
        "onePassTextMBps": round(len(data) / pass_s / 1e6, 1),
        "largestGzipGB": round(gz_rate * seconds / 1e9, 1),
        "largestGzipGBHalfRate": round(gz_rate * seconds / 2e9, 1),
    }
    if args.json:
        print(json.dumps(figures))
        return 0
    f = figures
    print(f"orders CSV, {f['csvMB']} MB, CPU time, best of {args.repeat}:")
    print(f"  chunk CSV -> JSON Lines      {f['chunkCsvToJsonlMBps']:7.2f} MB/s")
    print(f"  chunk CSV -> Parquet         {f['chunkCsvToParquetMBps']:7.2f} MB/s")
    print(
        f"  pyarrow read_csv + Parquet   {f['pyarrowCsvToParquetMBps']:7.2f} MB/s  "
        f"({f['pyarrowOverChunkParquet']}x the chunk's Parquet, "
        f"{f['pyarrowOverChunkJsonl']}x its JSON Lines)"
    )
    print(
        f"SplitObject's single pass over the gzip file (ratio {f['gzipRatio']}): "
        f"{f['onePassGzipMBps']} MB/s of gzip, {f['onePassTextMBps']} MB/s of text"
    )
    print(
        f"  largest gzip object in its {SPLIT_TIMEOUT_S} s Timeout: {f['largestGzipGB']} GB "
        f"at this rate, {f['largestGzipGBHalfRate']} GB at half of it"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
