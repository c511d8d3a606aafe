"""ProcessObject: validate one CSV object against its dataset contract and write JSON Lines.

Input (from the state machine): ``{"object": {...}, "attempt": 1, "executionArn": "..."}``.
Output: a small summary (rows, bytes, checksum, output key). Errors are typed
(``ingest_pipeline.errors``) so the state machine can route them by name.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ingest_pipeline import output, versions
from ingest_pipeline.config import LargeObjectSettings, Settings
from ingest_pipeline.dal import s3
from ingest_pipeline.dal.contracts import contract_for
from ingest_pipeline.errors import (
    DataError,
    InvalidEventError,
    ObjectTooLargeError,
    SplitRequiredError,
)
from ingest_pipeline.logic import keys
from ingest_pipeline.logic.contracts import Contract, OutputFormat
from ingest_pipeline.logic.deadline import TimeBudget
from ingest_pipeline.logic.transform import Summary, convert
from ingest_pipeline.models import ObjectRef, Outcome, ProcessRequest, parse_event
from ingest_pipeline.observability import bind_object, handler_imported, logger, metrics, tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext


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

    Newest version wins (``ingest_pipeline.versions``, asked before the write and after a
    lost one): an older version arriving late (a redrive, a retry, a reprocess) is not
    written and reports ``outcome: SUPERSEDED``; the write is conditional, so two versions
    racing cannot both win.
    """
    obj = request.object
    if obj.version_id is None:
        raise InvalidEventError(
            "object.versionId is missing: the workflow resolves it before processing"
        )
    registered = contract_for(obj, request.claimed_at)
    contract, dataset = registered.contract, registered.contract.dataset
    parquet_output = contract.output.format is OutputFormat.PARQUET
    if parquet_output:  # imported for a Parquet dataset only: not every cold start's cost
        from ingest_pipeline.logic import parquet
    suffix = parquet.SUFFIX if parquet_output else ".jsonl"
    try:
        opened = s3.open_object(obj.bucket, obj.key, obj.version_id)
    except s3.ObjectReplacedError:  # a content version: its Last-Modified is in its id
        landed = keys.content_version_date(obj.version_id) or keys.ingest_date(datetime.now(UTC))
        out_key = keys.output_key(obj.key, landed, suffix)
        return output.superseded(
            obj, settings, out_key, "a later write of this unversioned key", registered
        )
    # The partition: the UTC date this version landed (Last-Modified: a reprocess of the
    # same version, even days later, writes the same keys).
    out_key = keys.output_key(obj.key, keys.ingest_date(opened.last_modified), suffix)
    fence_key = keys.manifest_key(out_key) if parquet_output else out_key
    verdict = versions.before_write(obj, fence_key, request.execution_arn, s3)
    if verdict.superseded_by is not None:
        opened.body.close()
        return output.superseded(obj, settings, out_key, verdict.superseded_by, registered)
    if large is not None and large.enabled and opened.size >= large.threshold_bytes:
        opened.body.close()
        raise _split_required(request, opened.size, "its size")
    summary = Summary(dataset=dataset)
    try:
        with opened.body:
            lines = convert(opened.body, contract, summary)
            if remaining_ms is not None:  # the function's time left (LambdaContext)
                lines = _within_time(lines, opened, remaining_ms)
            if parquet_output:  # a directory of one part, committed by its manifest
                _write_parquet(
                    obj, out_key, lines, contract=contract, summary=summary, verdict=verdict
                )
            else:
                s3.upload_stream(
                    obj.bucket,
                    out_key,
                    lines,
                    content_type=output.CONTENT_TYPE,
                    metadata=verdict.metadata,
                    if_match=verdict.if_match,
                    if_none_match=verdict.if_none_match,
                )
    except ObjectTooLargeError:
        if large is None or not large.enabled:
            raise
        # Nothing was written (the upload was aborted): the large-file path takes it.
        raise _split_required(request, opened.size, "the time it would take") from None
    except s3.OutputChangedError as exc:
        newer_version = versions.after_write_lost(obj, fence_key, s3, exc)
        return output.superseded(obj, settings, out_key, newer_version, registered)
    return {
        **summary.to_dict(),
        "sourceKey": obj.key,
        "outputKey": out_key,
        "outcome": Outcome.PROCESSED.value,
        "supersededBy": "",
        "expiresAt": output.expires_at(settings),
        "contractVersion": registered.version,
    }


def _write_parquet(
    obj: ObjectRef,
    directory: str,
    lines: Iterator[bytes],
    *,
    contract: Contract,
    summary: Summary,
    verdict: versions.Verdict,
) -> None:
    """The Parquet output: ``<directory>/part-00000.parquet`` (written whole first: bad
    data raises before any upload), then its manifest (``output.commit_parquet``)."""
    from ingest_pipeline.logic import parquet

    existing = s3.list_etags(obj.bucket, f"{directory}/")
    part = keys.parquet_part_key(directory, 0)
    etag = s3.upload_stream(
        obj.bucket,
        part,
        parquet.parquet_body(lines, contract, summary),
        content_type=parquet.CONTENT_TYPE,
        metadata=verdict.metadata,
        **output.part_condition(existing, part),
    )
    written = output.WrittenPart(part, summary.rows, summary.bytes_out, summary.sha256, etag)
    output.commit_parquet(
        obj, directory, [written], contract=contract, verdict=verdict, existing=existing
    )


def _split_required(request: ProcessRequest, size: int, reason: str) -> SplitRequiredError:
    """The error that hands the object to the large-file path: ProcessObject's first Catch
    routes SplitRequiredError to StartLargeObjectWorkflow. Nothing was written."""
    logger.info("object goes to the large-file path", size=size, reason=reason)
    obj = request.object
    return SplitRequiredError(
        f"s3://{obj.bucket}/{obj.key} ({size} bytes) goes to the large-object workflow: "
        f"{reason} is too much for one function",
        size=size,
        reason=reason,
    )


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


handler_imported(__name__)  # last: freezes what the import made (a cold start)
