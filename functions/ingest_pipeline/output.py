"""The output under ``processed/``: its content type, the summary a superseded version
reports, and the logs and metrics of a written or rejected object. Shared by ProcessObject
(one Lambda) and AssembleOutput (the large-file path); which version may write the output is
``ingest_pipeline.versions``."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from ingest_pipeline.config import Settings
from ingest_pipeline.errors import DataError, ErrorClass
from ingest_pipeline.logic.contracts import Registered
from ingest_pipeline.logic.transform import Summary
from ingest_pipeline.models import ObjectRef, Outcome
from ingest_pipeline.observability import logger, metrics

CONTENT_TYPE = "application/x-ndjson"


def superseded(
    obj: ObjectRef, settings: Settings, out_key: str, newer_version: str, registered: Registered
) -> dict[str, Any]:
    logger.info("object superseded", output_key=out_key, superseded_by=newer_version)
    metrics.add_metric(name="ObjectsSuperseded", unit=MetricUnit.Count, value=1)
    return {
        **Summary(dataset=registered.contract.dataset).to_dict(),
        "sourceKey": obj.key,
        "outputKey": out_key,
        "outcome": Outcome.SUPERSEDED.value,
        "supersededBy": newer_version,
        "expiresAt": expires_at(settings),
        "contractVersion": registered.version,
    }


def expires_at(settings: Settings) -> str:
    """The state record's TTL (epoch seconds, a string as DynamoDB's N type wants it)."""
    moment = datetime.now(UTC) + timedelta(days=settings.failure_policy.record_retention_days)
    return str(int(moment.timestamp()))


def log_rejected(exc: DataError) -> None:
    """Bad data: the metric and the log line the dashboard and the saved queries read."""
    metrics.add_metric(name="ObjectsRejected", unit=MetricUnit.Count, value=1)
    logger.warning(
        "object rejected",
        error=type(exc).__name__,
        error_class=ErrorClass.PERMANENT.value,
        error_code=exc.code,
        line=exc.line,
        cause=exc.message,
    )


def log_processed(summary: dict[str, Any], started: float) -> None:
    """A written output: its metrics and the log line (``duration_ms``: the saved query
    "slowest objects" sorts on it) since ``started`` (``time.monotonic()``)."""
    if summary["outcome"] != Outcome.PROCESSED:
        return
    metrics.add_metric(name="ObjectsProcessed", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="RowsProcessed", unit=MetricUnit.Count, value=summary["rows"])
    duration_ms = round((time.monotonic() - started) * 1000)
    fields = {k: v for k, v in summary.items() if k != "plan"}
    logger.info("object processed", duration_ms=duration_ms, **fields)
