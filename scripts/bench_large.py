"""Large files end to end on the local cloud: MB/s and peak memory, single path vs Distributed Map.

For each size (``--sizes``, MiB) a valid ``orders`` CSV file is generated into a temporary
file (rows made as ``scripts/bench_transform.py`` makes them; a few MB of distinct rows,
written again and again up to the size, so the file is never held in memory), then for each
path (``--paths``) a fresh local cloud is deployed with the path's parameters and the file is
uploaded with ``upload_file`` (multipart, as a client uploads a large file):

* ``single``: ``LargeObjectThresholdMiB=0`` (the large-file path off): ProcessObject converts
  the whole file in one invocation. A file it cannot finish in its Timeout (300 s, real time
  here) fails as OBJECT_TOO_LARGE: reported in the table, not an error of this script;
* ``map``: ``LargeObjectThresholdMiB=1``, ``LargeObjectChunkMiB=--chunk-mib``: ProcessObject
  hands it over (SPLIT), SplitObject plans the chunks, ProcessChunks (Distributed Map) runs one
  ProcessChunkFunction invocation per chunk, AssembleOutput joins them by multipart copy.

Figures per run:

* wall: seconds from the start of the upload to the execution's terminal state (the upload
  is in it; ``put s`` is the upload alone); MB/s = input MB (10^6 bytes) / wall;
* rows: the state record's row_count, which must equal the rows generated (checked: the
  script exits 1 after the table when one differs), and the output object's size;
* the functions, each running in environment processes of its own: from the REPORT lines
  Lambda wrote to its log group (``/aws/lambda/<name>``: this template sets no LoggingConfig)
  during the run: invocations, the longest Duration, the largest Max Memory Used (the
  environment process's peak RSS, VmHWM, as Lambda reports it); ``fn MB`` is the largest of
  any function in the run;
* cloud MiB: peak resident set growth of this process during the run, the local cloud's
  alone (moto, Step Functions; VmHWM after resetting it through /proc/self/clear_refs, minus
  VmRSS at the start; ru_maxrss growth elsewhere). moto keeps objects over 5 MiB in temporary
  files (FakeKey's SpooledTemporaryFile), but materialises the whole object for every
  GetObject, even a 256 KiB Range read (moto/s3/responses.py: ``key.value`` then a slice),
  and joins a multipart upload's parts in memory: that grows with the file.

    .venv/bin/python scripts/bench_large.py [--sizes 10,100,1024] [--paths single,map]
        [--single-max-mib N] [--chunk-mib 64] [--timeout 3600]

The functions' logs echoed on stdout are discarded (their REPORT lines are read back from
CloudWatch Logs); progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gc
import io
import os
import random
import re
import resource
import shlex
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from boto3.s3.transfer import TransferConfig

from bench_transform import SEED, _values
from ingest_pipeline.logic.contracts import load_contract
from ingest_tools.local_pipeline import Pipeline
from localcloud.cloud import LocalCloud

MIB = 1024 * 1024
DATASET = "orders"
SINGLE_PATH = [
    "ClaimObject",
    "ProcessObject",
    "RecordSuccess",
]
MAP_PATH = [  # the per-object execution, then the large-object execution it started
    "ClaimObject",
    "ProcessObject",
    "StartLargeObjectWorkflow",
    "EndAsHandedOver",
    "TakeOverClaim",
    "SplitObject",
    "ProcessChunks",
    "AssembleOutput",
    "ChooseAssemblyOutcome",
    "RecordSuccess",
]
BLOCKS = 32  # distinct blocks of rows, ~128 KB each, written in turn up to the size
BLOCK_BYTES = 128 * 1024
UPLOAD = TransferConfig(multipart_threshold=8 * MIB, multipart_chunksize=16 * MIB)
REPORT = re.compile(r"^REPORT RequestId: \S+\tDuration: ([\d.]+) ms\t.*\tMax Memory Used: (\d+) MB")


# --- the input file -------------------------------------------------------------------------
@dataclass(frozen=True)
class Generated:
    path: Path
    size: int
    rows: int


def write_orders(path: Path, mib: float) -> Generated:
    """A valid orders CSV file of at least ``mib`` MiB (by at most one block), never held in
    memory: ``BLOCKS`` distinct blocks of rows (bench_transform's values), written in turn."""
    contract = load_contract(DATASET)
    rng = random.Random(f"{SEED}:bench-large")  # noqa: S311 - reproducible test data
    makers = [_values(c, rng) for c in contract.columns]
    optional = [not c.required for c in contract.columns]
    blocks: list[tuple[bytes, int]] = []
    for _ in range(BLOCKS):
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        rows = 0
        while out.tell() < BLOCK_BYTES:
            writer.writerow(
                [
                    "" if opt and rng.random() < 0.15 else make()
                    for make, opt in zip(makers, optional, strict=True)
                ]
            )
            rows += 1
        blocks.append((out.getvalue().encode("utf-8"), rows))
    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow(contract.header)
    target = int(mib * MIB)
    size, rows = 0, 0
    with path.open("wb") as f:
        size += f.write(header.getvalue().encode("utf-8"))
        i = 0
        while size < target:
            block, count = blocks[i % BLOCKS]
            size += f.write(block)
            rows += count
            i += 1
    return Generated(path, size, rows)


# --- what is measured ----------------------------------------------------------------------
def _rss_kib(field_name: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class RssPeak:
    """Peak RSS growth of this process, the local cloud alone (moto, Step Functions: the
    functions run in processes of their own), while a run lasts (Linux: VmHWM, reset through
    /proc/self/clear_refs, over VmRSS at the start; elsewhere ru_maxrss growth, which only
    shows growth above the process's earlier peak)."""

    def __init__(self) -> None:
        self.growth_mib: float | None = None
        self.how = ""

    @contextlib.contextmanager
    def measure(self) -> Iterator[None]:
        gc.collect()
        start_rss: int | None = None
        with contextlib.suppress(OSError):
            Path("/proc/self/clear_refs").write_text("5")  # VmHWM := the current RSS
            start_rss = _rss_kib("VmRSS")
        start_max = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        try:
            yield
        finally:
            hwm = _rss_kib("VmHWM")
            if start_rss is not None and hwm is not None:
                self.growth_mib, self.how = (hwm - start_rss) / 1024, "VmHWM"
            else:
                peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                self.growth_mib, self.how = (peak - start_max) / 1024, "ru_maxrss"


def reports(p: Pipeline, physical: str, since_ms: int) -> tuple[int, float, int] | None:
    """The function's REPORT lines timestamped at/after ``since_ms`` (written when each
    invocation ended): invocations, longest Duration (s), largest Max Memory Used (MB); None
    when it was not invoked (no such line, or no log group yet)."""
    found: list[tuple[float, int]] = []
    pages = p.logs.get_paginator("filter_log_events").paginate(
        logGroupName=f"/aws/lambda/{physical}", startTime=since_ms, filterPattern='"REPORT"'
    )
    with contextlib.suppress(p.logs.exceptions.ResourceNotFoundException):
        for page in pages:
            for event in page["events"]:
                if m := REPORT.match(event["message"]):
                    found.append((float(m[1]) / 1000, int(m[2])))
    if not found:
        return None
    return len(found), max(s for s, _ in found), max(mb for _, mb in found)


# --- one run ------------------------------------------------------------------------------
@dataclass
class Result:
    path: str
    size: int
    rows_generated: int
    status: str = ""
    outcome: str = ""
    put_s: float = 0.0
    wall_s: float = 0.0
    rows: int | None = None
    output_bytes: int | None = None
    states: list[str] = field(default_factory=list)
    chunks: int = 0
    rss_mib: float | None = None
    rss_how: str = ""
    per_function: dict[str, tuple[int, float, int]] = field(default_factory=dict)  # n, s, MB
    note: str = ""

    @property
    def fn_mb(self) -> int | None:
        return max((mb for _, _, mb in self.per_function.values()), default=None)

    @property
    def mbps(self) -> float:
        return self.size / 1e6 / self.wall_s if self.wall_s else 0.0

    @property
    def path_ok(self) -> bool:
        return self.states == (MAP_PATH if self.path == "map" else SINGLE_PATH)

    @property
    def rows_ok(self) -> bool:
        return self.status != "SUCCEEDED" or self.rows == self.rows_generated


def parameters(path: str, chunk_mib: int) -> dict[str, str]:
    if path == "single":
        return {"LargeObjectThresholdMiB": "0"}
    return {"LargeObjectThresholdMiB": "1", "LargeObjectChunkMiB": str(chunk_mib)}


def upload(p: Pipeline, key: str, source: Path) -> str:
    """``upload_file`` (multipart over 8 MiB); the version it wrote."""
    p.s3.upload_file(str(source), p.bucket, key, Config=UPLOAD)
    return str(p.s3.head_object(Bucket=p.bucket, Key=key)["VersionId"])


def run_one(
    p: Pipeline,
    path: str,
    generated: Generated,
    *,
    label: str,
    timeout: float,
) -> Result:
    key = f"incoming/{DATASET}/bench-large/{path}/{label}.csv"
    chunk_fn = p.functions["ProcessChunkFunction"]
    chunks_before = p.cloud.invocation_count(chunk_fn)
    result = Result(path, generated.size, generated.rows)
    rss = RssPeak()
    since_ms = int(time.time() * 1000)
    with rss.measure():
        started = time.perf_counter()
        version = upload(p, key, generated.path)
        result.put_s = time.perf_counter() - started
        delivery = p.delivery(key, version, timeout=timeout)
        if delivery.execution_arn is None:
            raise SystemExit(f"{key} was not delivered: {delivery.status} {delivery.error_code}")
        run = p.wait(delivery.execution_arn, timeout=timeout)
        states = run.path
        if states[-1] == "EndAsHandedOver":
            run = p.handed_over_to(run, timeout=timeout)
            states = states + run.path
        result.wall_s = time.perf_counter() - started
    result.status, result.states = run.status, states
    result.chunks = p.cloud.invocation_count(chunk_fn) - chunks_before
    record = p.record(key, version) or {}
    result.outcome = str(record.get("outcome") or record.get("error_code") or "")
    if run.status == "SUCCEEDED":
        result.rows = int(record.get("row_count", -1))
        out = p.s3.head_object(Bucket=p.bucket, Key=str(record["output_key"]))
        result.output_bytes = int(out["ContentLength"])
    else:
        result.note = f"{run.error}: {(run.cause or '')[:300]}"
    result.rss_mib, result.rss_how = rss.growth_mib, rss.how
    for logical, physical in p.functions.items():
        if (figures := reports(p, physical, since_ms)) is not None:
            result.per_function[logical] = figures
    # Leave the next run a clean bucket (moto's temp files, its in-memory listings).
    for prefix in (key, str(record.get("output_key") or key)):
        for v in p.s3.list_object_versions(Bucket=p.bucket, Prefix=prefix).get("Versions", []):
            p.s3.delete_object(Bucket=p.bucket, Key=v["Key"], VersionId=v["VersionId"])
    return result


def warm_up(p: Pipeline, path: str, folder: Path) -> None:
    """Imports, first clients, first invocation of every function the path uses."""
    small = write_orders(folder / "warm.csv", 2 if path == "map" else 0.1)
    key = f"incoming/{DATASET}/bench-large/warm-{path}.csv"
    version = upload(p, key, small.path)
    arn = p.delivery(key, version, timeout=120).execution_arn
    assert arn, "warm-up object was not delivered"
    run = p.wait(arn, timeout=300)
    if run.path[-1:] == ["EndAsHandedOver"]:  # its large-object execution ends before the run
        run = p.handed_over_to(run, timeout=300)
    assert run.status == "SUCCEEDED", (run.error, run.cause)


def bench_path(
    path: str, files: dict[int, Generated], args: argparse.Namespace, folder: Path
) -> list[Result]:
    results = []
    # The functions' logs echoed on stdout are discarded (truncated after each run).
    with (
        contextlib.redirect_stdout(io.StringIO()) as logs,
        LocalCloud(parameters=parameters(path, args.chunk_mib)) as cloud,
    ):
        p = Pipeline(cloud)
        warm_up(p, path, folder)
        for mib, generated in files.items():
            if path == "single" and mib > args.single_max_mib:
                progress(f"{path} {mib} MiB: skipped (--single-max-mib)")
                continue
            progress(f"{path} {mib} MiB: run ...")
            measured = run_one(p, path, generated, label=f"{mib}mib", timeout=args.timeout)
            logs.seek(0)
            logs.truncate()
            progress(
                f"{path} {mib} MiB: {measured.status} in {measured.wall_s:.1f} s "
                f"({measured.mbps:.2f} MB/s), functions <= {measured.fn_mb or '-'} MB, "
                f"cloud RSS +{_mib(measured.rss_mib)} MiB"
            )
            results.append(measured)
    return results


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- output -------------------------------------------------------------------------------
def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def table(results: list[Result]) -> str:
    head = (
        f"{'path':<7}{'size MiB':>9}{'rows':>11}{'put s':>8}{'wall s':>9}{'MB/s':>7}"
        f"{'fn MB':>7}{'cloud MiB':>11}{'chunks':>8}{'out MiB':>9}"
        f"  {'path ok':<8}{'rows ok':<8}status"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        status = r.status if r.status == "SUCCEEDED" else f"{r.status} {r.outcome}".strip()
        if r.status != "SUCCEEDED":
            status += f" after {r.wall_s:.0f} s"
        lines.append(
            f"{r.path:<7}{r.size / MIB:>9.1f}{r.rows_generated:>11}{r.put_s:>8.1f}"
            f"{r.wall_s:>9.1f}{r.mbps:>7.2f}{r.fn_mb if r.fn_mb is not None else '-':>7}"
            f"{_mib(r.rss_mib):>11}{r.chunks:>8}"
            f"{_mib(r.output_bytes / MIB if r.output_bytes is not None else None):>9}"
            f"  {'yes' if r.path_ok else 'NO':<8}{'yes' if r.rows_ok else 'NO':<8}{status}"
        )
    return "\n".join(lines)


def details(results: list[Result]) -> str:
    lines = []
    for r in results:
        functions = ", ".join(
            f"{name} x{count} ({longest:.1f} s, {mb} MB)"
            for name, (count, longest, mb) in sorted(r.per_function.items())
        )
        lines.append(f"  {r.path} {r.size / MIB:.0f} MiB: {functions}")
        lines.append(f"      cloud RSS from {r.rss_how}")
        if not r.path_ok:
            lines.append(f"      states: {' -> '.join(r.states)}")
        if r.note:
            lines.append(f"      {r.note}")
        if not r.rows_ok:
            lines.append(f"      ROWS: record has {r.rows}, generated {r.rows_generated}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100,1024", help="file sizes in MiB, comma-separated")
    parser.add_argument("--paths", default="single,map", help="single, map or both")
    parser.add_argument(
        "--single-max-mib",
        type=float,
        default=float("inf"),
        help="skip sizes above this on the single path (e.g. 100: no 1 GB single run)",
    )
    parser.add_argument("--chunk-mib", type=int, default=64, help="LargeObjectChunkMiB (map)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    paths = [s.strip() for s in args.paths.split(",") if s.strip()]
    if unknown := set(paths) - {"single", "map"}:
        parser.error(f"unknown paths: {sorted(unknown)}")

    command = shlex.join([sys.executable, *sys.argv]) if argv is None else shlex.join(argv)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-large-") as tmp:
        folder = Path(tmp)
        files: dict[int, Generated] = {}
        for mib in sizes:
            started = time.perf_counter()
            files[mib] = write_orders(folder / f"orders-{mib}mib.csv", mib)
            progress(
                f"generated {mib} MiB: {files[mib].rows} rows, "
                f"{files[mib].size} bytes in {time.perf_counter() - started:.1f} s"
            )
        for path in paths:
            results.extend(bench_path(path, files, args, folder))

    print(f"$ {command}")
    print(
        f"large files end to end on the local cloud ({DATASET}; map: LargeObjectChunkMiB="
        f"{args.chunk_mib}; {os.cpu_count()} cores, Python {sys.version.split()[0]})"
    )
    print(
        "  wall: upload start -> execution terminal (put s: the upload alone); MB/s = 10^6 B / wall"
    )
    print(
        "  fn MB: the largest Max Memory Used of the functions' REPORT lines in the run (each "
        "function runs in processes of its own)\n"
        "  cloud MiB: peak resident-set growth of the local cloud's process (moto, Step "
        "Functions) alone during the run\n"
        "    (moto reads the whole object into memory for any GetObject, even a Range read, and "
        "joins multipart uploads in memory)"
    )
    print()
    print(table(results))
    print(
        "\nper run, per function (its REPORT lines: invocations, longest Duration s, largest "
        "Max Memory Used MB):"
    )
    print(details(results))
    bad = [r for r in results if not r.rows_ok]
    if bad:
        print(f"\nROW COUNT MISMATCH in {len(bad)} run(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
