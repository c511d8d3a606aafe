"""ProcessChunk: convert the records of one chunk of a large object (a Distributed Map
item) and write them under ``work/``; AssembleOutput joins the chunks' outputs.

Bad data is not raised: the chunk reports it (its DataError, line numbers counted from the
chunk's first line), because only AssembleOutput can tell whether the chunk started where a
record starts (``logic/chunks.py``). Every other error is raised, typed, as ProcessObject's.

Input: the Map's ItemSelector: ``{"object", "chunk": {index, start, stop}, "plan",
"executionArn"}``. Output: the chunk's report (``logic.chunks.ChunkReport``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ingest_pipeline.dal import s3
from ingest_pipeline.dal.contracts import contract_for
from ingest_pipeline.errors import DataError
from ingest_pipeline.large_models import ChunkRequest
from ingest_pipeline.logic import chunks, keys
from ingest_pipeline.logic.deadline import TimeBudget
from ingest_pipeline.logic.transform import Summary, convert
from ingest_pipeline.models import parse_event
from ingest_pipeline.observability import bind_object, logger, tracer

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
    obj, plan = request.object, request.plan
    chunk = chunks.Chunk(request.chunk.index, request.chunk.start, request.chunk.stop)
    contract = contract_for(obj, request.claimed_at).contract
    header = s3.read_range(obj.bucket, obj.key, obj.version_id, 0, plan.header_end - 1)
    opened = s3.open_object(obj.bucket, obj.key, obj.version_id, first_byte=chunk.start)
    part_key = keys.part_key(request.execution_arn, plan.round, chunk.index)
    summary = Summary(dataset=contract.dataset)
    with opened.body:
        stream = chunks.chunk_stream(header, opened.body)
        lines = convert(stream, contract, summary, stop_at=chunks.stop_at(chunk, header))
        if remaining_ms is not None:
            lines = _within_time(lines, summary, chunk.stop - chunk.start, remaining_ms)
        try:
            s3.upload_stream(
                obj.bucket, part_key, lines, content_type="application/x-ndjson", metadata={}
            )
        except DataError as exc:
            return chunks.chunk_report(chunk, header, summary, part_key=None, error=exc).to_dict()
    return chunks.chunk_report(chunk, header, summary, part_key=part_key).to_dict()


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
