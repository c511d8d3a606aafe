"""`make demo`: every workflow path through the local cloud, from an S3 upload to the end.

Starts the local cloud from template.yaml, uploads the sample files of events/files/ so that
each path is taken (faults injected at the boundaries, never inside the Lambdas), waits for
each, and prints one table: object, execution status, final state in DynamoDB, attempts,
notifications, dead-letter messages, state transitions, cost per million and the path through
the states.

Each scenario of ``SCENARIOS`` declares, once, the ``Outcome`` it expects; its run measures
the same ``Outcome``. The table prints each compared column (``COMPARED``) from the measured
one, and the verdict compares that same text with the expected one's: a row that differs is
marked ``!!``, the columns that differ are listed (expected, then got) and the command exits
1. Transitions and cost are measurements, not expectations (cost varies with the Lambdas'
durations), shown beside them.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import boto3

from ingest_pipeline.dal import contracts
from ingest_pipeline.errors import StorageUnavailableError
from ingest_pipeline.logic.contracts import parse_contract
from ingest_tools.cli_errors import CommandError
from ingest_tools.cost import S3Counter, measure
from ingest_tools.local_pipeline import ROOT, TEMPLATE, Execution, Pipeline, app_cloud
from localcloud.cloud import LocalCloud
from localcloud.iam import report

__all__ = ["COMPARED", "SCENARIOS", "Outcome", "Row", "Scenario", "run_demo", "run_scenarios"]

FILES = ROOT / "events" / "files"
LOG_FILE = ROOT / ".localcloud" / "demo-lambda-logs.jsonl"


@dataclass(frozen=True)
class Outcome:
    """How a scenario ended, column by column: the one it expects (``Scenario.expect``) or
    the one its run showed (``Row.got``)."""

    execution: str  # the execution's status; "-": none started
    state: str  # the DynamoDB record's status (error class, retryable); "no record"
    path: tuple[str, ...]  # states entered (_path); (): no execution
    claims: int = 1  # the record's attempt counter
    delivery_attempts: int = 1  # EventBridge's attempts to deliver the upload's event
    notifications: Mapping[str, int] = field(default_factory=dict)  # topic -> messages
    dead_letters: Mapping[str, int] = field(default_factory=dict)  # ERROR_CODE -> messages


@dataclass(frozen=True)
class Column:
    """A compared column: its header and its text for an Outcome, expected or got."""

    header: str
    cell: Callable[[Outcome], str]


def _counts(counts: Mapping[str, int], text: Callable[[str, int], str]) -> str:
    return ", ".join(text(name, n) for name, n in sorted(counts.items()) if n) or "-"


def _attempts(outcome: Outcome) -> str:
    claims = f"{outcome.claims} claim{'' if outcome.claims == 1 else 's'}"
    if outcome.delivery_attempts == 1:
        return claims
    return f"{claims}, {outcome.delivery_attempts} deliveries"


# The columns the verdict compares, in the table's order (the path last: the widest).
COMPARED = (
    Column("Execution", lambda o: o.execution),
    Column("DynamoDB state", lambda o: o.state),
    Column("Attempts", _attempts),
    Column("Notifications", lambda o: _counts(o.notifications, lambda t, n: f"{t}×{n}")),
    Column("DLQ", lambda o: _counts(o.dead_letters, lambda code, n: f"{n} ({code})")),
    Column("Path through the states", lambda o: " → ".join(o.path) or "(no execution)"),
)


@dataclass(frozen=True)
class Difference:
    column: str
    expected: str
    got: str


@dataclass
class Row:
    scenario: str
    object: str
    expected: Outcome
    got: Outcome
    transitions: int
    cost_per_million: float

    @property
    def differences(self) -> list[Difference]:
        """The compared columns whose text differs from the expected one's."""
        return [
            Difference(c.header, c.cell(self.expected), c.cell(self.got))
            for c in COMPARED
            if c.cell(self.expected) != c.cell(self.got)
        ]

    @property
    def ok(self) -> bool:
        return not self.differences


def _path(run: Execution) -> tuple[str, ...]:
    """States entered, a task state retried shown as Name×attempts."""
    out: list[str] = []
    counts: dict[int, int] = {}
    for event in run.history:
        if event["type"].endswith("StateEntered"):
            out.append(event["stateEnteredEventDetails"]["name"])
        elif event["type"] == "TaskScheduled" and out:
            counts[len(out) - 1] = counts.get(len(out) - 1, 0) + 1
    return tuple(f"{n}×{counts[i]}" if counts.get(i, 0) > 1 else n for i, n in enumerate(out))


def _state(record: Mapping[str, Any]) -> str:
    state = str(record.get("status", "no record"))
    if record.get("error_class"):
        state += f" ({record['error_class']}{', retryable' if record.get('retryable') else ''})"
    return state


Run = Callable[["_Demo", str, bytes], tuple[str, Execution | None]]


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

    def _notifications(self) -> dict[str, int]:
        """Messages each topic sent since the last call (its inbox is emptied); none: {}."""
        sent = {
            "operations": len(self.p.notifications("OperationsTopicArn")),
            "data-quality": len(self.p.notifications("DataQualityTopicArn")),
        }
        return {topic: n for topic, n in sent.items() if n}

    def row(self, scenario: Scenario) -> Row:
        self.progress(f"  {scenario.name:<28} s3://…/{scenario.key}")
        key, dlq_before = scenario.key, self._dlq_depth()
        version, execution, error = "", None, ""
        try:
            if scenario.before:
                scenario.before(self.cloud)
            with S3Counter() as s3:
                self.s3 = s3
                version, execution = scenario.run(self, key, scenario.body())
        except Exception as exc:  # shown in its row; the other scenarios still run
            error = f"{type(exc).__name__}: {exc}".splitlines()[0][:120]
        finally:
            self.cloud.faults.clear()  # faults armed for this scenario end with it
        record = (self.p.record(key, version) if version else None) or {}
        deliveries = self.p.deliveries_for(key, version or None)
        dead = self._dlq_depth() - dlq_before
        first = deliveries[0] if deliveries else None  # the upload's own event
        cost, transitions = 0.0, 0
        if execution is not None:
            measured = measure(scenario.name, execution, self.memory, s3.ops)
            # Express bills requests and duration, Standard each transition (cost.py).
            prices = measured.per_million_express if self.express else measured.per_million
            cost, transitions = sum(prices.values()), measured.transitions
        got = Outcome(
            execution="error" if error else execution.status if execution else "-",
            state=_state(record),
            path=(f"({error})",) if error else _path(execution) if execution else (),
            claims=int(record.get("attempt", 0)),
            delivery_attempts=first.attempts if first else 0,
            notifications=self._notifications(),
            dead_letters={str(first.error_code if first else None): dead} if dead else {},
        )
        return Row(scenario.name, key, scenario.expect, got, transitions, round(cost, 2))

    def ingest(self, key: str, body: bytes) -> tuple[str, Execution | None]:
        return self.p.ingest(key, body)

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


@dataclass(frozen=True)
class Scenario:
    """One path of the demo: what is uploaded and how, and the Outcome it must end with."""

    name: str
    key: str
    body: Callable[[], bytes]
    expect: Outcome
    run: Run = _Demo.ingest
    before: Callable[[LocalCloud], None] | None = None  # faults armed for this scenario


def _sample(name: str, *, compress: bool = False) -> Callable[[], bytes]:
    def read() -> bytes:
        data = (FILES / name).read_bytes()
        return gzip.compress(data, mtime=0) if compress else data

    return read


def _slow_down(times: int) -> Callable[[LocalCloud], None]:
    """ProcessFunction raises S3's SlowDown ``times`` times (a transient error)."""
    return lambda cloud: cloud.fail_next(
        "ProcessFunction", StorageUnavailableError("SlowDown"), times=times
    )


_GOOD = _sample("orders-good.csv")
_PROCESSED = ("ClaimObject", "ProcessObject", "RecordSuccess")
SCENARIOS = (
    Scenario(
        "good file",
        "incoming/orders/2026-11-21.csv",
        _GOOD,
        Outcome("SUCCEEDED", "SUCCEEDED", _PROCESSED),
    ),
    Scenario(
        "bad data",
        "incoming/orders/bad-values.csv",
        _sample("orders-bad-values.csv"),
        Outcome(
            "FAILED",
            "FAILED (PERMANENT)",
            (
                "ClaimObject",
                "ProcessObject",
                "QuarantineObject",
                "RecordRejection",
                "NotifyDataQuality",
                "FailExecution",
            ),
            notifications={"data-quality": 1},
        ),
    ),
    Scenario(
        "gzip file",
        "incoming/orders/2026-11-22.csv.gz",
        _sample("orders-good.csv", compress=True),
        Outcome("SUCCEEDED", "SUCCEEDED", _PROCESSED),
    ),
    Scenario(
        "dataset added at run time",
        "incoming/shipments/2026-11-27.csv",
        _sample("shipments.csv"),
        Outcome("SUCCEEDED", "SUCCEEDED", _PROCESSED),
        run=_Demo.new_dataset,
    ),
    Scenario(
        "transient, recovers",
        "incoming/orders/slow-1.csv",
        _GOOD,
        Outcome("SUCCEEDED", "SUCCEEDED", ("ClaimObject", "ProcessObject×3", "RecordSuccess")),
        before=_slow_down(2),
    ),
    Scenario(
        "transient, exhausted",
        "incoming/orders/slow-2.csv",
        _GOOD,
        Outcome(
            "FAILED",
            "FAILED (TRANSIENT, retryable)",
            (
                "ClaimObject",
                "ProcessObject×4",
                "DescribeTransientFailure",
                "RecordRetryableFailure",
                "FailExecution",
            ),
        ),
        before=_slow_down(10),
    ),
    Scenario(  # a real refusal, not an injected one: the role may not use this key
        "access denied (KMS)",
        "incoming/orders/own-key.csv",
        _GOOD,
        Outcome(
            "FAILED",
            "FAILED (CONFIGURATION)",
            (
                "ClaimObject",
                "ProcessObject",
                "DescribeConfigurationFailure",
                "RecordConfigurationFailure",
                "NotifyOperations",
                "FailExecution",
            ),
            notifications={"operations": 1},
        ),
        run=_Demo.uploaders_own_key,
    ),
    Scenario(  # the second execution's path; the object was claimed once
        "duplicate delivery",
        "incoming/orders/twice.csv",
        _GOOD,
        Outcome("SUCCEEDED", "SUCCEEDED", ("ClaimObject", "SkipDuplicateObject")),
        run=_Demo.duplicate,
    ),
    Scenario(  # THROTTLING is retryable: template.yaml's RetryPolicy retries it 185 times
        "failed delivery -> DLQ",
        "incoming/orders/undelivered.csv",
        _GOOD,
        Outcome(
            "-",
            "no record",
            (),
            claims=0,
            delivery_attempts=186,
            dead_letters={"THROTTLING": 1},
        ),
        run=_Demo.undeliverable,
    ),
)


def select(names: Collection[str] = ()) -> list[Scenario]:
    """The scenarios named (all of them when none is), in the demo's order."""
    unknown = sorted(set(names) - {s.name for s in SCENARIOS})
    if unknown:
        known = ", ".join(repr(s.name) for s in SCENARIOS)
        raise CommandError(f"--scenario {unknown[0]!r}: no such scenario (one of {known})")
    return [s for s in SCENARIOS if not names or s.name in names]


def run_scenarios(
    cloud: LocalCloud,
    progress: Callable[[str], None] = lambda _: None,
    scenarios: Collection[Scenario] = SCENARIOS,
) -> list[Row]:
    demo = _Demo(cloud, progress)
    return [demo.row(scenario) for scenario in scenarios]


def render(rows: list[Row]) -> str:
    compared = [c.header for c in COMPARED]
    headers = ["", "Scenario", "Object", *compared[:-1], "Transitions", "$ / 1M objects"]
    headers.append(compared[-1])
    numeric = {len(headers) - 3, len(headers) - 2}

    def cells(r: Row) -> list[str]:
        got = [c.cell(r.got) for c in COMPARED]
        mark = "ok" if r.ok else "!!"
        measured = [str(r.transitions), f"{r.cost_per_million:,.2f}"]
        return [mark, r.scenario, r.object.removeprefix("incoming/"), *got[:-1], *measured, got[-1]]

    table = [cells(r) for r in rows]
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, table)])


def differences(rows: list[Row]) -> list[str]:
    """Each difference of each row marked !!: the scenario, the column, expected and got."""
    out: list[str] = []
    for r in rows:
        for d in r.differences:
            out += [f"!! {r.scenario}: {d.column}", f"     expected  {d.expected}"]
            out.append(f"     got       {d.got}")
    return out


def verdict(rows: list[Row], elapsed: float) -> str:
    ok = sum(r.ok for r in rows)
    text = (
        f"{ok}/{len(rows)} scenarios ended as expected in {elapsed:.1f}s "
        "(virtual clock: retries and backoff take no real time)."
    )
    return (
        text if ok == len(rows) else f"{text} {len(rows) - ok} did not (!! above): exit status 1."
    )


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
    scenarios: Collection[str] = (),
    lambda_logs: Path = LOG_FILE,
) -> int:
    """Deploy ``template``, run the ``scenarios`` named (all by default), print the table and
    the verdict; 0 when every row ended as its scenario expects, 1 otherwise."""

    def progress(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    chosen = select(scenarios)
    started = time.perf_counter()
    progress(f"starting the local cloud from {template.name} (moto, no Docker; "
             "functions in environment processes)")  # fmt: skip
    lambda_logs.parent.mkdir(parents=True, exist_ok=True)
    # The Lambdas log JSON to stdout, as on AWS; here that goes to a file, the table to stdout.
    iam_log = LOG_FILE.parent / "demo-iam"
    if iam_report:
        shutil.rmtree(iam_log, ignore_errors=True)
    with (
        _environment(report.LOG_VARIABLE, str(iam_log) if iam_report else None),
        lambda_logs.open("w") as logs,
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
        rows = run_scenarios(cloud, progress, chosen)
        cloud.settle()
        bucket = cloud.outputs["IngestBucketName"]
    elapsed = time.perf_counter() - started
    if as_json:
        print(json.dumps([_json(r) for r in rows], indent=2))
    else:
        print()
        print(
            f"bucket s3://{bucket}  ·  every run from S3 PutObject → EventBridge → Step Functions"
        )
        print(render(rows))
        found = differences(rows)
        print("\n".join(["", *found, *([""] if found else []), verdict(rows, elapsed)]))
        print(f"Lambda logs: {_shown(lambda_logs)}")
    if iam_report:
        from localcloud.stack import load_template

        print("\nIAM: what each statement of the template allowed in this run\n")
        print(report.render(report.merge(iam_log, template), load_template(template)))
    return 0 if all(r.ok for r in rows) else 1


def _json(row: Row) -> dict[str, Any]:
    return {**asdict(row), "ok": row.ok, "differences": [asdict(d) for d in row.differences]}


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def main(argv: list[str] | None = None) -> int:
    args: Any = argv if argv is not None else sys.argv[1:]
    kind = next((a.split("=", 1)[1] for a in args if a.startswith("--workflow-type=")), None)
    return run_demo(as_json="--json" in args, workflow_type=kind)


if __name__ == "__main__":
    raise SystemExit(main())
