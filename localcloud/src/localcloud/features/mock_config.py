"""Step Functions Local MockConfigFile test cases on moto's interpreter.

moto ships the MockConfigFile model of the LocalStack port (stepfunctions/parser/mocking/),
but ``load_mock_test_case_for`` always returns None: nothing loads a file. Here
``StartExecution(stateMachineArn="<arn>#<TestCase>")`` (the convention of Step Functions
Local) builds the ``MockTestCase`` from ``Runtime.mock_config`` (a parsed MockConfigFile) and
hands it to the execution's worker (backend/execution_worker.py, ``mock_test_case``).

The file is read once, at start (``load_mock_config``: ``localcloud up --mock-config FILE``
or ``SFN_MOCK_CONFIG``, as Step Functions Local reads it at boot), and checked whole then: a
malformed file is refused before anything is deployed, with every problem named. At
StartExecution (docs/coming-from-step-functions-local.md):

* the state machine is looked up first (``StateMachineDoesNotExist`` as without a test case);
* a test case that the file does not hold for that state machine's name, or a ``#`` when no
  file was loaded, is refused with ``InvalidArn`` (400) naming what is missing;
* a test case that mocks a state the definition does not have is refused with
  ``ValidationException`` (400) naming the state; nothing is started, the server serves on.

States the test case does not name run for real: their service integrations call the local
services, as the state machine's role (refused by IAM when that role does not exist or
does not allow the call, as on AWS; Step Functions Local would call AWS or its
``*_ENDPOINT`` settings with the container's credentials).
"""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

from moto.stepfunctions.exceptions import InvalidArn, ValidationException
from moto.stepfunctions.parser import models as sfn_parser_models
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_aws_sdk as aws_sdk,
)
from moto.stepfunctions.parser.backend import execution as sfn_execution
from moto.stepfunctions.parser.mocking import mock_config

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = [
    "MOCK_CONFIG_VARIABLE",
    "PATCHES",
    "MockConfigError",
    "build_mock_test_case",
    "check_mock_config",
    "inner_state_names",
    "load_mock_config",
    "state_names",
]

#: As for Step Functions Local: the path of the MockConfigFile to load at start.
MOCK_CONFIG_VARIABLE = "SFN_MOCK_CONFIG"


class MockConfigError(ValueError):
    """A MockConfigFile that cannot be used; the message names every problem."""


def _responses(name: str, spec: Any) -> tuple[list[Any], list[str]]:
    """A MockedResponses entry as moto's model, and what is wrong with it."""
    if not isinstance(spec, dict) or not spec:
        return [], [f'MockedResponses.{name}: expected an object of response keys ("0", "1-2")']
    responses: list[Any] = []
    problems: list[str] = []
    for key, response in spec.items():
        where = f"MockedResponses.{name}.{key}"
        try:
            start, end = mock_config._parse_mocked_response_range(key)
        except Exception:
            problems.append(f'{where}: the key must be a number or a range ("0", "1-2")')
            continue
        if not isinstance(response, dict) or len(set(response) & {"Return", "Throw"}) != 1:
            problems.append(f"{where}: expected exactly one of Return or Throw")
            continue
        try:
            if "Return" in response:
                responses.append(mock_config.MockedResponseReturn(start, end, response["Return"]))
                continue
            throw = response["Throw"]
            if not isinstance(throw, dict) or not isinstance(throw.get("Error"), str):
                problems.append(f"{where}.Throw: expected an object with an Error string")
                continue
            responses.append(
                mock_config.MockedResponseThrow(start, end, throw["Error"], throw.get("Cause", ""))
            )
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
    if not problems:
        try:
            mock_config.StateMockedResponses(name, name, responses)
        except RuntimeError as exc:  # moto's check that the keys are consecutive from 0
            problems.append(f"MockedResponses.{name}: {exc}")
    return responses, problems


def check_mock_config(cfg: Any) -> list[str]:
    """Every problem of a parsed MockConfigFile (empty when Step Functions Local takes it)."""
    if not isinstance(cfg, dict):
        return ["expected a JSON object with StateMachines and MockedResponses"]
    top = ("StateMachines", "MockedResponses")
    problems = [f"unknown top-level key {key!r}" for key in cfg if key not in top]
    machines, mocked = cfg.get("StateMachines", {}), cfg.get("MockedResponses", {})
    if not isinstance(machines, dict) or not isinstance(mocked, dict):
        return [*problems, "StateMachines and MockedResponses must be objects"]
    for name, spec in mocked.items():
        problems.extend(_responses(name, spec)[1])
    for machine, spec in machines.items():
        cases = spec.get("TestCases") if isinstance(spec, dict) else None
        if not isinstance(cases, dict):
            problems.append(f"StateMachines.{machine}: expected an object with TestCases")
            continue
        for case, states in cases.items():
            if not isinstance(states, dict):
                problems.append(f"StateMachines.{machine}.TestCases.{case}: expected an object")
                continue
            problems.extend(
                f"StateMachines.{machine}.TestCases.{case}.{state}: no MockedResponses "
                f"entry {response!r}"
                for state, response in states.items()
                if not isinstance(response, str) or response not in mocked
            )
    return problems


def load_mock_config(path: str | Path) -> dict[str, Any]:
    """Read and check a MockConfigFile; MockConfigError names what is wrong."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise MockConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MockConfigError(
            f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    problems = check_mock_config(cfg)
    if problems:
        raise MockConfigError(f"{path} is not a valid MockConfigFile: " + "; ".join(problems))
    return dict(cfg)


def state_names(definition: Any) -> set[str]:
    """Every state of an ASL definition, those of Parallel branches and Map processors too."""
    names: set[str] = set()
    states = definition.get("States") if isinstance(definition, dict) else None
    for name, state in (states or {}).items():
        names |= {name, *inner_state_names(state)}
    return names


def inner_state_names(state: dict[str, Any]) -> set[str]:
    """Every state inside a Parallel state's branches or a Map state's processor."""
    names: set[str] = set()
    for branch in state.get("Branches") or ():
        names |= state_names(branch)
    for key in ("ItemProcessor", "Iterator"):
        if isinstance(state.get(key), dict):
            names |= state_names(state[key])
    return names


def build_mock_test_case(cfg: dict[str, Any], sm_name: str, test_case: str) -> Any:
    tc = cfg["StateMachines"][sm_name]["TestCases"][test_case]
    states = []
    for state_name, resp_name in tc.items():
        responses, problems = _responses(resp_name, cfg["MockedResponses"][resp_name])
        if problems:
            raise MockConfigError("; ".join(problems))
        states.append(mock_config.StateMockedResponses(state_name, resp_name, responses))
    return mock_config.MockTestCase(sm_name, test_case, states)


def resolve_test_case(cfg: dict[str, Any] | None, state_machine: Any, test_case: str) -> Any:
    """The MockTestCase ``#test_case`` names for ``state_machine``, or AWS-style errors."""
    name = state_machine.name
    if cfg is None:
        raise InvalidArn(
            f"Invalid Arn: '{state_machine.arn}#{test_case}': test case {test_case!r} "
            f"requested but no mock configuration is loaded (start with --mock-config FILE "
            f"or {MOCK_CONFIG_VARIABLE}=FILE)"
        )
    cases = (cfg["StateMachines"].get(name) or {}).get("TestCases") or {}
    if test_case not in cases:
        known = ", ".join(sorted(cases)) or "none"
        raise InvalidArn(
            f"Invalid Arn: '{state_machine.arn}#{test_case}': the mock configuration has no "
            f"test case {test_case!r} for state machine {name!r} (its test cases: {known})"
        )
    try:
        definition = json.loads(state_machine.definition)
    except (TypeError, ValueError):
        definition = None  # a YAML or JSONata definition moto parsed otherwise: not checked
    if isinstance(definition, dict):
        missing = sorted(set(cases[test_case]) - state_names(definition))
        if missing:
            raise ValidationException(
                f"Test case {test_case!r} of the mock configuration mocks "
                f"{', '.join(map(repr, missing))}, which state machine {name!r} does not have"
            )
    return build_mock_test_case(cfg, name, test_case)


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
        name = name or str(uuid.uuid4())  # as AWS names an execution started without one
        if "#" in state_machine_arn:
            state_machine_arn, test_case = state_machine_arn.split("#", 1)
            machine = self.describe_state_machine(state_machine_arn)
            mock = resolve_test_case(rt.mock_config, machine, test_case)
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


def _build_sdk_resource_names(rt: Runtime) -> Targets:
    """In a mocked execution, an ``aws-sdk`` task's events name it as Step Functions Local
    does: ``resource`` "comprehend:detectSentiment", ``resourceType`` "aws-sdk" (AWS, and
    moto, say "detectSentiment" and "aws-sdk:comprehend"). Suites written for Step Functions
    Local query that form (aws-samples/aws-stepfunctions-examples, app-local-testing-mock-config
    makefile, ``retry-h``); executions without a test case keep AWS's."""
    mocked = threading.local()
    eval_execution = aws_sdk.StateTaskServiceAwsSdk._eval_execution
    resource_type = aws_sdk.StateTaskServiceAwsSdk._get_sfn_resource_type
    resource = aws_sdk.StateTaskServiceAwsSdk._get_sfn_resource

    def eval_sdk_task(self: Any, env: Any) -> None:
        previous = getattr(mocked, "value", False)
        mocked.value = env.mock_test_case is not None
        try:
            eval_execution(self, env)
        finally:
            mocked.value = previous

    def sfn_local_resource(self: Any) -> str:
        if getattr(mocked, "value", False):
            return f"{self.resource.api_name}:{self.resource.api_action}"
        return str(resource(self))

    def sfn_local_resource_type(self: Any) -> str:
        return "aws-sdk" if getattr(mocked, "value", False) else str(resource_type(self))

    return {
        (aws_sdk.StateTaskServiceAwsSdk, "_eval_execution"): eval_sdk_task,
        (aws_sdk.StateTaskServiceAwsSdk, "_get_sfn_resource"): sfn_local_resource,
        (aws_sdk.StateTaskServiceAwsSdk, "_get_sfn_resource_type"): sfn_local_resource_type,
    }


PATCHES = [
    Patch(
        name="mock-config-file",
        kind=Kind.FEATURE,
        reason="StartExecution of '<arn>#<TestCase>' runs that MockConfigFile test case "
        "(moto ships the model but never loads a file); an unknown test case is InvalidArn.",
        test="tests/statemachine/test_mock_config.py::test_mocked_path_on_moto",
        build=_build,
    ),
    Patch(
        name="mock-config-sdk-resource-names",
        kind=Kind.FEATURE,
        reason="In a '#TestCase' execution an aws-sdk task's events say resource "
        "'<service>:<action>', resourceType 'aws-sdk', as Step Functions Local writes them "
        "and the published suites query them.",
        test="tests/conformance/test_stepfunctions_local_suites.py"
        "::test_app_local_testing_mock_config_makefile",
        build=_build_sdk_resource_names,
    ),
]
