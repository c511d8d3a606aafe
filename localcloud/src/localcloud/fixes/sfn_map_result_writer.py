"""Fix: a Distributed Map's ResultWriter writes the children's results to S3, as AWS does.

AWS (developer guide, "ResultWriter (Map)",
https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html): with
``"Resource": "arn:aws:states:::s3:putObject"`` and ``Parameters {Bucket, Prefix}``, Step
Functions consolidates the child workflow executions by status and writes, under
``<Prefix>/<map run id>/`` (the map run id is the last ``:`` part of the MapRunArn):

* ``SUCCEEDED_<n>.json`` (succeeded children) and ``FAILED_<n>.json`` (failed, timed-out and
  aborted ones), each a JSON array with one entry per child: ``ExecutionArn``, ``Input``
  (the child's input as a JSON string), ``InputDetails {"Included": true}``, ``Name``,
  ``Output`` (its output as a JSON string; succeeded only), ``OutputDetails``,
  ``RedriveCount``, ``RedriveStatus``, ``RedriveStatusReason`` (only when not redrivable),
  ``StartDate``, ``StateMachineArn``, ``Status``, ``StopDate``, and for a failed child
  ``Error`` and ``Cause``; ``n`` starts at 0 and a file is at most 5 GB, the rest going to
  ``<STATUS>_<n+1>.json``; no file for a status without children;
* ``manifest.json``: ``{"DestinationBucket", "MapRunArn", "ResultFiles": {"FAILED": [...],
  "PENDING": [...], "SUCCEEDED": [...]}}``, each list of ``{"Key", "Size"}``;

and the Map state's result is ``{"MapRunArn", "ResultWriterDetails": {"Bucket", "Key"}}``
(the manifest's key). The results are also written when the Map Run fails (FAILED_<n>.json
is documented as "use this file to recover from failed executions"), before the Map state
fails. (Layout and Map output also as observed on AWS in
https://sigpwned.com/2023/04/27/aws-step-functions-distributed-map-resultwriter-example.)

moto 5.2.5 (result_writer/resource_eval/resource_eval_s3.py ``_handle_put_object``, "TODO:
generate result files") drops the results and writes a manifest whose ResultFiles are all
empty, and writes nothing when the Map Run fails: a reader of the results finds nothing.

Here each distributed child's input (after ItemSelector), output or error, status and dates
are recorded on its Map Run (moto keeps the run with the execution; the records are released
once written), and the writer writes them in AWS's layout. Not emulated: PENDING files (moto
starts every child), ``WriterConfig`` (moto's grammar has no such field), child execution
ARNs of EXPRESS children (given the STANDARD ``execution:`` form).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from moto.stepfunctions.parser.api import MapRunStatus
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEventException,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map import state_map
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (  # noqa: E501
    DistributedIterationComponent,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.distributed_item_processor_worker import (  # noqa: E501
    DistributedItemProcessorWorker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.inline_item_processor_worker import (  # noqa: E501
    InlineItemProcessorWorker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer.resource_eval.resource_eval_s3 import (  # noqa: E501
    ResourceEvalS3,
)
from moto.stepfunctions.parser.asl.eval.program_state import (
    ProgramEnded,
    ProgramError,
    ProgramStopped,
    ProgramTimedOut,
)

from localcloud.fixes.sfn_context_timestamps import aws_ts
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["MAX_RESULT_FILE_BYTES", "PATCHES", "child_entry", "manifest", "result_files"]

LOG = logging.getLogger(__name__)
# AWS: "Step Functions supports individual result files of up to 5 GB".
MAX_RESULT_FILE_BYTES = 5 * 1000**3
_STATUS_FILES = ("SUCCEEDED", "FAILED")  # FAILED_<n>.json also holds TIMED_OUT and ABORTED
_CHILD_INPUT = "_localcloud_child_input"
_CHILDREN = "_localcloud_children"
_SUCCEEDED_REASON = "Execution is SUCCEEDED and cannot be redriven"
_ENDED = {ProgramEnded: "SUCCEEDED", ProgramTimedOut: "TIMED_OUT", ProgramStopped: "ABORTED"}


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _children(map_run_record: Any) -> list[tuple[int, dict[str, Any]]]:
    """The ended children of one Map Run, as (item index, result-file entry); its children's
    threads append to it (dict.setdefault and list.append are atomic)."""
    children: list[tuple[int, dict[str, Any]]] = vars(map_run_record).setdefault(_CHILDREN, [])
    return children


def child_entry(
    *,
    map_state_machine_arn: str,
    name: str,
    child_input: str,
    status: str,
    start: dt.datetime,
    stop: dt.datetime,
    output: str | None = None,
    error: str | None = None,
    cause: str | None = None,
) -> dict[str, Any]:
    """One child's entry in a result file, keys in AWS's (alphabetical) order."""
    execution_arn = map_state_machine_arn.replace(":stateMachine:", ":execution:", 1)
    succeeded = status == "SUCCEEDED"
    entry: dict[str, Any] = {
        "ExecutionArn": f"{execution_arn}:{name}",
        "Input": child_input,
        "InputDetails": {"Included": True},
        "Name": name,
        "RedriveCount": 0,
        "RedriveStatus": "NOT_REDRIVABLE" if succeeded else "REDRIVABLE",
        "StartDate": aws_ts(start),
        "StateMachineArn": map_state_machine_arn,
        "Status": status,
        "StopDate": aws_ts(stop),
    }
    if succeeded:
        entry["Output"] = output if output is not None else "null"
        entry["OutputDetails"] = {"Included": True}
        entry["RedriveStatusReason"] = _SUCCEEDED_REASON
    entry.update((key, v) for key, v in (("Error", error), ("Cause", cause)) if v is not None)
    return dict(sorted(entry.items()))


def result_files(
    entries: Iterable[dict[str, Any]], limit: int = MAX_RESULT_FILE_BYTES
) -> Iterator[bytes]:
    """The JSON arrays holding ``entries``, each at most ``limit`` bytes (one entry per file
    at least)."""
    parts: list[bytes] = []
    size = 2  # "[" and "]"
    for entry in entries:
        encoded = _json(entry).encode()
        extra = len(encoded) + (1 if parts else 0)
        if parts and size + extra > limit:
            yield b"[" + b",".join(parts) + b"]"
            parts, size, extra = [], 2, len(encoded)
        parts.append(encoded)
        size += extra
    if parts:
        yield b"[" + b",".join(parts) + b"]"


def manifest(bucket: str, map_run_arn: str, files: dict[str, list[dict[str, Any]]]) -> bytes:
    body = {
        "DestinationBucket": bucket,
        "MapRunArn": map_run_arn,
        "ResultFiles": {
            status: files.get(status, []) for status in ("FAILED", "PENDING", "SUCCEEDED")
        },
    }
    return _json(body).encode()


def _write(env: Any, s3: Any, parameters: dict[str, Any]) -> dict[str, Any]:
    """Writes the last Map Run's result files and manifest; the Map state's result."""
    map_run_record = env.map_run_record_pool_manager.get_all().pop()
    map_run_arn: str = map_run_record.map_run_arn
    bucket = parameters["Bucket"]
    prefix = parameters.get("Prefix") or ""
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    folder = f"{prefix}{map_run_arn.rsplit(':', maxsplit=1)[-1]}/"
    taken = vars(map_run_record).pop(_CHILDREN, [])  # released once written
    children = [entry for _, entry in sorted(taken, key=lambda pair: pair[0])]
    files: dict[str, list[dict[str, Any]]] = {status: [] for status in _STATUS_FILES}
    for status in _STATUS_FILES:
        chosen = [c for c in children if (c["Status"] == "SUCCEEDED") == (status == "SUCCEEDED")]
        for number, body in enumerate(result_files(chosen)):
            key = f"{folder}{status}_{number}.json"
            s3.put_object(Bucket=bucket, Key=key, Body=body)
            files[status].append({"Key": key, "Size": len(body)})
    key = f"{folder}manifest.json"
    s3.put_object(Bucket=bucket, Key=key, Body=manifest(bucket, map_run_arn, files))
    return {"MapRunArn": map_run_arn, "ResultWriterDetails": {"Bucket": bucket, "Key": key}}


def _build(rt: Runtime) -> Targets:
    eval_input = InlineItemProcessorWorker.__dict__["_eval_input"]
    eval_job = DistributedItemProcessorWorker.__dict__["_eval_job"]
    eval_execution = state_map.StateMap.__dict__["_eval_execution"]

    def child_eval_input(self: Any, env_frame: Any) -> None:
        eval_input(self, env_frame)
        setattr(env_frame, _CHILD_INPUT, _json(env_frame.states.get_input()))

    def child_eval_job(self: Any, env: Any, job: Any) -> None:
        start = dt.datetime.now(dt.UTC)
        eval_job(self, env, job)  # moto catches the child's failure and counts it
        stop = dt.datetime.now(dt.UTC)
        state = env.program_state()
        # FAILED: a ProgramError, or an exception moto's worker caught and counted as a failure
        status = _ENDED.get(type(state), "FAILED")
        details = (state.error or {}) if isinstance(state, ProgramError) else {}
        record = self._map_run_record
        entry = child_entry(
            map_state_machine_arn=record.map_state_machine_arn,
            name=str(uuid.uuid4()),
            child_input=getattr(env, _CHILD_INPUT, None) or _json(job.job_input),
            status=status,
            start=start,
            stop=stop,
            output=_json(job.job_output) if status == "SUCCEEDED" else None,
            error=details.get("error"),
            cause=details.get("cause"),
        )
        _children(record).append((job.job_index, entry))

    def handle_put_object(env: Any, resource_runtime_part: Any, state_credentials: Any) -> None:
        parameters = env.stack.pop()
        env.stack.pop()  # the children's outputs: the result files hold them
        s3 = ResourceEvalS3._get_s3_client(
            resource_runtime_part=resource_runtime_part, state_credentials=state_credentials
        )
        env.stack.append(_write(env, s3, parameters))

    def map_eval_execution(self: Any, env: Any) -> None:
        try:
            eval_execution(self, env)
        except FailureEventException:
            if self.result_writer is not None and isinstance(
                self.iteration_component, DistributedIterationComponent
            ):
                _write_failed_run(self, env)
            raise

    def _write_failed_run(state: Any, env: Any) -> None:
        runs = env.map_run_record_pool_manager.get_all()
        if not runs or runs[-1].status != MapRunStatus.FAILED or not _children(runs[-1]):
            return  # no child ran (e.g. the ItemReader failed): nothing to write
        try:
            env.stack.append([])  # the results slot the writer pops
            state.result_writer.eval(env)
            env.stack.pop()  # its ResultWriterDetails: the Map state fails instead
        except Exception:  # the Map state's own failure is what the execution reports
            LOG.warning("writing the failed Map Run's results failed", exc_info=True)

    return {
        (DistributedItemProcessorWorker, "_eval_input"): child_eval_input,
        (DistributedItemProcessorWorker, "_eval_job"): child_eval_job,
        (ResourceEvalS3, "_handle_put_object"): staticmethod(handle_put_object),
        (state_map.StateMap, "_eval_execution"): map_eval_execution,
    }


PATCHES = [
    Patch(
        name="sfn-map-result-writer",
        kind=Kind.FIX,
        reason="A Distributed Map's ResultWriter writes SUCCEEDED_n.json/FAILED_n.json with "
        "each child's input/output/error and a manifest listing them, also when the Map Run "
        "fails, as on AWS; moto writes an empty manifest and drops the results.",
        test="localcloud/tests/test_distributed_map.py"
        "::test_result_writer_writes_each_childs_output_where_the_manifest_points",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto resource_eval_s3.py "
        "'TODO: generate result files and upload them to s3'",
    )
]
