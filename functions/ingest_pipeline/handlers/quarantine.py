"""QuarantineObject: copy a rejected object to ``quarantine/`` with the reason attached.

The copy keeps the original bytes and carries the error class, code and execution in its
metadata; a ``<key>.reason.json`` object beside it holds the full failure report. Returns
the failure report (class PERMANENT) for the state machine to record and send.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from ingest_pipeline.config import Settings
from ingest_pipeline.dal import s3
from ingest_pipeline.errors import ErrorClass, ObjectNotFoundError
from ingest_pipeline.logic import keys
from ingest_pipeline.logic.failure import describe
from ingest_pipeline.models import FailureRequest, parse_event
from ingest_pipeline.observability import bind_object, handler_imported, logger, metrics, tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse_event(event, FailureRequest)
    bind_object(request.object, request.execution_arn, request.attempt)
    report = quarantine(request, Settings.from_env(), datetime.now(UTC))
    metrics.add_metric(name="ObjectsQuarantined", unit=MetricUnit.Count, value=1)
    logger.warning(
        "object quarantined",
        quarantine_key=report["quarantineKey"],
        error=report["error"],
        error_class=report["errorClass"],
        error_code=report["code"],
        cause=report["cause"],
    )
    return report


def quarantine(request: FailureRequest, settings: Settings, now: datetime) -> dict[str, Any]:
    obj = request.object
    request = request.with_error_class(ErrorClass.PERMANENT)
    dest = keys.quarantine_key(obj.key)
    report = describe(request, settings.failure_policy, now, quarantine_key=dest)
    try:
        s3.copy_object(
            obj.bucket,
            obj.key,
            obj.version_id,
            dest,
            metadata={
                "error-class": report["errorClass"],
                "error-code": report["code"],
                "source-key": obj.key,
                "source-version-id": obj.version_id or "null",
                "execution-arn": request.execution_arn,
                "cause": report["cause"],
            },
        )
    except ObjectNotFoundError:
        # Nothing left to keep: the report says so instead of failing the quarantine.
        report = describe(request, settings.failure_policy, now, quarantine_key=None)
        return report
    s3.put_json(obj.bucket, f"{dest}.reason.json", report["message"])
    return report


handler_imported(__name__)  # last: freezes what the import made (a cold start)
