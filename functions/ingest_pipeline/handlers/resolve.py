"""ResolveObjectVersion: give a trigger that named no version the identity of the object.

Runs only when the execution input has no usable ``object.versionId`` (an unversioned bucket,
a hand-built or converted event: see ``logic.identity``). HeadObject says which write is the
current object; its version id is the identity, or, in an unversioned bucket, a content
version built from its ETag and Last-Modified time. The trigger's sequencer belonged to the
write it was sent for, which may not be the current one, so it is dropped.

Input: the execution state (``{"object": {...}, ...}``); output: the resolved ``object``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ingest_pipeline import versions
from ingest_pipeline.dal import s3
from ingest_pipeline.errors import ObjectNotFoundError
from ingest_pipeline.models import ObjectRef, ResolveRequest, parse_event
from ingest_pipeline.observability import bind_object, handler_imported, logger, tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse_event(event, ResolveRequest)
    bind_object(request.object, request.execution_arn, 0)
    resolved = resolve(request.object)
    logger.info("object version resolved", resolved_version_id=resolved["versionId"])
    return resolved


def resolve(obj: ObjectRef) -> dict[str, Any]:
    head = s3.head_object(obj.bucket, obj.key)
    if head is None:
        raise ObjectNotFoundError(
            f"s3://{obj.bucket}/{obj.key} does not exist (deleted before it was processed): "
            "there is no version to process"
        )
    version = versions.resolved_version(head.version_id, head.etag, head.last_modified)
    return {"bucket": obj.bucket, "key": obj.key, "versionId": version}


handler_imported(__name__)  # last: freezes what the import made (a cold start)
