"""Step Functions Local MockConfigFile test cases on moto's interpreter.

moto ships the MockConfigFile model of the LocalStack port (stepfunctions/parser/mocking/),
but ``load_mock_test_case_for`` always returns None: nothing loads a file. Here
``StartExecution(stateMachineArn="<arn>#<TestCase>")`` (the convention of Step Functions
Local) builds the ``MockTestCase`` from ``Runtime.mock_config`` (a parsed MockConfigFile) and
hands it to the execution's worker (backend/execution_worker.py, ``mock_test_case``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from moto.stepfunctions.parser import models as sfn_parser_models
from moto.stepfunctions.parser.backend import execution as sfn_execution
from moto.stepfunctions.parser.mocking import mock_config

from localcloud.patching import Kind, Patch, Targets

if TYPE_CHECKING:
    from localcloud.runtime import Runtime

__all__ = ["PATCHES", "build_mock_test_case"]


def build_mock_test_case(cfg: dict[str, Any], sm_name: str, test_case: str) -> Any:
    tc = cfg["StateMachines"][sm_name]["TestCases"][test_case]
    states = []
    for state_name, resp_name in tc.items():
        responses: list[Any] = []
        for rng, spec in cfg["MockedResponses"][resp_name].items():
            start, end = mock_config._parse_mocked_response_range(rng)
            if "Return" in spec:
                responses.append(mock_config.MockedResponseReturn(start, end, spec["Return"]))
            else:
                t = spec["Throw"]
                responses.append(
                    mock_config.MockedResponseThrow(start, end, t.get("Error"), t.get("Cause"))
                )
        states.append(mock_config.StateMockedResponses(state_name, resp_name, responses))
    return mock_config.MockTestCase(sm_name, test_case, states)


def _build(rt: Runtime) -> Targets:
    pending = threading.local()
    start_execution = sfn_parser_models.StepFunctionsParserBackend.start_execution
    get_worker = sfn_execution.Execution._get_start_execution_worker

    def start_mocked_execution(
        self: Any,
        state_machine_arn: str,
        name: str | None = None,
        execution_input: Any = None,
        trace_header: Any = None,
    ) -> Any:
        mock = None
        if "#" in state_machine_arn:
            state_machine_arn, test_case = state_machine_arn.split("#", 1)
            if rt.mock_config is None:
                raise RuntimeError("no MockConfigFile loaded (Runtime.mock_config)")
            mock = build_mock_test_case(rt.mock_config, state_machine_arn.split(":")[6], test_case)
        pending.value = mock  # start_execution -> Execution.start -> worker: one thread
        try:
            return start_execution(self, state_machine_arn, name, execution_input, trace_header)
        finally:
            pending.value = None

    def worker_with_mock(self: Any) -> Any:
        worker = get_worker(self)
        mock = getattr(pending, "value", None)
        if mock is not None:
            worker._mock_test_case = mock
        return worker

    return {
        (sfn_parser_models.StepFunctionsParserBackend, "start_execution"): start_mocked_execution,
        (sfn_execution.Execution, "_get_start_execution_worker"): worker_with_mock,
    }


PATCHES = [
    Patch(
        name="mock-config-file",
        kind=Kind.FEATURE,
        reason="StartExecution of '<arn>#<TestCase>' runs that MockConfigFile test case "
        "(moto ships the model but never loads a file).",
        test="tests/statemachine/test_mock_config.py::test_mocked_path_on_moto",
        build=_build,
    )
]
