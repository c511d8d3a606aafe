"""Cost per workflow path, measured from executed histories on the embedded local cloud.

Runs each path once through the real template and ASL (moto's engine, real handlers), then
counts from the execution history: billed state transitions (states entered + retries),
Lambda invocations and their duration, DynamoDB writes/reads, SNS publishes; S3 requests
are counted at the handlers' S3 client. Prices: us-east-1 list prices (see PRICES).

    python scripts/cost_report.py            # print the Markdown table
    python scripts/cost_report.py --readme   # also rewrite the table in README.md
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ingest_pipeline.dal.s3 import s3_client
from ingest_pipeline.errors import AccessDeniedError, StorageUnavailableError
from ingest_tools.localcloud import engine
from ingest_tools.localcloud.pipeline import ROOT, Execution, Pipeline, local_pipeline, wait_for

# USD, us-east-1 list prices (checked 2026-11; see shared NOTES.md).
PRICES = {
    "transition": 0.025 / 1000,  # Step Functions Standard, per state transition
    "lambda_request": 0.20 / 1e6,
    "lambda_gb_second": 0.0000133334,  # arm64
    "ddb_write": 0.625 / 1e6,  # on-demand, per write request unit (items < 1 KB)
    "ddb_read": 0.125 / 1e6,  # per read request unit (strongly consistent, < 4 KB)
    "sns_publish": 0.50 / 1e6,
    "s3_put": 0.005 / 1000,  # PUT, COPY, POST, LIST
    "s3_get": 0.0004 / 1000,  # GET, HEAD
}
S3_PUT_OPS = {
    "PutObject",
    "CopyObject",
    "CreateMultipartUpload",
    "UploadPart",
    "CompleteMultipartUpload",
    "UploadPartCopy",
    "ListObjectsV2",
}
S3_GET_OPS = {"GetObject", "HeadObject"}
GOOD = (ROOT / "events" / "files" / "orders-good.csv").read_bytes()
BAD = (ROOT / "events" / "files" / "orders-bad-header.csv").read_bytes()
KEY = "incoming/orders/cost.csv"
MARK_START, MARK_END = "<!-- cost-table:start -->", "<!-- cost-table:end -->"


@dataclass
class PathCost:
    name: str
    status: str
    transitions: int
    lambda_invocations: int
    lambda_gb_seconds: float
    ddb_writes: int
    ddb_reads: int
    sns_publishes: int
    s3_puts: int
    s3_gets: int

    @property
    def per_million(self) -> dict[str, float]:
        p = PRICES
        parts = {
            "Step Functions": self.transitions * p["transition"],
            "Lambda": self.lambda_invocations * p["lambda_request"]
            + self.lambda_gb_seconds * p["lambda_gb_second"],
            "DynamoDB": self.ddb_writes * p["ddb_write"] + self.ddb_reads * p["ddb_read"],
            "SNS": self.sns_publishes * p["sns_publish"],
            "S3": self.s3_puts * p["s3_put"] + self.s3_gets * p["s3_get"],
        }
        return {k: v * 1e6 for k, v in parts.items()}


def measure(name: str, run: Execution, memory_mb: dict[str, int], s3_ops: Counter[str]) -> PathCost:
    history = run.history
    entered = sum(1 for e in history if e["type"].endswith("StateEntered"))
    scheduled = [e for e in history if e["type"] == "TaskScheduled"]
    by_id = {e["id"]: e for e in history}
    # A retry is a TaskScheduled that follows a TaskFailed/TimedOut within the same state.
    retries = sum(
        1
        for e in scheduled
        if by_id.get(e["previousEventId"], {}).get("type") in {"TaskFailed", "TaskTimedOut"}
    )
    gb_seconds = 0.0
    for event in scheduled:
        details = event["taskScheduledEventDetails"]
        if details["resourceType"] != "lambda":
            continue
        function = _function_name(details)
        started = _next(history, event["id"], "TaskStarted")
        ended = _next(history, event["id"], ("TaskSucceeded", "TaskFailed", "TaskTimedOut"))
        if started and ended:
            millis = max(1, math.ceil((_ts(ended) - _ts(started)).total_seconds() * 1000))
            gb_seconds += millis / 1000 * memory_mb.get(function, 128) / 1024
    resources = Counter(
        (e["taskScheduledEventDetails"]["resourceType"], e["taskScheduledEventDetails"]["resource"])
        for e in scheduled
    )
    return PathCost(
        name=name,
        status=run.status if not run.error else f"{run.status} ({run.error})",
        transitions=entered + retries,
        lambda_invocations=sum(n for (kind, _), n in resources.items() if kind == "lambda"),
        lambda_gb_seconds=gb_seconds,
        ddb_writes=sum(
            n
            for (kind, op), n in resources.items()
            if kind == "dynamodb" and op in {"updateItem", "putItem", "deleteItem"}
        ),
        ddb_reads=resources[("dynamodb", "getItem")],
        sns_publishes=sum(n for (kind, _), n in resources.items() if kind == "sns"),
        s3_puts=sum(n for op, n in s3_ops.items() if op in S3_PUT_OPS),
        s3_gets=sum(n for op, n in s3_ops.items() if op in S3_GET_OPS),
    )


def _function_name(details: dict[str, Any]) -> str:
    match = re.search(r'"FunctionName"\s*:\s*"([^"]+)"', details.get("parameters", ""))
    return match.group(1).rsplit(":", 1)[-1] if match else ""


def _next(history: list[dict[str, Any]], after: int, kinds: str | tuple[str, ...]) -> Any:
    kinds = (kinds,) if isinstance(kinds, str) else kinds
    return next((e for e in history if e["id"] > after and e["type"] in kinds), None)


def _ts(event: dict[str, Any]) -> datetime:
    stamp = event["timestamp"]
    return stamp if isinstance(stamp, datetime) else datetime.fromisoformat(str(stamp))


def scenarios(p: Pipeline) -> dict[str, Callable[[], Execution]]:
    process = p.functions["ProcessFunction"]

    def happy() -> Execution:
        return p.ingest(KEY, GOOD)[1]

    def duplicate() -> Execution:
        version = p.put(KEY, GOOD)
        event = p.s3_event(KEY, version)
        p.wait(p.start(p.rule_input(event)))
        _S3_OPS.clear()
        return p.wait(p.start(p.rule_input(event)))

    def duplicate_in_progress() -> Execution:
        release, entered = threading.Event(), threading.Event()

        def hold() -> None:
            entered.set()
            release.wait(10)

        engine.FAULTS.hold(process, hold)
        version = p.put(KEY, GOOD)
        execution_input = p.rule_input(p.s3_event(KEY, version))
        owner = p.start(execution_input)
        wait_for(entered.is_set, what="the owner to start processing")
        _S3_OPS.clear()
        run = p.wait(p.start(execution_input))
        s3_client().meta.events.unregister("before-call.s3", _count_s3)  # not the owner's calls
        release.set()
        p.wait(owner)
        return run

    def transient_then_success() -> Execution:
        engine.FAULTS.fail(process, StorageUnavailableError("SlowDown"), times=2)
        return p.ingest(KEY, GOOD)[1]

    def transient_exhausted() -> Execution:
        engine.FAULTS.fail(process, StorageUnavailableError("SlowDown"), times=10)
        return p.ingest(KEY, GOOD)[1]

    def configuration_error() -> Execution:
        engine.FAULTS.fail(process, AccessDeniedError("AccessDenied"))
        return p.ingest(KEY, GOOD)[1]

    def bad_data() -> Execution:
        return p.ingest(KEY, BAD)[1]

    return {
        "Happy path": happy,
        "Duplicate (already succeeded)": duplicate,
        "Duplicate (in progress)": duplicate_in_progress,
        "Transient error, then success": transient_then_success,
        "Transient errors exhausted": transient_exhausted,
        "Configuration error": configuration_error,
        "Bad data (quarantined)": bad_data,
    }


_S3_OPS: Counter[str] = Counter()


def _count_s3(model: Any, **_: Any) -> None:
    _S3_OPS[model.name] += 1


def run_all() -> list[PathCost]:
    results = []
    for name in scenarios_names():
        with local_pipeline() as p:
            memory = _memory_by_function(p)
            s3_client().meta.events.register("before-call.s3", _count_s3)
            _S3_OPS.clear()
            run = scenarios(p)[name]()
            results.append(measure(name, run, memory, Counter(_S3_OPS)))
    return results


def scenarios_names() -> list[str]:
    return [
        "Happy path",
        "Duplicate (already succeeded)",
        "Duplicate (in progress)",
        "Transient error, then success",
        "Transient errors exhausted",
        "Configuration error",
        "Bad data (quarantined)",
    ]


def _memory_by_function(p: Pipeline) -> dict[str, int]:
    import boto3

    client = boto3.client("lambda", region_name=p.stack.region)
    return {
        name: int(client.get_function_configuration(FunctionName=name)["MemorySize"])
        for name in p.functions.values()
    }


def table(results: list[PathCost]) -> str:
    head = (
        "| Path | Outcome | State transitions | Lambda invocations | DynamoDB writes / reads "
        "| SNS | S3 requests | Cost per million objects (USD) | of which Step Functions |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for r in results:
        costs = r.per_million
        rows.append(
            f"| {r.name} | {r.status} | {r.transitions} | {r.lambda_invocations} "
            f"| {r.ddb_writes} / {r.ddb_reads} | {r.sns_publishes} | {r.s3_puts + r.s3_gets} "
            f"| {sum(costs.values()):,.2f} | {costs['Step Functions'] / sum(costs.values()):.0%} |"
        )
    return head + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", action="store_true", help="rewrite the table in README.md")
    args = parser.parse_args(argv)
    results = run_all()
    text = table(results)
    print(text)
    print(
        "Lambda GB-seconds use local in-process durations at the template's memory sizes; "
        "on AWS the process step's duration grows with file size."
    )
    if args.readme:
        readme = ROOT / "README.md"
        content = readme.read_text()
        if MARK_START not in content:
            print("README.md has no cost-table markers", file=sys.stderr)
            return 1
        before, rest = content.split(MARK_START, 1)
        _, after = rest.split(MARK_END, 1)
        readme.write_text(f"{before}{MARK_START}\n{text}{MARK_END}{after}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
