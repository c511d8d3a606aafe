"""Powertools Logger, Tracer and Metrics shared by every handler.

Service name and metrics namespace come from POWERTOOLS_SERVICE_NAME and
POWERTOOLS_METRICS_NAMESPACE (set in template.yaml's Globals).
"""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, Metrics, Tracer

from ingest_pipeline.logic.keys import correlation_id
from ingest_pipeline.models import ObjectRef

logger = Logger()
tracer = Tracer()
# The template sets POWERTOOLS_METRICS_NAMESPACE; the default keeps direct invocations valid.
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "S3IngestPipeline"))


def bind_object(obj: ObjectRef, execution_arn: str, attempt: int) -> None:
    """Every log line of this invocation carries the object and the execution."""
    logger.set_correlation_id(correlation_id(obj.bucket, obj.key, obj.version_id))
    logger.append_keys(
        bucket=obj.bucket,
        object_key=obj.key,
        version_id=obj.version_id,
        execution_arn=execution_arn,
        attempt=attempt,
    )
    tracer.put_annotation("object_key", obj.key)
