"""AssembleOutput: after the Distributed Map, merge the chunks' reports and write the one
output object of the large-file path (``logic/chunks.py``).

Reads the Map Run's results through its ResultWriter (manifest.json, then the SUCCEEDED
result files: each child execution's output), then, in chunk order:

* a chunk that failed (an error of the taxonomy its child execution caught) is raised by its
  name, as ProcessObject would have raised it: the workflow routes it the same way;
* a chunk that did not start where the one before ended is planned again: outcome REALIGN,
  with the new plan (at most ``logic.chunks.MAX_ROUNDS`` plans; the last one converts the
  rest of the object from the last proven record start as one chunk, in one ordered pass);
* bad data is raised as the single-Lambda path raises it for the whole file (the file's
  line numbers): the workflow quarantines the object;
* otherwise the chunks' outputs become the output (``logic.keys.output_key``, under the
  partition of the date the object landed): JSON Lines in one multipart upload (S3 copies
  the parts); Parquet as a directory of the chunks' parts, committed by its manifest
  (``output.commit_parquet``). Written only if no newer version of the key owns it, as
  ProcessObject writes it. The execution's working files are deleted.

Output: ProcessObject's summary (outcome PROCESSED or SUPERSEDED), or REALIGN and ``plan``.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import TYPE_CHECKING, Any

from ingest_pipeline import errors, output, versions
from ingest_pipeline.config import Settings
from ingest_pipeline.dal import s3
from ingest_pipeline.dal.contracts import contract_for
from ingest_pipeline.dal.plans import write_plan
from ingest_pipeline.errors import (
    ConfigurationError,
    DataError,
    EmptyFileError,
    ObjectTooLargeError,
    PipelineError,
    TransientError,
)
from ingest_pipeline.large_models import AssembleRequest
from ingest_pipeline.logic import chunks, formats, keys
from ingest_pipeline.logic.contracts import InputFormat, OutputFormat, Registered
from ingest_pipeline.logic.failure import CaughtError
from ingest_pipeline.logic.summary import Summary
from ingest_pipeline.models import Outcome, Route, parse_event
from ingest_pipeline.observability import bind_object, handler_imported, logger, metrics, tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

_TIMEOUTS = {"States.Timeout", "Sandbox.Timedout"}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse_event(event, AssembleRequest)
    bind_object(request.object, request.execution_arn, request.attempt)
    started = time.monotonic()
    try:
        summary = assemble(request, Settings.from_env())
    except DataError as exc:
        output.log_rejected(exc)
        raise
    output.log_processed(summary, started)
    return summary


def assemble(request: AssembleRequest, settings: Settings) -> dict[str, Any]:
    """The outcome RecordSuccess records, with the contract version the chunks were
    converted with (every function of one claim resolves the same, dal/contracts.py)."""
    registered = contract_for(request.object, request.claimed_at)
    return {**_assemble(request, settings, registered), "contractVersion": registered.version}


def _assemble(
    request: AssembleRequest, settings: Settings, registered: Registered
) -> dict[str, Any]:
    plan = request.plan
    planned = [chunks.Chunk(**item) for item in s3.get_json(plan.bucket, plan.key)]
    reports: list[chunks.ChunkReport] = []
    failures: list[tuple[int, CaughtError]] = []
    for result in map_results(request):
        if "failure" in result:
            failure = result["failure"] or {}
            caught = CaughtError(str(failure.get("Error", "")), str(failure.get("Cause", "")))
            failures.append((int(result.get("index", -1)), caught))
        else:
            reports.append(chunks.ChunkReport.from_dict(result["report"]))
    if failures:
        index, caught = min(failures, key=lambda item: item[0])
        raise chunk_failure(index, caught, plan.size)
    merged = chunks.merge_chunks(planned, reports, plan.header_lines)
    if isinstance(merged, chunks.Realign):
        return _realign(request, merged)
    contract = registered.contract
    records_needed = contract.input.format is InputFormat.JSONL or not contract.input.header
    if not merged.rows and records_needed and contract.processor is None:
        raise EmptyFileError("the file has no records (only blank lines)")
    if contract.output.format is OutputFormat.PARQUET:
        return _write_parquet(request, settings, merged, registered)
    return _write_output(request, settings, merged, registered)


def map_results(request: AssembleRequest) -> list[dict[str, Any]]:
    """Each child execution's output, from the Map Run's ResultWriter files."""
    where = request.chunks.result_writer_details
    manifest = s3.get_json(where.bucket, where.key)
    files = manifest.get("ResultFiles", {})
    if files.get("FAILED") or files.get("PENDING"):
        raise TransientError(f"the Map Run {request.chunks.map_run_arn} has unfinished chunks")
    outputs: list[dict[str, Any]] = []
    for result_file in files.get("SUCCEEDED", []):
        for entry in s3.get_json(where.bucket, result_file["Key"]):
            outputs.append(_json_output(entry))
    return outputs


def _json_output(entry: dict[str, Any]) -> dict[str, Any]:
    value = entry.get("Output")
    parsed = json.loads(value) if isinstance(value, str) else value
    if not isinstance(parsed, dict):
        raise ConfigurationError(f"a chunk's output is not an object: {str(value)[:200]}")
    return parsed


def chunk_failure(index: int, caught: CaughtError, size: int) -> PipelineError:
    """The error a chunk's child execution caught, raised again by its name."""
    if caught.name in _TIMEOUTS:
        return ObjectTooLargeError(
            f"chunk {index} did not finish in ProcessChunkFunction's Timeout "
            f"({caught.name}): lower LargeObjectChunkMiB or raise the function's Timeout",
            size=size,
        )
    _, line, text = caught.code_and_line()
    cls = errors.error_type_named(caught.name)
    if cls is None:
        return ConfigurationError(f"chunk {index} failed with {caught.name}: {text}")
    return cls(f"chunk {index}: {text}", line=line)


def _realign(request: AssembleRequest, realign: chunks.Realign) -> dict[str, Any]:
    plan = request.plan
    if plan.round >= chunks.MAX_ROUNDS or plan.mode != formats.SplitMode.BYTE_RANGE:
        raise ConfigurationError(  # the last plan's chunk starts where one ended: not here
            f"chunk {realign.index} did not start where chunk {realign.index - 1} ended "
            f"in the plan of round {plan.round} ({plan.mode})"
        )
    # The last round converts the rest, from the last proven record start, in one pass.
    last = plan.round + 1 >= chunks.MAX_ROUNDS
    logger.info("chunks realigned", chunk=realign.index, round=plan.round + 1, tail=last)
    new_plan = write_plan(
        request.object,
        request.execution_arn,
        realign.tail if last else realign.chunks,
        header_end=plan.header_end,
        header_lines=plan.header_lines,
        size=plan.size,
        round_=plan.round + 1,
        max_concurrency=plan.max_concurrency,
        ingest_date=plan.ingest_date,
        mode=plan.mode,
        header_key=plan.header_key,
    )
    return {
        **Summary(dataset=keys.dataset_of(request.object.key)).to_dict(),
        "sourceKey": request.object.key,
        "outputKey": keys.output_key(request.object.key, plan.ingest_date),
        "outcome": Route.REALIGN.value,
        "supersededBy": "",
        "expiresAt": "0",
        "plan": new_plan,
    }


def _write_output(
    request: AssembleRequest, settings: Settings, merged: chunks.Merged, registered: Registered
) -> dict[str, Any]:
    obj = request.object
    out_key = keys.output_key(obj.key, request.plan.ingest_date)
    verdict = versions.before_write(obj, out_key, request.execution_arn, s3)
    if verdict.superseded_by is not None:
        superseded = output.superseded(obj, settings, out_key, verdict.superseded_by, registered)
        return {**superseded, "plan": None}
    steps = chunks.assembly_steps((p.part_key or "", p.bytes_out) for p in merged.parts)
    try:
        s3.join_objects(
            obj.bucket,
            out_key,
            steps,
            content_type=output.CONTENT_TYPE,
            metadata=verdict.metadata,
            if_match=verdict.if_match,
            if_none_match=verdict.if_none_match,
        )
    except s3.OutputChangedError as exc:
        newer_version = versions.after_write_lost(obj, out_key, s3, exc)
        superseded = output.superseded(obj, settings, out_key, newer_version, registered)
        return {**superseded, "plan": None}
    return _processed(request, settings, merged, out_key)


def _write_parquet(
    request: AssembleRequest, settings: Settings, merged: chunks.Merged, registered: Registered
) -> dict[str, Any]:
    """The chunks' Parquet parts as ``<dir>/part-NNNNN.parquet`` (each written by S3 from
    the chunk's part, conditionally), then the manifest that commits the directory."""
    from ingest_pipeline.logic import parquet  # a Parquet dataset only: not at import

    obj = request.object
    directory = keys.output_key(obj.key, request.plan.ingest_date, parquet.SUFFIX)
    fence = keys.manifest_key(directory)
    verdict = versions.before_write(obj, fence, request.execution_arn, s3)
    if verdict.superseded_by is not None:
        superseded = output.superseded(obj, settings, directory, verdict.superseded_by, registered)
        return {**superseded, "plan": None}
    sources = merged.parts or ([merged.empty] if merged.empty is not None else [])
    existing = s3.list_etags(obj.bucket, f"{directory}/")
    written: list[output.WrittenPart] = []
    try:
        for number, report in enumerate(sources):
            key = keys.parquet_part_key(directory, number)
            steps = chunks.assembly_steps([(report.part_key or "", report.bytes_out)])
            etag = s3.join_objects(
                obj.bucket,
                key,
                steps,
                content_type=parquet.CONTENT_TYPE,
                metadata=verdict.metadata,
                **output.part_condition(existing, key),
            )
            written.append(
                output.WrittenPart(key, report.rows, report.bytes_out, report.sha256, etag)
            )
        output.commit_parquet(
            obj,
            directory,
            written,
            contract=registered.contract,
            verdict=verdict,
            existing=existing,
        )
    except s3.OutputChangedError as exc:
        newer_version = versions.after_write_lost(obj, fence, s3, exc)
        superseded = output.superseded(obj, settings, directory, newer_version, registered)
        return {**superseded, "plan": None}
    return _processed(request, settings, merged, directory)


def _processed(
    request: AssembleRequest, settings: Settings, merged: chunks.Merged, out_key: str
) -> dict[str, Any]:
    """The outcome PROCESSED, once the output is written; the working files deleted."""
    obj = request.object
    removed = s3.delete_prefix(
        obj.bucket, f"{keys.WORK_PREFIX}{keys.execution_name(request.execution_arn)}/"
    )
    logger.info("working files deleted", count=removed)
    digest = hashlib.sha256("".join(p.sha256 for p in merged.parts).encode()).hexdigest()
    return {
        "dataset": keys.dataset_of(obj.key),
        "rows": merged.rows,
        "bytesIn": request.plan.size,
        "bytesOut": merged.bytes_out,
        # SHA-256 of the parts' SHA-256 digests (hex, in order): the output itself is never
        # read whole by one function.
        "sha256": f"parts:{digest}",
        "sourceKey": obj.key,
        "outputKey": out_key,
        "outcome": Outcome.PROCESSED.value,
        "supersededBy": "",
        "expiresAt": output.expires_at(settings),
        "plan": None,
    }


handler_imported(__name__)  # last: freezes what the import made (a cold start)
