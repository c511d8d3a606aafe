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
    report = describe(request, Settings.from_env().failure_policy, datetime.now(UTC))
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


handler_imported(__name__)  # last: freezes what the import made (a cold start)
