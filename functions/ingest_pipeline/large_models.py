"""Typed inputs of the large-object workflow's Lambdas (ProcessChunk, AssembleOutput).

A module of their own: the per-object workflow's functions do not build these records on
their cold starts (issue 12). Parsed like the others, with ``models.parse_event``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ingest_pipeline.models import ObjectRef
from ingest_pipeline.parsing import rules


@dataclass(frozen=True, kw_only=True)
class PlanModel:
    """The large-file path's plan (SplitObject's result, ``$.plan``)."""

    bucket: str = field(metadata=rules(min_length=1))
    key: str = field(metadata=rules(min_length=1))  # the JSON list of chunks the Map reads
    header_end: int = field(metadata=rules(alias="headerEnd", ge=0))
    header_lines: int = field(metadata=rules(alias="headerLines", ge=0))
    size: int = field(metadata=rules(ge=0))
    chunk_count: int = field(metadata=rules(alias="chunkCount", ge=0))
    round: int = field(metadata=rules(ge=1))
    max_concurrency: int = field(default=1, metadata=rules(alias="maxConcurrency", ge=1))


@dataclass(frozen=True, kw_only=True)
class ChunkModel:
    index: int = field(metadata=rules(ge=0))
    start: int = field(metadata=rules(ge=0))
    stop: int = field(metadata=rules(ge=0))


@dataclass(frozen=True, kw_only=True)
class ChunkRequest:
    """ProcessChunk's input: one item of the Map (its ItemSelector)."""

    object: ObjectRef
    chunk: ChunkModel
    plan: PlanModel
    execution_arn: str = field(default="local", metadata=rules(alias="executionArn"))


@dataclass(frozen=True, kw_only=True)
class ResultWriterDetails:
    bucket: str = field(metadata=rules(alias="Bucket", min_length=1))
    key: str = field(metadata=rules(alias="Key", min_length=1))


@dataclass(frozen=True, kw_only=True)
class MapRunResult:
    """A Distributed Map's output when it has a ResultWriter."""

    map_run_arn: str = field(default="", metadata=rules(alias="MapRunArn"))
    result_writer_details: ResultWriterDetails = field(metadata=rules(alias="ResultWriterDetails"))


@dataclass(frozen=True, kw_only=True)
class AssembleRequest:
    """AssembleOutput's input: the object, its plan and where the Map wrote its results."""

    object: ObjectRef
    plan: PlanModel
    chunks: MapRunResult
    attempt: int = field(default=1, metadata=rules(ge=1))
    execution_arn: str = field(default="local", metadata=rules(alias="executionArn"))
