"""ProcessObject: validate one CSV object against its dataset contract and write JSON Lines.

Input (from the state machine): ``{"object": {...}, "attempt": 1, "executionArn": "..."}``.
Output: a small summary (rows, bytes, checksum, output key). Errors are typed
(``ingest_pipeline.errors``) so the state machine can route them by name.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from ingest_pipeline.config import Settings
from ingest_pipeline.dal import s3
from ingest_pipeline.errors import DataError, ErrorClass, InvalidEventError, TransientError
from ingest_pipeline.logic import identity, keys
from ingest_pipeline.logic.contracts import load_contract
from ingest_pipeline.logic.deadline import TimeBudget
from ingest_pipeline.logic.transform import Summary, convert
from ingest_pipeline.models import Outcome, ProcessRequest, parse_event
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
            request, Settings.from_env(), remaining_ms=context.get_remaining_time_in_millis
        )
    except DataError as exc:
        metrics.add_metric(name="ObjectsRejected", unit=MetricUnit.Count, value=1)
        logger.warning(
            "object rejected",
            error=type(exc).__name__,
            error_class=ErrorClass.PERMANENT.value,
            error_code=exc.code,
            line=exc.line,
            cause=exc.message,
        )
        raise
    if summary["outcome"] == Outcome.PROCESSED:
        metrics.add_metric(name="ObjectsProcessed", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="RowsProcessed", unit=MetricUnit.Count, value=summary["rows"])
        # duration_ms: the saved query "slowest objects" sorts on it (template.yaml).
        duration_ms = round((time.monotonic() - started) * 1000)
        logger.info("object processed", duration_ms=duration_ms, **summary)
    return summary


def process(
    request: ProcessRequest,
    settings: Settings,
    *,
    remaining_ms: Callable[[], int] | None = None,
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
    newer_version = _newer_output(obj.bucket, obj.key, mine, current)
    if newer_version is not None:
        return _superseded(request, settings, out_key, newer_version)
    try:
        opened = s3.open_object(obj.bucket, obj.key, obj.version_id)
    except s3.ObjectReplacedError:
        return _superseded(request, settings, out_key, "a later write of this unversioned key")
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
                content_type="application/x-ndjson",
                metadata={
                    "source-key": obj.key,  # readable (metadata is ASCII: others become '?')
                    "source-key-url": quote(obj.key, safe="/"),  # exact
                    "source-version-id": obj.version_id,
                    "source-sequencer": obj.sequencer or "",
                    "execution-arn": request.execution_arn,
                },
                if_match=current.etag if current is not None else None,
                if_none_match=current is None,
            )
    except s3.OutputChangedError as exc:
        changed = s3.head_object(obj.bucket, out_key)
        newer_version = _newer_output(obj.bucket, obj.key, mine, changed)
        if newer_version is not None:
            return _superseded(request, settings, out_key, newer_version)
        raise TransientError(
            f"{out_key} was written by another execution while this one wrote it; retrying"
        ) from exc
    return {
        **summary.to_dict(),
        "sourceKey": obj.key,
        "outputKey": out_key,
        "outcome": Outcome.PROCESSED.value,
        "supersededBy": "",
        "expiresAt": _expires_at(settings),
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


def _newer_output(
    bucket: str, key: str, mine: identity.SourceVersion, output: s3.ObjectHead | None
) -> str | None:
    """The version id of the newer version the output was made from, or None when this
    version may write it (no output yet, the same version, or an older one)."""
    if output is None:
        return None
    theirs = output.metadata.get("source-version-id")
    if not theirs or output.metadata.get("source-key-url") != quote(key, safe="/"):
        # Not written by this pipeline from this key (incoming/x.csv and incoming/x share
        # processed/x.jsonl): versions of different keys have no order; ours replaces it.
        return None
    other = identity.SourceVersion(theirs, output.metadata.get("source-sequencer") or None)
    if other.version_id == mine.version_id:
        return None
    mine_is_newer = identity.newer(mine, other)
    if mine_is_newer is None:
        listing = s3.key_versions(bucket, key)
        mine_is_newer = identity.newer_by_listing(mine.version_id, other.version_id, listing)
    return None if mine_is_newer else other.version_id


def _superseded(
    request: ProcessRequest, settings: Settings, out_key: str, newer_version: str
) -> dict[str, Any]:
    logger.info("object superseded", output_key=out_key, superseded_by=newer_version)
    metrics.add_metric(name="ObjectsSuperseded", unit=MetricUnit.Count, value=1)
    return {
        **Summary(dataset=keys.dataset_of(request.object.key)).to_dict(),
        "sourceKey": request.object.key,
        "outputKey": out_key,
        "outcome": Outcome.SUPERSEDED.value,
        "supersededBy": newer_version,
        "expiresAt": _expires_at(settings),
    }


def _expires_at(settings: Settings) -> str:
    """The state record's TTL (epoch seconds, a string as DynamoDB's N type wants it)."""
    expires_at = datetime.now(UTC) + timedelta(days=settings.failure_policy.record_retention_days)
    return str(int(expires_at.timestamp()))
