"""Cost of one workflow run, from its execution history (us-east-1 list prices).

Billed state transitions (states entered + retries), Lambda requests and GB-seconds (task
durations x the function's memory), DynamoDB writes/reads and SNS publishes come from the
history; S3 requests from ``S3Counter`` (a hook on the handlers' S3 client).

The same run is priced as both workflow types: a STANDARD workflow bills its state
transitions, an EXPRESS one its requests and its billed duration x billed memory
(``PathCost.express_*``). Lambda, DynamoDB, SNS and S3 cost the same under both. Only
GetExecutionHistory's event fields are read (type, id, previousEventId, timestamp,
*EventDetails), so a real Express run's history, rebuilt from its CloudWatch Logs in that
shape, is measured the same way.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ingest_tools.local_pipeline import Execution

__all__ = [
    "EXPRESS_BILLING_INCREMENT_MS",
    "EXPRESS_MEMORY_MB",
    "PRICES",
    "PathCost",
    "S3Counter",
    "execution_duration_ms",
    "express_billed_ms",
    "express_memory_estimate_mb",
    "measure",
]

# USD, us-east-1 list prices (checked 2026-11; see shared NOTES.md).
# Step Functions Express (https://aws.amazon.com/step-functions/pricing/, "Express Workflows
# pricing details" and its examples): $1.00 per million requests, a request being each start
# of an execution; duration $0.00001667 per GB-second ($0.0600 per GB-hour) for the first
# 1,000 GB-hours a month ($0.03 next 4,000, $0.01642 beyond; a million happy-path runs use
# ~3.5 GB-hours, so the first tier applies). "Duration is calculated from the time your
# workflow begins executing until it completes or otherwise terminates, rounded up to the
# nearest 100ms, and the amount of memory used [...], billed in 64-MB chunks." (The Step
# Functions workshop's nesting example agrees: $0.000001 per request, $0.0000001042 per
# 100 ms at 64 MB = $0.00001667 per GB-second.) No free tier for Express.
PRICES = {
    "transition": 0.025 / 1000,  # Step Functions Standard, per state transition
    "express_request": 1.00 / 1e6,  # Step Functions Express, per execution started
    "express_gb_second": 0.00001667,  # Express duration x memory, first 1,000 GB-hours
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

#: Express bills duration in increments of 100 ms, rounded up (see PRICES).
EXPRESS_BILLING_INCREMENT_MS = 100
#: Express bills memory in 64-MB chunks. AWS's estimate of a workflow's memory is 50 MB +
#: the definition's size + the execution data's size x the number of Parallel or Map steps
#: (pricing page, examples 3 and 4): our definition is ~44 KB and our states carry a few KB,
#: with no Map or Parallel on these paths: ~50.1 MB, the first chunk. (A Map or Parallel
#: state would need its own estimate.) The report checks the estimate on every run.
EXPRESS_MEMORY_MB = 64
#: AWS's fixed part of that estimate, MB.
EXPRESS_BASE_MEMORY_MB = 50


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
    #: ExecutionStarted to the history's last event, ms (the run's own clock).
    duration_ms: float = 0.0
    #: Retry backoff and Wait states the history's timestamps leave out (the local cloud runs
    #: them on a virtual clock), ms; 0 for a history from AWS.
    waits_ms: float = 0.0
    #: Express requests: one per execution started (no path here starts child executions).
    express_requests: int = 1

    @property
    def express_billed_ms(self) -> int:
        return express_billed_ms(self.duration_ms + self.waits_ms)

    @property
    def express_gb_seconds(self) -> float:
        return self.express_billed_ms / 1000 * EXPRESS_MEMORY_MB / 1024

    @property
    def per_million(self) -> dict[str, float]:
        """USD per million runs of this path as a STANDARD workflow, by service."""
        return self._per_million(self.transitions * PRICES["transition"])

    @property
    def per_million_express(self) -> dict[str, float]:
        """USD per million runs of this path as an EXPRESS workflow: only the Step Functions
        part differs (requests + billed GB-seconds instead of transitions)."""
        return self._per_million(
            self.express_requests * PRICES["express_request"]
            + self.express_gb_seconds * PRICES["express_gb_second"]
        )

    def _per_million(self, step_functions: float) -> dict[str, float]:
        p = PRICES
        parts = {
            "Step Functions": step_functions,
            "Lambda": self.lambda_invocations * p["lambda_request"]
            + self.lambda_gb_seconds * p["lambda_gb_second"],
            "DynamoDB": self.ddb_writes * p["ddb_write"] + self.ddb_reads * p["ddb_read"],
            "SNS": self.sns_publishes * p["sns_publish"],
            "S3": self.s3_puts * p["s3_put"] + self.s3_gets * p["s3_get"],
        }
        return {k: v * 1e6 for k, v in parts.items()}


def execution_duration_ms(history: list[dict[str, Any]]) -> float:
    """ExecutionStarted to the last event (the latest timestamp), in ms."""
    started = next(e for e in history if e["type"] == "ExecutionStarted")
    end = max(_ts(e) for e in history)
    return (end - _ts(started)).total_seconds() * 1000


def express_billed_ms(duration_ms: float) -> int:
    """Express billed duration: rounded up to the next 100 ms (at least one increment)."""
    increment = EXPRESS_BILLING_INCREMENT_MS
    # round() first: float noise (300.0000001 ms) must not bill another increment
    return max(1, math.ceil(round(duration_ms, 3) / increment)) * increment


def express_memory_estimate_mb(definition_bytes: int, history: list[dict[str, Any]]) -> float:
    """AWS's estimate of an Express workflow's memory (pricing page, examples 3 and 4):
    50 MB + the definition + the largest state input or output in the history (no Map or
    Parallel state)."""
    payloads = [
        len(str(details.get(field, "")).encode())
        for e in history
        for key, details in e.items()
        if key.endswith("EventDetails") and isinstance(details, dict)
        for field in ("input", "output")
    ]
    return EXPRESS_BASE_MEMORY_MB + (definition_bytes + max(payloads, default=0)) / 1024**2


def measure(
    name: str,
    run: Execution,
    memory_mb: dict[str, int],
    s3_ops: Counter[str],
    *,
    waits_ms: float = 0.0,
) -> PathCost:
    """``waits_ms``: Retry backoff and Wait states that ``run.history``'s timestamps do not
    show (the local cloud's virtual clock skips them); 0 for a history from AWS."""
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
        duration_ms=execution_duration_ms(history),
        waits_ms=waits_ms,
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


class S3Counter:
    """Counts S3 API calls made through the handlers' client (``ingest_pipeline.dal.s3``)."""

    def __init__(self) -> None:
        self.ops: Counter[str] = Counter()

    def _count(self, model: Any, **_: Any) -> None:
        self.ops[model.name] += 1

    def __enter__(self) -> S3Counter:
        from ingest_pipeline.dal.s3 import s3_client

        s3_client().meta.events.register("before-call.s3", self._count)
        return self

    def __exit__(self, *exc: object) -> None:
        from ingest_pipeline.dal.s3 import s3_client

        s3_client().meta.events.unregister("before-call.s3", self._count)
