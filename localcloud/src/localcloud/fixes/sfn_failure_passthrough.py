"""Fix: service integrations keep a task's own failure, and a missing JSONPath is States.Runtime.

Several moto service integrations override ``_from_error`` and special-case only
``ClientError`` (e.g. service/state_task_service_dynamodb.py maps everything else to
``DynamoDB.AmazonDynamoDBException``). Two failures are lost that way:

* a ``FailureEventException`` raised inside the task, such as a mocked Throw from a
  MockConfigFile (state_task/mock_eval_utils.py), loses its Error and Cause.
  ``ExecutionState._from_error`` (state/exec/execute_state.py) already passes it through;
* a JSONPath in ``Parameters`` that matches nothing (``NoSuchJsonPathError``): on AWS the
  execution fails with States.Runtime, which no Catch can handle; moto turns it into the
  integration's catchable error. Re-raising lets ``BaseState._eval_body`` build that failure.

Also tested: a malformed execution input fails with States.Runtime
(tests/statemachine/test_paths.py::test_malformed_execution_input_fails_clearly).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from moto.stepfunctions.parser.api import HistoryEventType
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEvent,
    FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
    StatesErrorName,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
    StatesErrorNameType,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task import service
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service,
)
from moto.stepfunctions.parser.asl.utils.json_path import NoSuchJsonPathError

from localcloud.execution_history import details_key
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "service_classes", "states_failure"]


def service_classes() -> set[type]:
    """Every service integration class (all integration modules imported first)."""
    for module in pkgutil.iter_modules(service.__path__):
        importlib.import_module(f"{service.__name__}.{module.name}")

    def subclasses(cls: type) -> set[type]:
        found: set[type] = set()
        sub: type
        for sub in cls.__subclasses__():
            found |= {sub, *subclasses(sub)}
        return found

    return subclasses(state_task_service.StateTaskService)


def states_failure(
    env: Any, typ: StatesErrorNameType, event_type: HistoryEventType, cause: str
) -> FailureEventException:
    """A ``States.*`` failure whose ``<event type>EventDetails`` hold its error and cause."""
    error_name = StatesErrorName(typ=typ)
    details: Any = {details_key(event_type.value): {"error": error_name.error_name, "cause": cause}}
    return FailureEventException(
        failure_event=FailureEvent(
            env=env, error_name=error_name, event_type=event_type, event_details=details
        )
    )


def _passing_through(original: Callable[..., Any]) -> Callable[..., Any]:
    def from_error(self: Any, env: Any, ex: Exception) -> Any:
        if isinstance(ex, FailureEventException):
            return ex.failure_event
        if isinstance(ex, NoSuchJsonPathError):
            raise ex
        return original(self, env, ex)

    return from_error


def _build(rt: Runtime) -> Targets:
    return {
        (cls, "_from_error"): _passing_through(cls.__dict__["_from_error"])
        for cls in service_classes()
        if "_from_error" in cls.__dict__
    }


PATCHES = [
    Patch(
        name="sfn-failure-passthrough",
        kind=Kind.FIX,
        reason="A task's own failure (a mocked Throw) keeps its Error/Cause through every "
        "service integration, and a missing JSONPath in Parameters is States.Runtime as on AWS.",
        test="tests/statemachine/test_mock_config.py::test_mocked_path_on_moto",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto state_task_service_*._from_error",
    )
]
