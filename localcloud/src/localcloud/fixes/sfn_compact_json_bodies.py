"""Fix: an object given as an SQS ``MessageBody`` or SNS ``Message`` of a Step Functions
optimized integration is sent as compact JSON text, as on AWS.

AWS ("Send messages to an Amazon SQS queue with Step Functions": "MessageBody.$": "$.message"
of an object) sends the object's JSON text without whitespace: the published sfn-sqs pattern
shows the input ``{"message": {"hello" : "world" } }`` received as the body
``{"hello":"world"}`` (MD5 ``fbc24bcc7a1794758fc1327fcfebdaf6``, in both the task's output
and the message). moto's copies of LocalStack's tasks (service/state_task_service_sqs.py and
state_task_service_sns.py) serialize it with ``to_json_str``, i.e. ``json.dumps`` with its
default separators: ``{"hello": "world"}``, another body and another MD5.
"""

from __future__ import annotations

from typing import Any

from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_sns,
    state_task_service_sqs,
)
from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]


def _compact_json(obj: Any, separators: tuple[str, str] | None = None) -> str:
    return to_json_str(obj, separators=separators or (",", ":"))


def _build(rt: Runtime) -> Targets:
    return {
        (state_task_service_sqs, "to_json_str"): _compact_json,
        (state_task_service_sns, "to_json_str"): _compact_json,
    }


PATCHES = [
    Patch(
        name="sfn-compact-json-bodies",
        kind=Kind.FIX,
        reason="an object as the SQS MessageBody / SNS Message of an optimized integration "
        'is sent as compact JSON ({"hello":"world"}), as AWS does (moto: json.dumps\'s '
        "default separators, another body and MD5).",
        test="localcloud/tests/test_serverless_patterns.py::test_pattern",
        build=_build,
        upstream="no moto issue found (searched 2026-11-28): "
        "state_task_service_sqs.py/_sns.py call to_json_str without separators",
    )
]
