"""CPU throughput of the transform (``logic.transform.convert``), per shipped contract.

For every contract in ``ingest_pipeline/contracts/`` a CSV file is generated in memory
(deterministic seed; realistic values for each column type, some quoted fields with commas,
quotes and newlines, non-ASCII text, padded values, optional columns sometimes empty), then
converted. The figure is MB of CSV input per second of *process CPU time*
(``time.process_time``): what the conversion costs, whatever else the machine is doing.

Beside it, measured in the same runs on the same file (interleaved; the best of
``--repeat`` runs each):

* the csv+json floor: ``csv.reader`` over the decoded file and one ``json.dumps`` per
  record (``dict(zip(header, record))``, ``ensure_ascii=False``, compact separators), with
  no validation, no line numbers, no checksum: what the obvious pure-Python loop costs;
* with ``--against REVISION``: ``logic/transform.py`` as it was at that git revision (its
  output must have the same size), and the speed-up over it.

    .venv/bin/python scripts/bench_transform.py [--mb 20] [--repeat 3] [--json]
        [--dataset orders ...] [--against f43804d]

Target (issue 12): at least 3x the CPU throughput of the transform before it was optimised
(``--against f43804d``), for each contract.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

from ingest_pipeline.logic.contracts import Column, ColumnType, Contract, known_datasets
from ingest_pipeline.logic.contracts import load_contract as load
from ingest_pipeline.logic.deadline import TimeBudget
from ingest_pipeline.logic.transform import Summary, convert

ROOT = Path(__file__).resolve().parents[1]
SEED = 12
Runner = Callable[[bytes], int]
FIRST = ["Anna", "Jörg", "Zoë", "Li", "Mary-Jane", "O'Brien", "José", "Ada", "Kwame", "Noor"]
LAST = ["Smith", "Müller", "García", "Nguyen", "Okafor", "Rossi", "Dubois", "Kowalski", "Ito"]
WORDS = ["red", "blue", "large", "gift", "wrap", "express", "fragile", "spare", "café", "naïve"]
CURRENCIES = ["EUR", "USD", "GBP", "CHF", "JPY", "SEK"]
BOOLEANS = ["true", "false", "yes", "no", "1", "0", "True", "FALSE"]
EPOCH = datetime(2020, 1, 1)


def _string_values(column: Column, rng: random.Random) -> Callable[[], str]:
    name = column.name.lower()
    if name.endswith("_id") or name == "id":
        prefix = name[0]
        return lambda: f"{prefix}-{rng.randrange(1, 10_000_000)}"
    if "email" in name:
        return lambda: (
            f"{rng.choice(FIRST).lower()}.{rng.choice(LAST).lower()}{rng.randrange(100)}"
            f"@example.{rng.choice(['com', 'org', 'de'])}"
        )
    if "currency" in name:
        return lambda: rng.choice(CURRENCIES)

    def text() -> str:
        roll = rng.random()
        if roll < 0.05:  # quoted: a comma, a doubled quote, a newline
            return rng.choice(
                [
                    f"{rng.choice(LAST)}, {rng.choice(FIRST)}",
                    f'{rng.choice(FIRST)} "{rng.choice(WORDS)}" {rng.choice(LAST)}',
                    f"{rng.choice(WORDS)}\n{rng.choice(WORDS)}",
                ]
            )
        if roll < 0.10:
            return f"  {rng.choice(FIRST)} {rng.choice(LAST)}  "  # stripped
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"

    return text


def _values(column: Column, rng: random.Random) -> Callable[[], str]:
    kind = column.type
    if kind == ColumnType.STRING:
        return _string_values(column, rng)
    if kind == ColumnType.INTEGER:
        return lambda: str(rng.choice([rng.randrange(1, 10), rng.randrange(-50, 100_000)]))
    if kind == ColumnType.DECIMAL:
        return lambda: (
            f"{rng.randrange(0, 100_000) / 100:.2f}"
            if rng.random() < 0.9
            else str(rng.randrange(1, 500))
        )
    if kind == ColumnType.BOOLEAN:
        return lambda: rng.choice(BOOLEANS)
    if kind == ColumnType.DATE:

        def day() -> str:
            return (date(2015, 1, 1) + timedelta(days=rng.randrange(4000))).isoformat()

        return day
    if kind == ColumnType.DATETIME:

        def stamp() -> str:
            at = EPOCH + timedelta(seconds=rng.randrange(200_000_000))
            return at.isoformat() + rng.choice(["+00:00", "Z", "", "+02:00"])

        return stamp
    raise ValueError(f"no generator for column type {kind}")


def generate(contract: Contract, megabytes: float, seed: int = SEED) -> bytes:
    """A valid CSV file of about ``megabytes`` MB for ``contract`` (same seed, same bytes)."""
    rng = random.Random(f"{seed}:{contract.dataset}")  # noqa: S311 - reproducible test data
    makers = [_values(c, rng) for c in contract.columns]
    optional = [not c.required for c in contract.columns]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(contract.header)
    target = int(megabytes * 1_000_000)
    while out.tell() < target:  # characters; the few non-ASCII ones make bytes a bit more
        for _ in range(1000):
            writer.writerow(
                [
                    "" if opt and rng.random() < 0.15 else make()
                    for make, opt in zip(makers, optional, strict=True)
                ]
            )
    return out.getvalue().encode("utf-8")


def cpu_seconds(run: Callable[[bytes], int], data: bytes) -> tuple[float, int]:
    """Process CPU time of one run, and the output size."""
    started = time.process_time()
    size = run(data)
    return time.process_time() - started, size


def run_convert(convert: Callable[..., Iterator[bytes]], contract: Contract) -> Runner:
    def run(data: bytes) -> int:
        summary = Summary(dataset=contract.dataset)
        size = 0
        for chunk in convert(io.BytesIO(data), contract, summary):
            size += len(chunk)
        return size

    return run


def run_floor(contract: Contract) -> Runner:
    def run(data: bytes) -> int:
        text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline="")
        reader = csv.reader(text, strict=True)
        header = next(reader)
        size = 0
        for record in reader:
            out = (
                json.dumps(
                    dict(zip(header, record, strict=True)),
                    ensure_ascii=False,
                    separators=(",", ":"),
                )
                + "\n"
            ).encode()
            size += len(out)
        return size

    return run


def transform_at(revision: str) -> ModuleType:
    """``logic/transform.py`` as it was at a git revision, loaded as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{revision}:functions/ingest_pipeline/logic/transform.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    with tempfile.TemporaryDirectory(prefix="bench-transform-") as folder:
        path = Path(folder) / "transform_at_revision.py"
        path.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location("transform_at_revision", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    return module


# Lambda gives a function CPU in proportion to its memory: one vCPU at 1,769 MB. The transform
# runs on one thread, so more memory than that buys it nothing.
FULL_VCPU_MB = 1769
MEMORY_SIZES = (512, 1024, 1769, 3008, 10240)
TIMEOUTS = (300, 900)


def largest_files(mbps: float) -> str:
    """A Markdown table: the largest file the single-Lambda path finishes, per MemorySize and
    Timeout, at ``mbps`` MB/s of one full vCPU, keeping the time budget's margin (deadline.py).
    The S3 download and upload overlap with the CPU work and are not counted."""
    rows = ["| MemorySize | " + " | ".join(f"Timeout {t} s" for t in TIMEOUTS) + " |"]
    rows.append("|---:|" + "---:|" * len(TIMEOUTS))
    for memory in MEMORY_SIZES:
        share = min(1.0, memory / FULL_VCPU_MB)
        cells = []
        for timeout in TIMEOUTS:
            usable = timeout - TimeBudget(size=0, limit_seconds=timeout).margin_seconds
            cells.append(f"{mbps * share * usable / 1000:.1f} GB")
        rows.append(f"| {memory} MB | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=20.0, help="size of each file (MB)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure (best is kept)")
    parser.add_argument("--dataset", action="append", help="only these contracts")
    parser.add_argument(
        "--against",
        metavar="REVISION",
        help="also time logic/transform.py of this git revision, in the same runs",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    old = transform_at(args.against) if args.against else None
    results = []
    for dataset in args.dataset or known_datasets():
        contract = load(dataset)
        data = generate(contract, args.mb)
        runners: dict[str, Runner] = {
            "transform": run_convert(convert, contract),
            "floor": run_floor(contract),
        }
        if old is not None:
            runners["against"] = run_convert(old.convert, contract)
        best: dict[str, float] = {}
        sizes: dict[str, int] = {}
        for _ in range(args.repeat):  # interleaved: a busy spell hits them all alike
            for name, run in runners.items():
                seconds, sizes[name] = cpu_seconds(run, data)
                best[name] = min(best.get(name, seconds), seconds)
        mbps = {name: len(data) / 1e6 / seconds for name, seconds in best.items()}
        result: dict[str, Any] = {
            "dataset": dataset,
            "inputBytes": len(data),
            "outputBytes": sizes["transform"],
            "transformMBps": round(mbps["transform"], 2),
            "floorMBps": round(mbps["floor"], 2),
            "ofFloor": round(mbps["transform"] / mbps["floor"], 2),
        }
        line = (
            f"{dataset:<12} {len(data) / 1e6:5.1f} MB   transform {mbps['transform']:6.2f} MB/s"
            f"   csv+json floor {mbps['floor']:6.2f} MB/s ({result['ofFloor']:.0%})"
        )
        if "against" in mbps:
            if sizes["against"] != sizes["transform"]:
                raise SystemExit(f"{dataset}: {args.against} wrote a different output size")
            result["against"] = args.against
            result["againstMBps"] = round(mbps["against"], 2)
            result["speedup"] = round(mbps["transform"] / mbps["against"], 2)
            line += f"   {args.against} {mbps['against']:6.2f} MB/s (x{result['speedup']:.2f})"
        results.append(result)
        if not args.json:
            print(line)
    slowest = min(results, key=lambda r: r["transformMBps"])
    if not args.json:
        print(
            f"\nLargest file on the single-Lambda path at {slowest['transformMBps']} MB/s "
            f"({slowest['dataset']}, the slowest contract) per vCPU, if a Lambda vCPU is as fast "
            "as one core here:\n"
        )
        print(largest_files(slowest["transformMBps"]))
    if args.json:
        report = {
            "python": sys.version.split()[0],
            "cpuSeconds": "process_time",
            "results": results,
        }
        json.dump(report, sys.stdout, indent=2)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
