"""The Step Functions TestState API on the local cloud (``aws stepfunctions test-state``).

moto 5.2.5 ships LocalStack's first TestState engine (stepfunctions/parser: the one-state
parser ``asl/parse/test_state/``, ``TestStateExecution``) but no ``TestState`` action, and the
engine predates the November 2025 API (``stateName``, ``mock``, ``stateConfiguration``,
RETRIABLE, CAUGHT_ERROR, Map, Parallel). Here the action is added on moto's engine, field by
field from the API reference (botocore's model) and the guide "Testing state machines with
TestState API" (docs/coming-from-step-functions-local.md says what each field does here):

* ``definition`` is one state, or a whole state machine with ``stateName`` naming the state
  (its QueryLanguage is the machine's unless its own); ``variables`` are its variables;
* the state runs once on moto's one-state engine (its data flow fills ``inspectionData``,
  with ``variables`` after the state); its ``Retry`` and ``Catch`` are decided here, without
  retrying: RETRIABLE (``stateConfiguration.retrierRetryCount`` attempts made so far) with
  ``errorDetails`` retryIndex/retryBackoffIntervalSeconds, CAUGHT_ERROR with the catcher's
  ``nextState`` and its ResultPath applied, or FAILED;
* ``mock.result`` / ``mock.errorOutput`` replace the service's answer, checked against the
  API's output shape for an ``aws-sdk`` task unless ``fieldValidationMode`` is NONE;
* Map and Parallel states, activity tasks and ``.sync``/``.waitForTaskToken`` run only with a
  mock (the mock is the state's result); ``mapIterationFailureCount`` above the Map's
  tolerated count or percentage fails it with ``States.ExceedToleratedFailureThreshold``;
  ``errorCausedByState`` must name a state inside it;
* ``context`` (only with a mock) is the Context object ``$$.`` paths read;
* ``inspectionLevel`` TRACE is DEBUG's; ``revealSecrets`` needs ``states:RevealSecrets``;
* without a mock, a Task calls the local services as ``roleArn`` (required then), authorized
  by the local cloud's IAM as an execution with that role would be.

Not honoured: HTTP Tasks (no ``request``/``response``, so revealSecrets reveals nothing);
ToleratedFailureCountPath / ToleratedFailurePercentagePath; the jitter of
``retryBackoffIntervalSeconds`` (the un-jittered backoff is reported).
"""

from __future__ import annotations

import copy
import datetime
import json
import uuid
from typing import Any

import botocore.session
from moto.core.exceptions import JsonRESTError
from moto.stepfunctions import responses as sfn_responses
from moto.stepfunctions.exceptions import InvalidArn
from moto.stepfunctions.parser.api import InspectionLevel
from moto.stepfunctions.parser.asl.parse.asl_parser import ASLParserException
from moto.stepfunctions.parser.asl.utils.json_path import extract_json
from moto.stepfunctions.parser.backend.state_machine import TestStateMachine
from moto.stepfunctions.parser.backend.test_state.execution import TestStateExecution
from moto.stepfunctions.parser.backend.test_state.execution_worker import (
    TestStateExecutionWorker,
)
from moto.stepfunctions.parser.mocking import mock_config

from localcloud.features.mock_config import inner_state_names
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "run_test_state"]

_STATE_NAME = "TestState"  # moto's one-state parser names the state so
_MOCK_ONLY = {"Map", "Parallel"}
_DATA_FLOW = ("InputPath", "ResultSelector", "ResultPath", "OutputPath", "Output", "Assign")


def _invalid(message: str) -> JsonRESTError:
    return JsonRESTError("InvalidDefinition", f"Invalid State Machine Definition: '{message}'")


def _validation(message: str) -> JsonRESTError:
    return JsonRESTError("ValidationException", message)


def _json(text: Any, field: str, code: str = "ValidationException") -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        raise JsonRESTError(code, f"{field}: not valid JSON") from None


def _select_state(definition: Any, state_name: str | None) -> tuple[str, dict[str, Any]]:
    if not isinstance(definition, dict):
        raise _invalid("SCHEMA_VALIDATION_FAILED: the definition must be a JSON object")
    if "States" in definition:
        states = definition["States"]
        if not state_name:
            raise _validation(
                "stateName is required when the definition is a state machine definition"
            )
        if not isinstance(states, dict) or state_name not in states:
            raise _validation(f"stateName '{state_name}' is not a state of the definition")
        language = {"QueryLanguage": definition.get("QueryLanguage", "JSONPath")}
        return state_name, {**language, **states[state_name]}  # the machine's, unless its own
    if "Type" not in definition:
        raise _invalid("SCHEMA_VALIDATION_FAILED: the state has no Type")
    return state_name or _STATE_NAME, definition


def _needs_mock(state: dict[str, Any]) -> str | None:
    kind = state.get("Type")
    if kind in _MOCK_ONLY:
        return f"{kind} states"
    resource = str(state.get("Resource", ""))
    if kind == "Task" and ":activity:" in resource:
        return "Activity tasks"
    if kind == "Task" and resource.endswith((".sync", ".sync:2", ".waitForTaskToken")):
        return "the .sync and .waitForTaskToken integration patterns"
    return None


def _sdk_output_shape(resource: str) -> Any:
    """The botocore output shape of an ``arn:aws:states:::aws-sdk:<service>:<action>`` task."""
    parts = resource.split(":")
    if len(parts) < 8 or parts[5] != "aws-sdk":
        return None
    service, action = parts[6], parts[7].split(".")[0]
    try:
        model = botocore.session.get_session().get_service_model(service)
    except Exception:
        return None
    wanted = action[:1].upper() + action[1:]
    return model.operation_model(wanted).output_shape if wanted in model.operation_names else None


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "long": (int,),
    "boolean": (bool,),
    "double": (int, float),
    "float": (int, float),
    "timestamp": (str, int, float),
    "blob": (str,),
    "list": (list,),
    "map": (dict,),
    "structure": (dict,),
}


def _shape_problems(value: Any, shape: Any, where: str, *, strict: bool) -> list[str]:
    expected = _TYPES.get(shape.type_name)
    if expected and (
        not isinstance(value, expected)
        or (shape.type_name in {"integer", "long"} and isinstance(value, bool))
    ):
        return [f"{where}: expected {shape.type_name}"]
    problems: list[str] = []
    if shape.type_name == "structure":
        members = {name.lower(): (name, member) for name, member in shape.members.items()}
        for key, item in value.items():
            found = members.get(key.lower())
            if found is None:
                problems.append(f"{where}.{key}: not a field of {shape.name}")
            else:
                problems += _shape_problems(item, found[1], f"{where}.{key}", strict=strict)
        if strict:
            present = {k.lower() for k in value}
            problems += [
                f"{where}.{name}: required field missing"
                for name in shape.required_members
                if name.lower() not in present
            ]
    elif shape.type_name == "list":
        for index, item in enumerate(value):
            problems += _shape_problems(item, shape.member, f"{where}[{index}]", strict=strict)
    elif shape.type_name == "map":
        for key, item in value.items():
            problems += _shape_problems(item, shape.value, f"{where}.{key}", strict=strict)
    return problems


def _check_mock(mock: dict[str, Any], state: dict[str, Any]) -> Any:
    """The mocked result (parsed), or None for an errorOutput; refuses what AWS refuses."""
    has_result, has_error = "result" in mock, "errorOutput" in mock
    if has_result == has_error:
        raise _validation("A mock must specify exactly one of result or errorOutput")
    mode = mock.get("fieldValidationMode", "STRICT")
    if mode not in {"STRICT", "PRESENT", "NONE"}:
        raise _validation(f"fieldValidationMode '{mode}' is not STRICT, PRESENT or NONE")
    if state.get("Type") not in {"Task", "Map", "Parallel"}:
        raise _validation(f"A mock is not supported for a {state.get('Type')} state")
    if has_error:
        error = mock["errorOutput"]
        if not isinstance(error, dict) or not isinstance(error.get("error"), str):
            raise _validation("mock.errorOutput must have an error")
        return None
    result = _json(mock["result"], "mock.result")
    shape = _sdk_output_shape(str(state.get("Resource", ""))) if mode != "NONE" else None
    if shape is not None and isinstance(result, dict):
        problems = _shape_problems(result, shape, "result", strict=mode == "STRICT")
        if problems:
            raise _validation(
                "The mock result does not match the API's output shape "
                f"({shape.name}, fieldValidationMode {mode}): {'; '.join(problems)}"
            )
    return result


def _as_mocked_task(state: dict[str, Any]) -> dict[str, Any]:
    """A Map or Parallel state's data flow as a Task whose (mocked) result is the state's."""
    task = {k: v for k, v in state.items() if k in (*_DATA_FLOW, "Next", "End", "QueryLanguage")}
    task.update(Type="Task", Resource="arn:aws:states:::lambda:invoke")
    return task


class _GivenContext(dict):  # type: ignore[type-arg]
    """The engine's Context object with the request's ``context`` over it (the fields of each
    of its objects over the engine's), also when the state's entry sets ``State``."""

    given: dict[str, Any]

    def __setitem__(self, key: str, value: Any) -> None:
        given = self.given.get(key)
        if isinstance(given, dict) and isinstance(value, dict):
            value = {**value, **given}
        super().__setitem__(key, value)


class _MockedWorker(TestStateExecutionWorker):
    def _get_evaluation_environment(self) -> Any:
        env = super()._get_evaluation_environment()
        env.mock_test_case = self._mock_test_case
        env.variable_store._inner_scope.update(self._execution.variables)  # Assign may set them
        self._execution.store = env.variable_store
        if self._context is not None:  # what JSONPath ``$$.`` paths read
            engine = env.states.context_object.context_object_data
            context = _GivenContext(engine)
            context.given = self._context
            for key, value in self._context.items():
                context[key] = engine.get(key, value)
            env.states.context_object.context_object_data = context
        return env


class _Execution(TestStateExecution):
    mock_test_case: Any = None
    context: dict[str, Any] | None = None
    variables: dict[str, Any] = {}  # noqa: RUF012 - replaced per execution, never changed
    store: Any = None  # the state's variables (moto's VariableStore) once it has run

    def _get_start_execution_worker(self) -> Any:
        worker = super()._get_start_execution_worker()
        worker.__class__ = _MockedWorker
        worker._mock_test_case, worker._context = self.mock_test_case, self.context
        worker._execution = self
        return worker


def _mock_test_case(mocked: Any, mock: dict[str, Any]) -> Any:
    if "errorOutput" not in mock:
        response: Any = mock_config.MockedResponseReturn(0, 0, mocked)
    else:
        error = mock["errorOutput"]
        response = mock_config.MockedResponseThrow(0, 0, error["error"], error.get("cause", ""))
    responses = mock_config.StateMockedResponses(_STATE_NAME, "mock", [response])
    return mock_config.MockTestCase("TestState", "mock", [responses])


# What States.ALL does not match (developer guide, "Error names"): a runtime error and the
# terminal DataLimitExceeded fail the execution whatever its Retry and Catch say.
_UNMATCHED_BY_ALL = frozenset({"States.Runtime", "States.DataLimitExceeded"})
# The name a mocked States.* error runs under in moto's engine (which lets no state raise a
# reserved name); the answer reports the mocked one.
_STAND_IN = "LocalCloud.MockedStatesError"


def _matches(error: str, equals: list[str], *, retry: bool) -> bool:
    if error in equals:
        return not (retry and error == "States.Runtime")  # a runtime error is never retried
    if "States.ALL" in equals:
        return error not in _UNMATCHED_BY_ALL
    return "States.TaskFailed" in equals and error not in {"States.Timeout", *_UNMATCHED_BY_ALL}


def _set_path(document: Any, path: str | None, value: Any) -> Any:
    """A JSONPath ResultPath (``$``, ``null``, ``$.a.b``) applied to ``document``."""
    if path is None:
        return document
    if path == "$":
        return value
    result = copy.deepcopy(document) if isinstance(document, dict) else {}
    node = result
    keys = [k for k in path[2:].replace("['", ".").replace("']", "").split(".") if k]
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value
    return result


def _backoff(retrier: dict[str, Any], attempt: int) -> int:
    rate = float(retrier.get("BackoffRate", 2.0))
    interval = float(retrier.get("IntervalSeconds", 1)) * rate**attempt
    return int(min(interval, float(retrier.get("MaxDelaySeconds", "inf"))))


def run_test_state(params: dict[str, Any], account: str, region: str) -> dict[str, Any]:  # noqa: PLR0912, PLR0915
    """A TestState request's answer (the API's output fields); JsonRESTError (400) refuses it."""
    definition = _json(params.get("definition"), "definition", "InvalidDefinition")
    name, state = _select_state(definition, params.get("stateName"))
    mock = params.get("mock")
    configuration = params.get("stateConfiguration") or {}
    level = params.get("inspectionLevel") or InspectionLevel.INFO
    if level not in {"INFO", "DEBUG", "TRACE"}:
        raise _validation(f"inspectionLevel '{level}' is not INFO, DEBUG or TRACE")
    role_arn = params.get("roleArn")
    if role_arn is not None and not str(role_arn).startswith("arn:"):
        raise InvalidArn(f"Invalid Arn: '{role_arn}'")
    state_input = _json(params.get("input") or "{}", "input", "InvalidExecutionInput")
    mocked = _check_mock(mock, state) if mock else None
    given_context = _json(params["context"], "context") if params.get("context") else None
    if params.get("context") is not None and not (mock and isinstance(given_context, dict)):
        raise _validation("context (a Context object) may only be specified with a mock")
    needs = _needs_mock(state)
    if needs and not mock:
        raise _validation(f"TestState supports {needs} only when a mock is specified")
    if state.get("Type") == "Task" and not mock and not role_arn:
        raise _validation("roleArn is required when no mock is specified for a Task state")
    caused_by = configuration.get("errorCausedByState")
    if caused_by is not None and caused_by not in inner_state_names(state):
        raise _validation(
            f"errorCausedByState '{caused_by}' is not a state of the {state.get('Type')} "
            f"state '{name}'"
        )
    if "mapItemReaderData" in configuration:
        if state.get("Type") != "Map" or "ItemReader" not in state:
            raise _validation("mapItemReaderData applies to a Map state with an ItemReader")
        _json(configuration["mapItemReaderData"], "stateConfiguration.mapItemReaderData")
    if "mapIterationFailureCount" in configuration and state.get("Type") != "Map":
        raise _validation("mapIterationFailureCount applies to a Map state")

    runnable = {k: v for k, v in state.items() if k not in {"Retry", "Catch"}}
    if state.get("Type") in _MOCK_ONLY:
        runnable = _as_mocked_task(runnable)
    if runnable.get("Type") not in {"Choice", "Succeed", "Fail"}:
        runnable.pop("Next", None)  # one state runs: it ends (its Next is reported here)
        runnable["End"] = True
    failures = state.get("Type") == "Map" and "mapIterationFailureCount" in configuration
    if failures and _exceeds_tolerance(state, state_input, configuration):
        cause = "The specified tolerated failure threshold was exceeded"
        mock = {"errorOutput": {"error": "States.ExceedToleratedFailureThreshold", "cause": cause}}
    execution = _new_execution(json.dumps(runnable), role_arn, state_input, account, region)
    reserved = None  # a mocked States.* error (moto's engine lets no state raise one)
    if mock and str((mock.get("errorOutput") or {}).get("error", "")).startswith("States."):
        reserved = mock["errorOutput"]["error"]
        mock = {**mock, "errorOutput": {**mock["errorOutput"], "error": _STAND_IN}}
    if params.get("variables"):
        execution.variables = _json(params["variables"], "variables")
    if mock:
        execution.mock_test_case = _mock_test_case(mocked, mock)
        execution.context = given_context
    try:
        execution.start()
    except (ASLParserException, ValueError) as exc:  # the preprocessor raises ValueError too
        raise _invalid(f"SCHEMA_VALIDATION_FAILED: {exc}") from None
    output = execution.to_test_state_output(inspection_level=InspectionLevel.TRACE)
    inspection = dict(output.pop("inspectionData", None) or {})
    _complete_inspection(state, state_input, inspection, given_context or {})
    store = execution.store  # the variables after the state: the given ones and its Assign
    if store is not None and (variables := {**store._outer_scope, **store._inner_scope}):
        inspection["variables"] = json.dumps(variables)
    answer: dict[str, Any] = {k: v for k, v in output.items() if v is not None}
    if reserved is not None and answer.get("error") == _STAND_IN:
        answer["error"] = reserved
    if answer.get("status") == "SUCCEEDED":
        if state.get("Type") not in {"Choice", "Succeed", "Fail"} and state.get("Next"):
            answer["nextState"] = state["Next"]
    elif answer.get("status") == "FAILED" and state.get("Type") != "Fail":
        answer = _handle_error(state, answer, configuration, state_input, inspection)
    if level != "INFO":
        answer["inspectionData"] = inspection
    return answer


def _handle_error(
    state: dict[str, Any],
    answer: dict[str, Any],
    configuration: dict[str, Any],
    state_input: Any,
    inspection: dict[str, Any],
) -> dict[str, Any]:
    error, cause = str(answer.get("error", "")), answer.get("cause")
    failed = {k: v for k, v in answer.items() if k in {"status", "error", "cause"}}
    for index, retrier in enumerate(state.get("Retry") or ()):
        if _matches(error, list(retrier.get("ErrorEquals") or ()), retry=True):
            attempts = int(configuration.get("retrierRetryCount", 0))
            if attempts < int(retrier.get("MaxAttempts", 3)):
                inspection["errorDetails"] = {
                    "retryIndex": index,
                    "retryBackoffIntervalSeconds": _backoff(retrier, attempts),
                }
                return {**failed, "status": "RETRIABLE"}
            break  # the retrier that applies is exhausted: the catchers decide
    for index, catcher in enumerate(state.get("Catch") or ()):
        if _matches(error, list(catcher.get("ErrorEquals") or ()), retry=False):
            error_output = {"Error": error, "Cause": cause or ""}
            result_path = catcher.get("ResultPath", "$")
            output = _set_path(state_input, result_path, error_output)
            inspection["errorDetails"] = {"catchIndex": index}
            inspection["afterResultPath"] = json.dumps(output)
            return {
                **failed,
                "status": "CAUGHT_ERROR",
                "nextState": catcher["Next"],
                "output": json.dumps(output),
            }
    return failed


def _complete_inspection(
    state: dict[str, Any], state_input: Any, inspection: dict[str, Any], context: dict[str, Any]
) -> None:
    """What moto's one-state engine leaves out of inspectionData (JSONPath states).

    afterResultSelector is the result when the state has no ResultSelector (the developer
    guide's Pass example shows it); a Map reports afterItemsPath, afterItemSelector and its
    maxConcurrency / tolerated failures (the guide's "Understanding Map state inspection data").
    """
    if "afterResultPath" in inspection and "afterResultSelector" not in inspection:
        result = inspection.get("result")
        if result is None and state.get("Type") == "Pass":
            result = json.dumps(state["Result"]) if "Result" in state else None
            result = result or inspection.get("afterParameters", inspection.get("afterInputPath"))
        if result is not None:
            inspection["afterResultSelector"] = result
    if state.get("Type") != "Map" or state.get("QueryLanguage") == "JSONata":
        return
    for key, field in _MAP_SETTINGS.items():
        if isinstance(state.get(key), int | float):
            inspection[field] = state[key]
    try:
        effective = extract_json(state.get("InputPath") or "$", state_input)
        items = extract_json(state.get("ItemsPath") or "$", effective)
        inspection["afterItemsPath"] = json.dumps(items)
        selector = state.get("ItemSelector", state.get("Parameters"))
        if selector is not None and isinstance(items, list):
            selected = [
                _select(selector, effective, item, i, context) for i, item in enumerate(items)
            ]
            inspection["afterItemSelector"] = json.dumps(selected)
    except Exception:  # a path the engine reports at run time, or an intrinsic function
        return


def _exceeds_tolerance(state: dict[str, Any], state_input: Any, config: dict[str, Any]) -> bool:
    """mapIterationFailureCount above ToleratedFailureCount or ToleratedFailurePercentage."""
    failed = int(config["mapIterationFailureCount"])
    count, percentage = state.get("ToleratedFailureCount"), state.get("ToleratedFailurePercentage")
    if count is None and percentage is None:
        return failed > 0
    if count is not None and failed > int(count):
        return True
    if percentage is None:
        return False
    try:  # the items: mapItemReaderData read by an ItemReader, else ItemsPath's array
        reader = "ItemReader" in state and "mapItemReaderData" in config
        items = json.loads(config["mapItemReaderData"]) if reader else None
        if not isinstance(items, list):
            effective = extract_json(state.get("InputPath") or "$", state_input)
            items = extract_json(state.get("ItemsPath") or "$", effective)
    except Exception:
        items = None
    total = len(items) if isinstance(items, list) else 0
    return failed * 100 > float(percentage) * total  # failed / total as a percentage


_MAP_SETTINGS = {
    "MaxConcurrency": "maxConcurrency",
    "ToleratedFailureCount": "toleratedFailureCount",
    "ToleratedFailurePercentage": "toleratedFailurePercentage",
}


def _select(template: Any, effective: Any, item: Any, index: int, given: dict[str, Any]) -> Any:
    """An ItemSelector (JSONPath payload template) for one item: ``$`` is the Map's input,
    ``$$`` the request's ``context`` with the item's ``Map``."""
    if isinstance(template, list):
        return [_select(value, effective, item, index, given) for value in template]
    if not isinstance(template, dict):
        return template
    selected = {}
    for key, value in template.items():
        if key.endswith(".$") and isinstance(value, str):
            if not value.startswith("$"):
                raise ValueError(f"not a path: {value}")  # an intrinsic function
            context = {**given, "Map": {"Item": {"Value": item, "Index": index}}}
            source, path = (context, value[1:]) if value.startswith("$$") else (effective, value)
            selected[key[:-2]] = extract_json(path, source)
        else:
            selected[key] = _select(value, effective, item, index, given)
    return selected


def _new_execution(
    definition: str, role_arn: str | None, state_input: Any, account: str, region: str
) -> _Execution:
    name = f"TestState-{uuid.uuid4().hex[:8]}"
    arn = f"arn:aws:states:{region}:{account}:stateMachine:{name}"
    machine = TestStateMachine(name=name, arn=arn, role_arn=role_arn, definition=definition)
    return _Execution(
        name=name,
        role_arn=role_arn or "",
        exec_arn=f"arn:aws:states:{region}:{account}:execution:{name}:{name}",
        account_id=account,
        region_name=region,
        state_machine=machine,
        start_date=datetime.datetime.now(tz=datetime.UTC),
        input_data=json.dumps(state_input),
        activity_store={},
    )


_REQUEST = (
    *("definition", "roleArn", "input", "inspectionLevel", "revealSecrets", "variables"),
    *("stateName", "mock", "context", "stateConfiguration"),
)


def _build(rt: Runtime) -> Targets:
    from moto.core.responses import ActionResult

    def test_state(self: Any) -> Any:
        params = {key: self._get_param(key) for key in _REQUEST}
        if params["revealSecrets"] is True:
            _may_reveal_secrets(rt, self.region)
        return ActionResult(run_test_state(params, self.current_account, self.region))

    return {(sfn_responses.StepFunctionResponse, "test_state"): test_state}


def _may_reveal_secrets(rt: Runtime, region: str) -> None:
    """revealSecrets: "the IAM user that calls the TestState API" needs states:RevealSecrets,
    "Without this permission, Step Functions throws an access denied error" (API_TestState)."""
    from localcloud.iam.actions import Need
    from localcloud.iam.enforcement import CALLER, denial_message

    caller, need = CALLER.get(), Need("states:RevealSecrets", "*")
    if caller is None or not rt.authorizer.enabled:
        return  # the administrator (or the cloud's IAM is off)
    decision = rt.authorizer.check(caller, need, region, secure=True)
    if not decision.allowed:
        raise JsonRESTError("AccessDeniedException", denial_message(caller, need, decision))


PATCHES = [
    Patch(
        name="sfn-test-state",
        kind=Kind.FEATURE,
        reason="The TestState API (moto's engine has a first TestState but its API has no such "
        "action): one state, mock, stateConfiguration, inspection levels, RETRIABLE and "
        "CAUGHT_ERROR, Map and Parallel with a mock, IAM as roleArn.",
        test="localcloud/tests/test_test_state.py::test_a_mocked_error_is_retriable_until_the_retrier_is_spent",
        build=_build,
        adds=("test_state",),
    )
]
