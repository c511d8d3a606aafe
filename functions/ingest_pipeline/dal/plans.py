"""The chunk list of a large object's Distributed Map, where its ItemReader reads it
(``logic.keys.plan_key``): written by SplitObject, and by AssembleOutput when it plans the
chunks again."""

from __future__ import annotations

import json
from typing import Any

from ingest_pipeline.dal import s3
from ingest_pipeline.logic import chunks, keys
from ingest_pipeline.models import ObjectRef


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
    ingest_date: str,
    mode: str,
    header_key: str = "",
) -> dict[str, Any]:
    """Write the chunk list where the Map's ItemReader reads it; the plan's summary."""
    key = keys.plan_key(execution_arn, round_)
    s3.put_json(obj.bucket, key, json.dumps([chunk.to_item() for chunk in planned]))
    return {
        "bucket": obj.bucket,
        "key": key,
        "headerEnd": header_end,
        "headerLines": header_lines,
        "headerKey": header_key,  # "": the object's own first headerEnd bytes
        "size": size,
        "chunkCount": len(planned),
        "round": round_,
        "maxConcurrency": max_concurrency,
        "ingestDate": ingest_date,
        "mode": str(mode),
    }
