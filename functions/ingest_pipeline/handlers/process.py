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

from ingest_pipeline import output, versions
from ingest_pipeline.config import MIB, LargeObjectSettings, Settings
from ingest_pipeline.dal import s3
from ingest_pipeline.dal.contracts import contract_for
from ingest_pipeline.errors import (
    DataError,
    InputTooLargeError,
    InvalidEventError,
    ObjectTooLargeError,
    PipelineError,
    SplitRequiredError,
)
from ingest_pipeline.logic import formats, keys, parquet
from ingest_pipeline.logic.contracts import Compression, Contract, OutputFormat
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
    out_key = keys.output_key(obj.key, parquet.SUFFIX if parquet_output else ".jsonl")
    verdict = versions.before_write(obj, out_key, request.execution_arn, s3)
    if verdict.superseded_by is not None:
        return output.superseded(obj, settings, out_key, verdict.superseded_by, registered)
    try:
        opened = s3.open_object(obj.bucket, obj.key, obj.version_id)
    except s3.ObjectReplacedError:
        return output.superseded(
            obj, settings, out_key, "a later write of this unversioned key", registered
        )
    if large is not None and large.enabled and opened.size >= large.threshold_bytes:
        opened.body.close()
        raise _hand_over(request, contract, opened.size, "its size", large.threshold_bytes)
    summary = Summary(dataset=dataset)
    try:
        with opened.body:
            lines = convert(opened.body, contract, summary)
            if remaining_ms is not None:  # the function's time left (LambdaContext)
                lines = _within_time(lines, opened, remaining_ms)
            if parquet_output:  # the whole file first: bad data raises before any upload
                lines = parquet.parquet_body(lines, contract, summary)
            s3.upload_stream(
                obj.bucket,
                out_key,
                lines,
                content_type=parquet.CONTENT_TYPE if parquet_output else output.CONTENT_TYPE,
                metadata=verdict.metadata,
                if_match=verdict.if_match,
                if_none_match=verdict.if_none_match,
            )
    except ObjectTooLargeError as exc:
        if large is None or not large.enabled:
            raise
        # Nothing was written (the upload was aborted): the large-file path takes it.
        fits = _fitting_bytes(exc, opened.size, large.threshold_bytes)
        raise _hand_over(request, contract, opened.size, "the time it would take", fits) from None
    except s3.OutputChangedError as exc:
        newer_version = versions.after_write_lost(obj, out_key, s3, exc)
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


def _hand_over(
    request: ProcessRequest, contract: Contract, size: int, reason: str, max_bytes: int
) -> PipelineError:
    """The error for an object too large (or too slow) for one function: SplitRequiredError
    when the large-file path can take it, else InputTooLargeError (bad data: quarantined,
    its owner told how to send it). That path cuts the raw object at byte offsets: only
    uncompressed UTF-8 CSV (``formats.splittable``). With ``compression: auto`` the object's
    first bytes tell whether it is gzip."""
    obj, spec = request.object, contract.input
    gzipped = spec.compression is Compression.GZIP or (
        spec.compression is Compression.AUTO
        and s3.read_range(obj.bucket, obj.key, obj.version_id, 0, 1) == formats.GZIP_MAGIC
    )
    parquet_output = contract.output.format is OutputFormat.PARQUET
    if formats.splittable(spec, gzipped=gzipped) and not parquet_output:
        return _split_required(request, size, reason)
    what = formats.describe(spec, gzipped=gzipped) + (" to Parquet" if parquet_output else "")
    logger.info("object too large and cannot be split", size=size, reason=reason, input=what)
    under = max(1, max_bytes // MIB)
    return InputTooLargeError(
        f"s3://{obj.bucket}/{obj.key} ({size} bytes, {what}) is too much for one function "
        f"({reason}) and cannot be split: the large-file path cuts an object at byte offsets, "
        "which only an uncompressed UTF-8 CSV file allows, and joins JSON Lines parts (one "
        f"function writes a Parquet file). Split it into files of under {under} MiB"
        + ("" if parquet_output else ", or upload it uncompressed as UTF-8 CSV"),
        size=size,
        reason=reason,
        input=what,
        maxBytes=max_bytes,
    )


def _fitting_bytes(exc: ObjectTooLargeError, size: int, threshold: int) -> int:
    """How large a file of this kind may be to finish in time, by the rate the too-slow
    conversion measured (80 %: a margin), and never above the large-file threshold."""
    needed = exc.details.get("neededSeconds") or 0
    limit = exc.details.get("limitSeconds") or 0
    if needed <= 0 or limit <= 0:
        return threshold
    return min(threshold, int(size * 0.8 * limit / needed))


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
