"""StartSyncExecution: an EXPRESS execution started and answered when it ends.

AWS (API reference, StartSyncExecution): for an EXPRESS state machine only, the call starts
the execution and answers when it ends, with ``status`` SUCCEEDED, FAILED or TIMED_OUT, its
``output`` (SUCCEEDED) or ``error``/``cause``, the dates, the input and ``billingDetails``;
a STANDARD state machine is refused with ``StateMachineTypeNotSupported``. Its endpoint is
``sync-states.<region>`` (the model's host prefix ``sync-``): a client of a local endpoint
disables host-prefix injection, as for TestState (``AWS_DISABLE_HOST_PREFIX_INJECTION=true``).
moto 5.2.5 has no such action. Here it starts the execution through StartExecution's own path
(so ``<arn>#<TestCase>`` runs a MockConfigFile test case, as Step Functions Local does, and the
execution is an Express one with its logs) and waits for its end in the backend.
"""

from __future__ import annotations

import json
import math
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionResult
from moto.stepfunctions import responses as sfn_responses

from localcloud.features import executions
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

#: An Express execution lasts at most five minutes on AWS; the wait is on the real clock.
WAIT_SECONDS = 300.0


def _answer(execution: Any) -> dict[str, Any]:
    status = str(getattr(execution.exec_status, "value", execution.exec_status))
    answer: dict[str, Any] = {
        "executionArn": execution.exec_arn,
        "stateMachineArn": execution.state_machine_arn,
        "name": execution.name,
        "startDate": execution.start_date,
        "stopDate": execution.stop_date,
        # an aborted one cannot be seen on AWS
        "status": status if status in {"SUCCEEDED", "TIMED_OUT"} else "FAILED",
        "input": json.dumps(execution.input_data, separators=(",", ":")),
        "inputDetails": {"included": True},
    }
    if answer["status"] == "SUCCEEDED":
        answer["output"] = json.dumps(execution.output, separators=(",", ":"))
        answer["outputDetails"] = {"included": True}
    for field in ("error", "cause"):
        if getattr(execution, field, None) is not None:
            answer[field] = getattr(execution, field)
    if execution.start_date and execution.stop_date:
        millis = (execution.stop_date - execution.start_date).total_seconds() * 1000
        answer["billingDetails"] = {
            "billedMemoryUsedInMB": 64,  # the minimum Express bills
            "billedDurationInMilliseconds": max(100, math.ceil(millis / 100) * 100),
        }
    return answer


def _build(rt: Runtime) -> Targets:
    def start_sync_execution(self: Any) -> Any:
        arn = self._get_param("stateMachineArn")
        machine = self.stepfunction_backend.describe_state_machine(arn.split("#", 1)[0])
        if str(getattr(machine.type, "value", machine.type)) != "EXPRESS":
            raise JsonRESTError(
                "StateMachineTypeNotSupported",
                "This operation is not supported by this type of state machine",
            )
        started = self.stepfunction_backend.start_execution(
            arn,
            self._get_param("name"),
            self._get_param("input", if_none="{}"),
            self._get_param("traceHeader"),
        )
        ended = rt.wait_until(lambda: executions.ended(started.exec_arn), WAIT_SECONDS)
        if not ended:
            raise JsonRESTError("InternalServerError", f"{started.exec_arn} did not end")
        return ActionResult(_answer(ended))

    return {(sfn_responses.StepFunctionResponse, "start_sync_execution"): start_sync_execution}


PATCHES = [
    Patch(
        name="sfn-start-sync-execution",
        kind=Kind.FEATURE,
        reason="StartSyncExecution (moto has no such action): an EXPRESS execution answered "
        "when it ends, a MockConfigFile test case with <arn>#<TestCase>; STANDARD refused.",
        test="localcloud/tests/test_mock_config.py"
        "::test_start_sync_execution_runs_a_test_case_of_an_express_machine",
        build=_build,
        adds=("start_sync_execution",),
    )
]
