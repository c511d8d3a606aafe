"""Cost of one workflow run, from its execution history (us-east-1 list prices).

Billed state transitions (states entered + retries), Lambda requests and GB-seconds (task
durations x the function's memory), DynamoDB writes/reads and SNS publishes come from the
history; S3 requests from ``S3Counter`` (a hook on the handlers' S3 client).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ingest_tools.localcloud.pipeline import Execution

__all__ = ["PRICES", "PathCost", "S3Counter", "measure"]

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
