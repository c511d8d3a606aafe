"""Cost per workflow path, measured from executed histories on the embedded local cloud.

Runs each path once through the real template and ASL (moto's engine, real handlers), then
counts from the execution history: billed state transitions (states entered + retries),
Lambda invocations and their duration, DynamoDB writes/reads, SNS publishes; S3 requests
are counted at the handlers' S3 client. Prices: us-east-1 list prices (see PRICES).

Each path is priced as a STANDARD workflow (per state transition) and as an EXPRESS one (per
request and billed duration x memory). The Express figures come from the same runs'
histories by default; ``--express-from express-stack`` runs every path again on a stack
deployed with ``WorkflowType=EXPRESS`` and prices those runs instead.

    python scripts/cost_report.py                # print the Markdown tables
    python scripts/cost_report.py --write-docs   # also rewrite the tables in docs/cost.md

``--readme`` is an older name for ``--write-docs`` (the tables used to live in README.md).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from ingest_pipeline.dal.s3 import s3_client
from ingest_pipeline.errors import AccessDeniedError, StorageUnavailableError
from ingest_tools.cost import (
    EXPRESS_BILLING_INCREMENT_MS,
    EXPRESS_MEMORY_MB,
    PRICES,
    PathCost,
    express_memory_estimate_mb,
    measure,
)
from ingest_tools.local_pipeline import ROOT, Execution, Pipeline, local_pipeline

GOOD = (ROOT / "events" / "files" / "orders-good.csv").read_bytes()
BAD = (ROOT / "events" / "files" / "orders-bad-header.csv").read_bytes()
KEY = "incoming/orders/cost.csv"
#: The page whose tables ``--write-docs`` rewrites, between these markers.
COST_DOC = ROOT / "docs" / "cost.md"
MARK_START, MARK_END = "<!-- cost-table:start -->", "<!-- cost-table:end -->"
#: Where the Express rows' runs come from: the Standard runs' histories (same paths, the
#: default) or a second set of runs on a stack deployed with these parameters.
EXPRESS_SOURCES = {"standard-runs": None, "express-stack": {"WorkflowType": "EXPRESS"}}
#: The issue's target: Step Functions cost of the happy path under Express, USD per million.
EXPRESS_TARGET = 5.0


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


def run_all(parameters: dict[str, str] | None = None) -> tuple[list[PathCost], float]:
    """Every path on a fresh stack (``parameters`` override the template's). Returns the
    measured paths and the largest Express memory estimate (MB) among their runs."""
    results, memory_estimate = [], 0.0
    for name in scenarios_names():
        with local_pipeline(parameters=parameters) as p, _mean_jitter():
            memory = _memory_by_function(p)
            s3_client().meta.events.register("before-call.s3", _count_s3)
            _S3_OPS.clear()
            run = scenarios(p)[name]()
            results.append(measure(name, run, memory, Counter(_S3_OPS), waits_ms=_waits_ms(p, run)))
            definition = p.sfn.describe_state_machine(stateMachineArn=p.state_machine)
            estimate = express_memory_estimate_mb(len(definition["definition"]), run.history)
            memory_estimate = max(memory_estimate, estimate)
    return results, memory_estimate


def _waits_ms(p: Pipeline, run: Execution) -> float:
    """Retry backoff and Wait states of ``run`` that the local cloud's virtual clock ran at
    once: its history's timestamps leave them out; on AWS an Express run is billed for them."""
    clock = p.cloud.runtime.clock
    return 1000 * sum(s for _, s in clock.retry_sleeps[run.arn] + clock.waits[run.arn])


@contextmanager
def _mean_jitter() -> Iterator[None]:
    """Retry backoff at its mean: FULL jitter draws each interval uniformly from [0, the
    computed interval] (moto's ``JitterStrategyDecl``, as AWS does); a million objects average
    half of it. Replacing the draw by its mean keeps the table reproducible."""
    from moto.stepfunctions.parser.asl.component.common.retry import jitter_strategy_decl

    class _Mean:
        @staticmethod
        def uniform(low: float, high: float) -> float:
            return (low + high) / 2

    with mock.patch.object(jitter_strategy_decl, "random", _Mean()):
        yield


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
    """The Standard workflow's counts and cost per path."""
    head = (
        "| Path | Outcome | State transitions | Lambda invocations | DynamoDB writes / reads "
        "| SNS | S3 requests | Cost per million objects, Standard (USD) "
        "| of which Step Functions |\n"
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


def express_table(
    standard: list[PathCost], express: list[PathCost], source: str, memory_estimate_mb: float
) -> str:
    """The same paths as an EXPRESS workflow next to their Standard cost, and under it the
    assumptions (requests, memory, duration) the Express figures rest on."""
    head = (
        "| Path | Express billed duration (ms) | Step Functions, Standard "
        "| Step Functions, Express | Total, Standard | Total, Express |\n"
        "|---|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for s, e in zip(standard, express, strict=True):
        billed = f"{e.express_billed_ms:,}"
        if e.waits_ms:
            billed += f" (incl. {e.waits_ms:,.0f} retry backoff)"
        std, exp = s.per_million, e.per_million_express
        rows.append(
            f"| {e.name} | {billed} | {std['Step Functions']:,.2f} "
            f"| {exp['Step Functions']:,.2f} | {sum(std.values()):,.2f} "
            f"| {sum(exp.values()):,.2f} |"
        )
    happy = next(e for e in express if e.name == "Happy path")
    happy_sfn = happy.per_million_express["Step Functions"]
    request = PRICES["express_request"] * 1e6
    increment = EXPRESS_BILLING_INCREMENT_MS / 1000 * EXPRESS_MEMORY_MB / 1024
    per_increment = increment * PRICES["express_gb_second"] * 1e6
    headroom_s = (EXPRESS_TARGET - request) / per_increment * EXPRESS_BILLING_INCREMENT_MS / 1000
    runs = (
        "the Standard runs' histories (same paths)"
        if source == "standard-runs"
        else "runs on a stack deployed with `WorkflowType=EXPRESS`"
    )
    notes = [
        f"Express figures (USD per million objects) from {runs}:",
        f"- requests: 1 per execution (the rule starts one per object event; no path here "
        f"starts child executions), ${request:.2f} per million;",
        f"- memory: {EXPRESS_MEMORY_MB} MB billed, one 64-MB chunk (AWS's estimate, 50 MB + "
        f"definition + largest state payload, is {memory_estimate_mb:.2f} MB here);",
        f"- duration: the local run's ExecutionStarted to its last event, plus the Retry "
        f"backoff that the local clock skips (at its mean under FULL jitter), rounded up to "
        f"{EXPRESS_BILLING_INCREMENT_MS} ms, at ${PRICES['express_gb_second']:.8f} per "
        f"GB-second: ${per_increment:.3f} per million per {EXPRESS_BILLING_INCREMENT_MS} ms. "
        "These are the local cloud's durations, not AWS's: in-process Lambdas without cold "
        "starts, in-memory S3 and DynamoDB; they vary from run to run with the machine's load;",
        f"- happy path: **${happy_sfn:.2f}** per million for Step Functions "
        f"(${request:.2f} requests + ${happy_sfn - request:.2f} for "
        f"{happy.express_billed_ms:,} ms x {EXPRESS_MEMORY_MB} MB), "
        f"${sum(happy.per_million_express.values()):.2f} in total. The target (at most "
        f"${EXPRESS_TARGET:.0f}) is {'met' if happy_sfn <= EXPRESS_TARGET else 'NOT met'}, "
        f"and holds while a run bills at most {headroom_s:.1f} s on average.",
    ]
    return head + "\n".join(rows) + "\n\n" + "\n".join(notes) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--write-docs",
        "--readme",
        dest="write_docs",
        action="store_true",
        help="also rewrite the tables between the cost-table markers in docs/cost.md "
        "(--readme is an older name for it)",
    )
    parser.add_argument(
        "--express-from",
        choices=sorted(EXPRESS_SOURCES),
        default="standard-runs",
        help="price the Express rows from the Standard runs' histories (default) or from runs "
        "on a stack deployed with WorkflowType=EXPRESS",
    )
    args = parser.parse_args(argv)
    results, memory_estimate = run_all()
    express = results
    if (parameters := EXPRESS_SOURCES[args.express_from]) is not None:
        express, express_memory = run_all(parameters)
        memory_estimate = max(memory_estimate, express_memory)
        for s, e in zip(results, express, strict=True):
            if s.status != e.status:
                print(f"{s.name}: {s.status} as Standard, {e.status} as Express", file=sys.stderr)
    if memory_estimate > EXPRESS_MEMORY_MB:
        print(
            f"AWS's memory estimate ({memory_estimate:.2f} MB) exceeds EXPRESS_MEMORY_MB "
            f"({EXPRESS_MEMORY_MB}): bill more 64-MB chunks",
            file=sys.stderr,
        )
        return 1
    text = (
        table(results) + "\n" + express_table(results, express, args.express_from, memory_estimate)
    )
    print(text)
    print(
        "Lambda GB-seconds use local in-process durations at the template's memory sizes; "
        "on AWS the process step's duration grows with file size."
    )
    if args.write_docs:
        content = COST_DOC.read_text()
        if MARK_START not in content or MARK_END not in content:
            print(f"{COST_DOC.relative_to(ROOT)} has no cost-table markers", file=sys.stderr)
            return 1
        before, rest = content.split(MARK_START, 1)
        _, after = rest.split(MARK_END, 1)
        COST_DOC.write_text(f"{before}{MARK_START}\n{text}{MARK_END}{after}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
