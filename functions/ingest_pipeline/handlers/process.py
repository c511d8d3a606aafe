"""ProcessObject: validate one CSV object against its dataset contract and write JSON Lines.

Input (from the state machine): ``{"object": {...}, "attempt": 1, "executionArn": "..."}``.
Output: a small summary (rows, bytes, checksum, output key). Errors are typed
(``ingest_pipeline.errors``) so the state machine can route them by name.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ingest_pipeline import output
from ingest_pipeline.config import LargeObjectSettings, Settings
from ingest_pipeline.dal import s3
from ingest_pipeline.errors import (
    DataError,
    InvalidEventError,
    ObjectTooLargeError,
    TransientError,
)
from ingest_pipeline.logic import identity, keys
from ingest_pipeline.logic.contracts import load_contract
from ingest_pipeline.logic.deadline import TimeBudget
from ingest_pipeline.logic.transform import Summary, convert
from ingest_pipeline.models import Outcome, ProcessRequest, Route, parse_event
from ingest_pipeline.observability import bind_object, logger, metrics, tracer


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse_event(event, ProcessRequest)
    bind_object(request.object, request.execution_arn, request.attempt)
    started = time.monotonic()
    try:
        summary = process(
            request,
            Settings.from_env(),
            remaining_ms=context.get_remaining_time_in_millis,
            large=LargeObjectSettings.from_env(),
        )
    except DataError as exc:
        output.log_rejected(exc)
        raise
    output.log_processed(summary, started)
    return summary


def process(
    request: ProcessRequest,
    settings: Settings,
    *,
    remaining_ms: Callable[[], int] | None = None,
    large: LargeObjectSettings | None = None,
) -> dict[str, Any]:
    """Convert one object version, unless a newer version of the key already owns the output.

    Newest version wins: the output under ``processed/`` carries the identity of the version
    it was made from (metadata ``source-version-id`` / ``source-sequencer``). An older version
    arriving late (a redrive, a retry, a reprocess) is not written and reports
    ``outcome: SUPERSEDED``. The write itself is conditional on the output being what was
    checked (S3 If-Match / If-None-Match), so two versions racing cannot both win.
    """
    obj = request.object
    if obj.version_id is None:
        raise InvalidEventError(
            "object.versionId is missing: the workflow resolves it before processing"
        )
    dataset = keys.dataset_of(obj.key)
    contract = load_contract(dataset)
    out_key = keys.output_key(obj.key)
    mine = identity.SourceVersion(obj.version_id, obj.sequencer)
    current = s3.head_object(obj.bucket, out_key)
    newer_version = output.newer_output(obj.bucket, obj.key, mine, current)
    if newer_version is not None:
        return output.superseded(request.object, settings, out_key, newer_version)
    try:
        opened = s3.open_object(obj.bucket, obj.key, obj.version_id)
    except s3.ObjectReplacedError:
        return output.superseded(
            request.object, settings, out_key, "a later write of this unversioned key"
        )
    if large is not None and large.enabled and opened.size >= large.threshold_bytes:
        opened.body.close()
        return _split(request, settings, out_key, opened.size, "its size")
    summary = Summary(dataset=dataset)
    try:
        with opened.body:
            lines = convert(opened.body, contract, summary)
            if remaining_ms is not None:  # the function's time left (LambdaContext)
                lines = _within_time(lines, opened, remaining_ms)
            s3.upload_stream(
                obj.bucket,
                out_key,
                lines,
                content_type=output.CONTENT_TYPE,
                metadata=output.metadata(obj, request.execution_arn),
                if_match=current.etag if current is not None else None,
                if_none_match=current is None,
            )
    except ObjectTooLargeError:
        if large is None or not large.enabled:
            raise
        # Nothing was written (the upload was aborted): the large-file path takes it.
        return _split(request, settings, out_key, opened.size, "the time it would take")
    except s3.OutputChangedError as exc:
        changed = s3.head_object(obj.bucket, out_key)
        newer_version = output.newer_output(obj.bucket, obj.key, mine, changed)
        if newer_version is not None:
            return output.superseded(request.object, settings, out_key, newer_version)
        raise TransientError(
            f"{out_key} was written by another execution while this one wrote it; retrying"
        ) from exc
    return {
        **summary.to_dict(),
        "sourceKey": obj.key,
        "outputKey": out_key,
        "outcome": Outcome.PROCESSED.value,
        "supersededBy": "",
        "expiresAt": output.expires_at(settings),
    }


def _split(
    request: ProcessRequest, settings: Settings, out_key: str, size: int, reason: str
) -> dict[str, Any]:
    """Hand the object to the large-file path (the workflow's ChooseProcessingPath)."""
    logger.info("object goes to the large-file path", size=size, reason=reason)
    return {
        **Summary(dataset=keys.dataset_of(request.object.key), bytes_in=size).to_dict(),
        "sourceKey": request.object.key,
        "outputKey": out_key,
        "outcome": Route.SPLIT.value,
        "supersededBy": "",
        "expiresAt": output.expires_at(settings),
    }


_CHECK_EVERY_CHUNKS = 1024


def _within_time(
    lines: Iterator[bytes], opened: s3.OpenedObject, remaining_ms: Callable[[], int]
) -> Iterator[bytes]:
    """``lines``, stopped with ObjectTooLargeError as soon as the rest of the object cannot
    be read before the function times out (logic/deadline.py)."""
    started = time.monotonic()
    remaining_at_start = remaining_ms() / 1000
    budget = TimeBudget(opened.size, limit_seconds=remaining_at_start)
    for count, chunk in enumerate(lines):
        if count % _CHECK_EVERY_CHUNKS == 0:  # a chunk is a row: checking each costs ~15 %
            elapsed = time.monotonic() - started
            budget.check(opened.bytes_read(), elapsed, remaining_at_start - elapsed)
        yield chunk
