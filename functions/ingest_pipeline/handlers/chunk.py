"""ProcessChunk: convert the records of one chunk of a large object (a Distributed Map
item) and write them under ``work/``, as JSON Lines or as a Parquet part (the contract's
``output``); AssembleOutput joins or commits the chunks' outputs.

A chunk is a byte range of the object (uncompressed UTF-8), or a piece SplitObject wrote
in its single ordered pass (the item's ``key``: gzip, other encodings); either way the
header (``plan.headerKey``, or the object's first ``plan.headerEnd`` bytes) is put before
it, so the contract's checks and the transform are the single-Lambda path's own.

Bad data is not raised: the chunk reports it (its DataError, line numbers counted from the
chunk's first line), because only AssembleOutput can tell whether the chunk started where a
record starts (``logic/chunks.py``). Every other error is raised, typed, as ProcessObject's.

Input: the Map's ItemSelector: ``{"object", "chunk": {index, start, stop[, key]}, "plan",
"executionArn"}``. Output: the chunk's report (``logic.chunks.ChunkReport``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ingest_pipeline import output
from ingest_pipeline.dal import s3
from ingest_pipeline.dal.contracts import contract_for
from ingest_pipeline.errors import DataError
from ingest_pipeline.large_models import ChunkRequest
from ingest_pipeline.logic import chunks, keys
from ingest_pipeline.logic.contracts import OutputFormat
from ingest_pipeline.logic.deadline import TimeBudget
from ingest_pipeline.logic.summary import Summary
from ingest_pipeline.logic.transform import convert
from ingest_pipeline.models import parse_event
from ingest_pipeline.observability import bind_object, handler_imported, logger, tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

_CHECK_EVERY_ROWS = 1024


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse_event(event, ChunkRequest)
    bind_object(request.object, request.execution_arn, request.plan.round)
    logger.append_keys(chunk=request.chunk.index)
    started = time.monotonic()
    report = process_chunk(request, remaining_ms=context.get_remaining_time_in_millis)
    logger.info(
        "chunk processed",
        duration_ms=round((time.monotonic() - started) * 1000),
        rows=report["rows"],
        lines=report["lines"],
        error_code=(report["error"] or {}).get("code"),
    )
    return report


def process_chunk(
    request: ChunkRequest, *, remaining_ms: Callable[[], int] | None = None
) -> dict[str, Any]:
    obj, plan, item = request.object, request.plan, request.chunk
    chunk = chunks.Chunk(item.index, item.start, item.stop, item.key)
    contract = contract_for(obj, request.claimed_at).contract
    header = _header(request)
    if chunk.key:  # a piece of the object's UTF-8 text (SplitObject's single pass)
        opened = s3.open_object(obj.bucket, chunk.key, None)
    else:
        opened = s3.open_object(obj.bucket, obj.key, obj.version_id, first_byte=chunk.start)
    parquet_output = contract.output.format is OutputFormat.PARQUET
    if parquet_output:  # imported for a Parquet dataset only: not every cold start's cost
        from ingest_pipeline.logic import parquet
    suffix = parquet.SUFFIX if parquet_output else ".jsonl"
    part_key = keys.part_key(request.execution_arn, plan.round, chunk.index, suffix)
    summary = Summary(dataset=contract.dataset)
    with opened.body:
        stream = chunks.chunk_stream(header, opened.body)
        lines = convert(stream, contract, summary, stop_at=chunks.stop_at(chunk, header))
        if remaining_ms is not None:
            lines = _within_time(lines, summary, chunk.stop - chunk.start, remaining_ms)
        body = parquet.parquet_body(lines, contract, summary) if parquet_output else lines
        try:
            s3.upload_stream(
                obj.bucket,
                part_key,
                body,
                content_type=parquet.CONTENT_TYPE if parquet_output else output.CONTENT_TYPE,
                metadata={},
            )
        except DataError as exc:
            return chunks.chunk_report(chunk, header, summary, part_key=None, error=exc).to_dict()
    report = chunks.chunk_report(
        chunk, header, summary, part_key=part_key, keep_empty=parquet_output
    )
    return report.to_dict()


def _header(request: ChunkRequest) -> bytes:
    """The bytes every chunk of this object is read after: the header record (a BOM and
    blank lines before it included); none for JSON Lines and CSV without a header."""
    obj, plan = request.object, request.plan
    if plan.header_end == 0:
        return b""
    if plan.header_key:
        return s3.read_range(obj.bucket, plan.header_key, None, 0, plan.header_end - 1)
    return s3.read_range(obj.bucket, obj.key, obj.version_id, 0, plan.header_end - 1)


def _within_time(
    lines: Iterator[bytes], summary: Summary, size: int, remaining_ms: Callable[[], int]
) -> Iterator[bytes]:
    """``lines``, stopped with ObjectTooLargeError as soon as the chunk cannot be finished
    in the function's time (the chunk size is too big for its Timeout)."""
    started = time.monotonic()
    remaining_at_start = remaining_ms() / 1000
    budget = TimeBudget(size, limit_seconds=remaining_at_start)
    for count, line in enumerate(lines):
        if count % _CHECK_EVERY_ROWS == 0:
            elapsed = time.monotonic() - started
            budget.check(summary.bytes_in, elapsed, remaining_at_start - elapsed)
        yield line


handler_imported(__name__)  # last: freezes what the import made (a cold start)
