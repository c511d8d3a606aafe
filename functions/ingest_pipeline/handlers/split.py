"""SplitObject: plan the large-file path for one object version (``logic/chunks.py``).

Reads the object's first bytes (its header, checked against the dataset contract as the
single-Lambda path checks it) and a small window at every cut, chooses where each chunk
starts, and writes the plan (a JSON list of chunks) under ``work/`` for the Distributed
Map's ItemReader. Nothing else of the object is read here.

Input: ``{"object": {...}, "attempt": 1, "executionArn": "..."}`` (as ProcessObject's).
Output: the plan (``large_models.PlanModel``): where it is and what every chunk needs to know.
"""

from __future__ import annotations

import io
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from ingest_pipeline.config import LargeObjectSettings
from ingest_pipeline.dal import s3
from ingest_pipeline.dal.contracts import contract_for
from ingest_pipeline.errors import InvalidEventError, LineTooLongError
from ingest_pipeline.logic import chunks, keys
from ingest_pipeline.logic.transform import DEFAULT_MAX_LINE_BYTES, Summary, convert
from ingest_pipeline.models import ObjectRef, ProcessRequest, parse_event
from ingest_pipeline.observability import bind_object, logger, tracer

HEADER_BYTES = DEFAULT_MAX_LINE_BYTES + 2  # a header is one line (or a few, quoted)
WINDOW_BYTES = 256 * 1024  # read at each cut to find where records start
WINDOW_READERS = 8  # windows read at once


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse_event(event, ProcessRequest)
    bind_object(request.object, request.execution_arn, request.attempt)
    plan = split(request, LargeObjectSettings.from_env())
    logger.info(
        "object split",
        size=plan["size"],
        chunk_count=plan["chunkCount"],
        plan_key=plan["key"],
    )
    return plan


def split(
    request: ProcessRequest, settings: LargeObjectSettings, round_: int = 1
) -> dict[str, Any]:
    obj = request.object
    if obj.version_id is None:
        raise InvalidEventError("object.versionId is missing: the workflow resolves it first")
    contract = contract_for(obj, request.claimed_at).contract
    opened = s3.open_object(obj.bucket, obj.key, obj.version_id)
    with opened.body:
        prefix = opened.body.read(HEADER_BYTES)
    size = opened.size
    end = header_end(prefix, size, contract)
    cuts = chunks.nominal_cuts(size, end, settings.chunk_bytes)
    width = len(contract.header)

    def start_after(cut: int) -> int | None:
        first = cut - 1  # the window starts one byte early: a cut may be a line start
        window = s3.read_range(obj.bucket, obj.key, obj.version_id, first, first + WINDOW_BYTES - 1)
        found = chunks.line_start_after(window, 1, width)
        return None if found is None else first + found

    with ThreadPoolExecutor(max_workers=WINDOW_READERS) as pool:
        starts = [s for s in pool.map(start_after, cuts) if s is not None]
    planned = chunks.plan_chunks(size, end, starts)
    header = prefix[:end]
    return write_plan(
        obj,
        request.execution_arn,
        planned,
        header_end=end,
        header_lines=header.count(b"\n"),
        size=size,
        round_=round_,
        max_concurrency=settings.concurrency,
    )


def header_end(prefix: bytes, size: int, contract: Any) -> int:
    """Where the header ends; the header checked as the single-Lambda path checks it (its
    DataError raised: EmptyFileError, HeaderError, EncodingError, ...)."""
    at_eof = len(prefix) >= size
    end = chunks.header_end(prefix, at_eof=at_eof)
    checked = prefix if end is None else prefix[:end]
    list(convert(io.BytesIO(checked), contract, Summary(dataset=contract.dataset)))
    if end is None:  # the conversion found no error in the first bytes, and no header
        raise LineTooLongError(f"the header is longer than {len(prefix)} bytes", line=1)
    return end


def write_plan(
    obj: ObjectRef,
    execution_arn: str,
    planned: list[chunks.Chunk],
    *,
    header_end: int,
    header_lines: int,
    size: int,
    round_: int,
    max_concurrency: int,
) -> dict[str, Any]:
    """Write the chunk list where the Map's ItemReader reads it; the plan's summary."""
    key = keys.plan_key(execution_arn, round_)
    s3.put_json(obj.bucket, key, json.dumps([chunk.to_item() for chunk in planned]))
    return {
        "bucket": obj.bucket,
        "key": key,
        "headerEnd": header_end,
        "headerLines": header_lines,
        "size": size,
        "chunkCount": len(planned),
        "round": round_,
        "maxConcurrency": max_concurrency,
    }
