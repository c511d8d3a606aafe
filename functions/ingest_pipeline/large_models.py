"""Typed inputs of the large-object workflow's Lambdas (ProcessChunk, AssembleOutput).

A module of their own: the per-object workflow's functions do not build these records on
their cold starts (issue 12). Parsed like the others, with ``models.parse_event``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from msgspec import Meta, Struct

from ingest_pipeline.models import ObjectRef

_EXECUTION_ARN = {"execution_arn": "executionArn", "claimed_at": "claimedAt"}


class PlanModel(Struct, frozen=True, kw_only=True, rename="camel"):
    """The large-file path's plan (SplitObject's result, ``$.plan``)."""

    bucket: Annotated[str, Meta(min_length=1)]
    key: Annotated[str, Meta(min_length=1)]  # the JSON list of chunks the Map reads
    header_end: Annotated[int, Meta(ge=0)]  # headerEnd
    header_lines: Annotated[int, Meta(ge=0)]  # headerLines
    size: Annotated[int, Meta(ge=0)]
    chunk_count: Annotated[int, Meta(ge=0)]  # chunkCount
    round: Annotated[int, Meta(ge=1)]
    max_concurrency: Annotated[int, Meta(ge=1)] = 1  # maxConcurrency
    # the UTC date the object landed (its Last-Modified): the output's partition
    ingest_date: Annotated[str, Meta(pattern=r"^\d{4}-\d{2}-\d{2}$")]  # ingestDate
    header_key: str = ""  # headerKey: "" = the object's first headerEnd bytes
    mode: str = "byte-range"  # logic.formats.SplitMode


class ChunkModel(Struct, frozen=True, kw_only=True):
    index: Annotated[int, Meta(ge=0)]
    start: Annotated[int, Meta(ge=0)]
    stop: Annotated[int, Meta(ge=0)]
    key: str = ""  # a piece SplitObject wrote (its single pass); "" = a byte range


class ChunkRequest(Struct, frozen=True, kw_only=True, rename=_EXECUTION_ARN):
    """ProcessChunk's input: one item of the Map (its ItemSelector)."""

    object: ObjectRef
    chunk: ChunkModel
    plan: PlanModel
    claimed_at: datetime | None = None  # claimedAt: which contract version (dal/contracts.py)
    execution_arn: str = "local"


class ResultWriterDetails(Struct, frozen=True, kw_only=True, rename="pascal"):
    bucket: Annotated[str, Meta(min_length=1)]  # Bucket
    key: Annotated[str, Meta(min_length=1)]  # Key


class MapRunResult(Struct, frozen=True, kw_only=True, rename="pascal"):
    """A Distributed Map's output when it has a ResultWriter."""

    result_writer_details: ResultWriterDetails  # ResultWriterDetails
    map_run_arn: str = ""  # MapRunArn


class AssembleRequest(Struct, frozen=True, kw_only=True, rename=_EXECUTION_ARN):
    """AssembleOutput's input: the object, its plan and where the Map wrote its results."""

    object: ObjectRef
    plan: PlanModel
    chunks: MapRunResult
    attempt: Annotated[int, Meta(ge=1)] = 1
    claimed_at: datetime | None = None  # claimedAt: which contract version (dal/contracts.py)
    execution_arn: str = "local"
