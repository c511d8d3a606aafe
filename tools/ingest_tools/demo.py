"""`make demo`: every workflow path through the local cloud, from an S3 upload to the end.

Starts the local cloud from template.yaml, uploads the sample files of events/files/ so that
each path is taken (faults injected at the boundaries, never inside the Lambdas), waits for
each, and prints one table: object, path through the states, final state in DynamoDB,
attempts, notifications, dead-letter messages, state transitions and cost per million.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import boto3

from ingest_pipeline.dal import contracts
from ingest_pipeline.errors import StorageUnavailableError
from ingest_pipeline.logic.contracts import parse_contract
from ingest_tools.cost import S3Counter, measure
from ingest_tools.local_pipeline import ROOT, TEMPLATE, Execution, Pipeline, app_cloud
from localcloud.cloud import LocalCloud
from localcloud.iam import report

__all__ = ["Row", "run_demo", "run_scenarios"]

FILES = ROOT / "events" / "files"
LOG_FILE = ROOT / ".localcloud" / "demo-lambda-logs.jsonl"


@dataclass
class Row:
    scenario: str
    object: str
    path: list[str]
    execution_status: str
    state: str
    attempts: str
    notifications: str
    dead_letters: str
    transitions: int
    cost_per_million: float
    expected: str
    ok: bool


def _path(run: Execution) -> list[str]:
    """States entered, a task state retried shown as Name×attempts."""
    out: list[str] = []
    counts: dict[int, int] = {}
    for event in run.history:
        if event["type"].endswith("StateEntered"):
            out.append(event["stateEnteredEventDetails"]["name"])
        elif event["type"] == "TaskScheduled" and out:
            counts[len(out) - 1] = counts.get(len(out) - 1, 0) + 1
    return [f"{n}×{counts[i]}" if counts.get(i, 0) > 1 else n for i, n in enumerate(out)]


class _Demo:
    def __init__(self, cloud: LocalCloud, progress: Callable[[str], None]) -> None:
        self.cloud, self.p, self.progress = cloud, Pipeline(cloud), progress
        lam = boto3.client("lambda", region_name=cloud.region)
        self.memory = {
            name: int(lam.get_function_configuration(FunctionName=name)["MemorySize"])
            for name in cloud.functions.values()
        }
        self.dlq_url = cloud.outputs["EventDeliveryDLQUrl"]
        self.express = cloud.outputs.get("WorkflowType") == "EXPRESS"
        self.s3 = S3Counter()

    def _dlq_depth(self) -> int:
        attrs = self.p.sqs.get_queue_attributes(
            QueueUrl=self.dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attrs["ApproximateNumberOfMessages"])

    def _notes(self) -> str:
        ops = len(self.p.notifications("OperationsTopicArn"))
        dq = len(self.p.notifications("DataQualityTopicArn"))
        parts = [f"operations×{ops}" if ops else "", f"data-quality×{dq}" if dq else ""]
        return ", ".join(p for p in parts if p) or "-"

    def row(  # noqa: PLR0917 - one call per scenario reads as a table
        self,
        scenario: str,
        key: str,
        body: bytes,
        expected: str,
        before: Callable[[], None] | None = None,
        run: Callable[[str, bytes], tuple[str, Execution | None]] | None = None,
    ) -> Row:
        self.progress(f"  {scenario:<28} s3://…/{key}")
        dlq_before = self._dlq_depth()
        if before:
            before()
        try:
            with S3Counter() as s3:
                self.s3 = s3
                version, execution = (run or self.p.ingest)(key, body)
        finally:
            self.cloud.faults.clear()  # faults armed for this scenario end with it
        record = self.p.record(key, version) or {}
        dead = self._dlq_depth() - dlq_before
        state = str(record.get("status", "no record"))
        if record.get("error_class"):
            state += f" ({record['error_class']}{', retryable' if record.get('retryable') else ''})"
        delivery = self.p.delivery(key, version)
        attempts = f"{record.get('attempt', 0)} claim"
        if delivery.attempts > 1:
            attempts = f"{delivery.attempts} deliveries"
        if execution is None:
            cost, transitions, path, status = 0.0, 0, ["(no execution)"], "-"
        else:
            measured = measure(scenario, execution, self.memory, s3.ops)
            # Express bills requests and duration, Standard each transition (cost.py).
            prices = measured.per_million_express if self.express else measured.per_million
            cost, transitions = sum(prices.values()), measured.transitions
            path, status = _path(execution), execution.status
        dead_text = "-"
        if dead:
            dead_text = f"{dead} ({delivery.error_code} after {delivery.attempts - 1} retries)"
        outcome = f"{status} / {state.split(' ')[0]}"
        return Row(
            scenario,
            key,
            path,
            status,
            state,
            attempts,
            self._notes(),
            dead_text,
            transitions,
            round(cost, 2),
            expected,
            outcome == expected,
        )

    def duplicate(self, key: str, body: bytes) -> tuple[str, Execution | None]:
        version, _first = self.p.ingest(key, body)
        event = self.p.delivery(key, version).event
        before = {d.execution_arn for d in self.p.deliveries_for(key, version)}
        self.s3.ops.clear()  # count only the duplicate's own requests
        self.cloud.redeliver(event)  # S3/EventBridge deliver at least once
        again = self.cloud.deliveries.wait(
            lambda: [
                d
                for d in self.p.deliveries_for(key, version)
                if d.finished is not None and d.execution_arn not in before
            ],
            10,
        )
        return version, self.p.wait(again[0].execution_arn)

    def uploaders_own_key(self, key: str, body: bytes) -> tuple[str, Execution | None]:
        """An uploader encrypts with a KMS key of their own (SSE-KMS): ProcessFunction's role
        has no kms:Decrypt on it, so S3 refuses its read, as on AWS."""
        kms = boto3.client("kms", region_name=self.cloud.region)
        own = kms.create_key(Description="an uploader's own key")["KeyMetadata"]["Arn"]
        version = str(
            self.p.s3.put_object(
                Bucket=self.p.bucket,
                Key=key,
                Body=body,
                ServerSideEncryption="aws:kms",
                SSEKMSKeyId=own,
            )["VersionId"]
        )
        delivery = self.p.delivery(key, version)
        if delivery.execution_arn is None:
            raise RuntimeError(f"{key} was not delivered: {delivery.error_message}")
        return version, self.p.wait(delivery.execution_arn)

    def new_dataset(self, key: str, body: bytes) -> tuple[str, Execution | None]:
        """Register the dataset's contract on the running stack (what ``ingestctl dataset
        add`` does), then upload a file of it: no redeploy."""
        text = (FILES / "shipments.contract.json").read_text(encoding="utf-8")
        contracts.register(self.p.bucket, parse_contract(text), text)
        return self.p.ingest(key, body)

    def undeliverable(self, key: str, body: bytes) -> tuple[str, Execution | None]:
        self.cloud.faults.fail_delivery("THROTTLING", times=1000, rule="ObjectCreated")
        version = self.p.put(key, body)
        self.p.delivery(key, version)
        self.cloud.faults.clear()
        return version, None


def run_scenarios(cloud: LocalCloud, progress: Callable[[str], None] = lambda _: None) -> list[Row]:
    demo = _Demo(cloud, progress)
    good = (FILES / "orders-good.csv").read_bytes()
    bad = (FILES / "orders-bad-values.csv").read_bytes()

    def fail_next(error: BaseException, times: int) -> Callable[[], None]:
        return lambda: cloud.fail_next("ProcessFunction", error, times=times)

    return [
        demo.row("good file", "incoming/orders/2026-11-21.csv", good, "SUCCEEDED / SUCCEEDED"),
        demo.row("bad data", "incoming/orders/bad-values.csv", bad, "FAILED / FAILED"),
        demo.row(
            "gzip file",
            "incoming/orders/2026-11-22.csv.gz",
            gzip.compress(good),
            "SUCCEEDED / SUCCEEDED",
        ),
        demo.row(
            "dataset added at run time",
            "incoming/shipments/2026-11-27.csv",
            (FILES / "shipments.csv").read_bytes(),
            "SUCCEEDED / SUCCEEDED",
            run=demo.new_dataset,
        ),
        demo.row(
            "transient, recovers",
            "incoming/orders/slow-1.csv",
            good,
            "SUCCEEDED / SUCCEEDED",
            before=fail_next(StorageUnavailableError("SlowDown"), 2),
        ),
        demo.row(
            "transient, exhausted",
            "incoming/orders/slow-2.csv",
            good,
            "FAILED / FAILED",
            before=fail_next(StorageUnavailableError("SlowDown"), 10),
        ),
        demo.row(  # a real refusal, not an injected one: the role may not use this key
            "access denied (KMS)",
            "incoming/orders/own-key.csv",
            good,
            "FAILED / FAILED",
            run=demo.uploaders_own_key,
        ),
        demo.row(
            "duplicate delivery",
            "incoming/orders/twice.csv",
            good,
            "SUCCEEDED / SUCCEEDED",
            run=demo.duplicate,
        ),
        demo.row(
            "failed delivery -> DLQ",
            "incoming/orders/undelivered.csv",
            good,
            "- / no",
            run=demo.undeliverable,
        ),
    ]


def render(rows: list[Row]) -> str:
    headers = [
        "",
        "Scenario",
        "Object",
        "DynamoDB state",
        "Attempts",
        "Notifications",
        "DLQ",
        "Transitions",
        "$ / 1M objects",
        "Path through the states",
    ]
    table = [
        [
            "ok" if r.ok else "NO",
            r.scenario,
            r.object.removeprefix("incoming/"),
            r.state,
            r.attempts,
            r.notifications,
            r.dead_letters,
            str(r.transitions),
            f"{r.cost_per_million:,.2f}",
            " → ".join(r.path),
        ]
        for r in rows
    ]
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(headers)]
    numeric = {7, 8}

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, table)])


@contextlib.contextmanager
def _environment(name: str, value: str | None) -> Iterator[None]:
    """``name=value`` while the block runs (nothing when ``value`` is None)."""
    saved = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if value is not None:
            os.environ.pop(name, None) if saved is None else os.environ.__setitem__(name, saved)


def run_demo(
    template: Path = TEMPLATE,
    *,
    as_json: bool = False,
    workflow_type: str | None = None,
    iam_report: bool = False,
) -> int:
    def progress(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    started = time.perf_counter()
    progress(f"starting the local cloud from {template.name} (moto, in-process, no Docker) ...")
    LOG_FILE.parent.mkdir(exist_ok=True)
    # The Lambdas log JSON to stdout, as on AWS; here that goes to a file, the table to stdout.
    iam_log = LOG_FILE.parent / "demo-iam"
    if iam_report:
        shutil.rmtree(iam_log, ignore_errors=True)
    with (
        _environment(report.LOG_VARIABLE, str(iam_log) if iam_report else None),
        LOG_FILE.open("w") as logs,
        contextlib.redirect_stdout(logs),
        app_cloud(
            template, parameters={"WorkflowType": workflow_type} if workflow_type else None
        ) as cloud,
    ):
        kind = cloud.outputs.get("WorkflowType", "STANDARD")
        progress(
            f"deployed stack {cloud.stack_name} ({kind} per-object workflow) in "
            f"{time.perf_counter() - started:.1f}s; uploading samples:"
        )
        rows = run_scenarios(cloud, progress)
        cloud.settle()
        bucket = cloud.outputs["IngestBucketName"]
    elapsed = time.perf_counter() - started
    if as_json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        print()
        print(
            f"bucket s3://{bucket}  ·  every run from S3 PutObject → EventBridge → Step Functions"
        )
        print(render(rows))
        print(
            f"\n{sum(r.ok for r in rows)}/{len(rows)} scenarios ended as expected in "
            f"{elapsed:.1f}s (virtual clock: retries and backoff take no real time).\n"
            f"Lambda logs: {LOG_FILE.relative_to(ROOT)}"
        )
    if iam_report:
        from localcloud.stack import load_template

        print("\nIAM: what each statement of the template allowed in this run\n")
        print(report.render(report.merge(iam_log, template), load_template(template)))
    return 0 if all(r.ok for r in rows) else 1


def main(argv: list[str] | None = None) -> int:
    args: Any = argv if argv is not None else sys.argv[1:]
    kind = next((a.split("=", 1)[1] for a in args if a.startswith("--workflow-type=")), None)
    return run_demo(as_json="--json" in args, workflow_type=kind)


if __name__ == "__main__":
    raise SystemExit(main())
