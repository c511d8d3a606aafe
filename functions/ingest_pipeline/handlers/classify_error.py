"""ClassifyError / Describe*Failure: turn a caught error into a failure report.

Typed errors arrive with ``errorClass`` already decided by the state machine's Catch
(routed by name); other errors are classified by ``logic.classify.RULES``. The report
is what the state machine records in DynamoDB and sends to on-call people.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from ingest_pipeline.config import Settings
from ingest_pipeline.logic.classify import Classification, classify
from ingest_pipeline.logic.failure import CaughtError, build_report
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
    report = describe(request, Settings.from_env(), datetime.now(UTC))
    metrics.add_dimension(name="ErrorClass", value=report["errorClass"])
    metrics.add_metric(name="ObjectsFailed", unit=MetricUnit.Count, value=1)
    logger.info(
        "failure classified",
        error=report["error"],
        error_class=report["errorClass"],
        error_code=report["code"],
        cause=report["cause"],
    )
    return report


def describe(
    request: FailureRequest,
    settings: Settings,
    now: datetime,
    *,
    quarantine_key: str | None = None,
) -> dict[str, Any]:
    caught = CaughtError(name=request.error.error, cause=request.error.cause)
    classification = classify(caught.name)
    if request.error_class is not None and request.error_class is not classification.error_class:
        # The Catch that routed this error decided its class by name; keep its decision.
        classification = Classification(request.error_class, "routed by the workflow", "catch")
    return build_report(
        bucket=request.object.bucket,
        key=request.object.key,
        version_id=request.object.version_id,
        error=caught,
        classification=classification,
        attempt=request.attempt,
        execution_arn=request.execution_arn,
        now=now,
        policy=settings.failure_policy,
        quarantine_key=quarantine_key,
    )


handler_imported(__name__)  # last: freezes what the import made (a cold start)
