"""ProcessObject: validate one CSV object against its dataset contract and write JSON Lines.

Input (from the state machine): ``{"object": {...}, "attempt": 1, "executionArn": "..."}``.
Output: a small summary (rows, bytes, checksum, output key). Errors are typed
(``ingest_pipeline.errors``) so the state machine can route them by name.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from ingest_pipeline.config import Settings
from ingest_pipeline.dal import s3
from ingest_pipeline.errors import DataError
from ingest_pipeline.logic import keys
from ingest_pipeline.logic.contracts import load_contract
from ingest_pipeline.logic.transform import Summary, convert
from ingest_pipeline.models import ProcessRequest, parse_event
from ingest_pipeline.observability import bind_object, logger, metrics, tracer


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse_event(event, ProcessRequest)
    bind_object(request.object, request.execution_arn, request.attempt)
    try:
        summary = process(request, Settings.from_env())
    except DataError as exc:
        metrics.add_metric(name="ObjectsRejected", unit=MetricUnit.Count, value=1)
        logger.warning("object rejected", error_code=exc.code, line=exc.line, error=exc.message)
        raise
    metrics.add_metric(name="ObjectsProcessed", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="RowsProcessed", unit=MetricUnit.Count, value=summary["rows"])
    logger.info("object processed", **summary)
    return summary


def process(request: ProcessRequest, settings: Settings) -> dict[str, Any]:
    obj = request.object
    dataset = keys.dataset_of(obj.key)
    contract = load_contract(dataset)
    opened = s3.open_object(obj.bucket, obj.key, obj.version_id)
    out_key = keys.output_key(opened.key)
    summary = Summary(dataset=dataset)
    with opened.body:
        lines = convert(opened.body, contract, summary, max_line_bytes=settings.max_line_bytes)
        s3.upload_stream(
            obj.bucket,
            out_key,
            lines,
            content_type="application/x-ndjson",
            metadata={
                "source-key": opened.key,
                "source-version-id": opened.version_id or "null",
                "execution-arn": request.execution_arn,
            },
        )
    expires_at = datetime.now(UTC) + timedelta(days=settings.failure_policy.record_retention_days)
    return {
        **summary.to_dict(),
        "sourceKey": opened.key,
        "outputKey": out_key,
        # The state record's TTL (epoch seconds, a string as DynamoDB's N type wants it).
        "expiresAt": str(int(expires_at.timestamp())),
    }
