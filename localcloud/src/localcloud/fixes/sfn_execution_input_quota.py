"""Fix: StartExecution refuses an input over Step Functions' payload quota, as AWS does.

AWS: "Maximum input or output size for a task, state, or execution: 262,144 bytes of data
as a UTF-8 encoded string" (https://docs.aws.amazon.com/step-functions/latest/dg/
service-quotas.html, "Quotas related to state machine executions"); the API reference gives
StartExecution's ``input`` "Maximum length of 262144", expressed "as bytes in UTF-8
encoding". StartExecution refuses a larger input before it looks at the state machine:
HTTP 400 ``ValidationException`` "1 validation error detected: Value at 'input' failed to
satisfy constraint: Member must have size less than or equal to 262144 bytes in UTF-8
encoding" (the value is left out: ``input`` is sensitive data; the message as AWS answers
it, recorded by others calling StartExecution).

moto 5.2 (stepfunctions/responses.py ``start_execution``) only checks that the input is
JSON, so a 300 KB input starts an execution locally that AWS never starts. Inside an
execution moto already enforces the quota (``States.DataLimitExceeded``, parser/quotas.py).
moto has no StartSyncExecution, so it accepts no oversized input there either.
"""

from __future__ import annotations

from typing import Any

from moto.stepfunctions.exceptions import ValidationException
from moto.stepfunctions.responses import StepFunctionResponse

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["MAX_EXECUTION_INPUT_BYTES", "PATCHES"]

MAX_EXECUTION_INPUT_BYTES = 262_144


def _build(rt: Runtime) -> Targets:
    start_execution = StepFunctionResponse.start_execution

    def checked_start_execution(self: StepFunctionResponse) -> Any:
        execution_input = self._get_param("input")
        size = len(execution_input.encode("utf-8")) if isinstance(execution_input, str) else 0
        if size > MAX_EXECUTION_INPUT_BYTES:
            raise ValidationException(
                "1 validation error detected: Value at 'input' failed to satisfy "
                "constraint: Member must have size less than or equal to "
                f"{MAX_EXECUTION_INPUT_BYTES} bytes in UTF-8 encoding"
            )
        return start_execution(self)

    return {(StepFunctionResponse, "start_execution"): checked_start_execution}


PATCHES = [
    Patch(
        name="sfn-execution-input-quota",
        kind=Kind.FIX,
        reason="StartExecution refuses an input over 262,144 UTF-8 bytes with AWS's "
        "ValidationException (moto starts the execution).",
        test="localcloud/tests/test_quotas.py"
        "::test_start_execution_refuses_an_input_over_the_quota",
        build=_build,
        upstream="no moto issue found (searched 2026-11-25): moto "
        "stepfunctions/responses.py start_execution checks only that the input is JSON",
    )
]
