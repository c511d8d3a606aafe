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
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

from ingest_pipeline.dal.s3 import s3_client
from ingest_pipeline.errors import AccessDeniedError, StorageUnavailableError
from ingest_tools.cost import PathCost, measure
from ingest_tools.localcloud.pipeline import ROOT, Execution, Pipeline, local_pipeline

GOOD = (ROOT / "events" / "files" / "orders-good.csv").read_bytes()
BAD = (ROOT / "events" / "files" / "orders-bad-header.csv").read_bytes()
KEY = "incoming/orders/cost.csv"
MARK_START, MARK_END = "<!-- cost-table:start -->", "<!-- cost-table:end -->"


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
        gate = p.cloud.faults.gate(process)
        version = p.put(KEY, GOOD)
        execution_input = p.rule_input(p.s3_event(KEY, version))
        owner = p.start(execution_input)
        if not gate.entered.wait(10.0):
            raise TimeoutError("timed out waiting for the owner to start processing")
        _S3_OPS.clear()
        run = p.wait(p.start(execution_input))
        s3_client().meta.events.unregister("before-call.s3", _count_s3)  # not the owner's calls
        gate.release()
        p.wait(owner)
        return run

    def transient_then_success() -> Execution:
        p.cloud.faults.fail(process, StorageUnavailableError("SlowDown"), times=2)
        return p.ingest(KEY, GOOD)[1]

    def transient_exhausted() -> Execution:
        p.cloud.faults.fail(process, StorageUnavailableError("SlowDown"), times=10)
        return p.ingest(KEY, GOOD)[1]

    def configuration_error() -> Execution:
        p.cloud.faults.fail(process, AccessDeniedError("AccessDenied"))
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
