"""Fix: CreateStateMachine refuses, for an EXPRESS state machine, what AWS refuses.

AWS (developer guide, "Choosing workflow type": Express workflows support neither the
Run a Job (``.sync``) nor the Wait for Callback (``.waitForTaskToken``) service integration
patterns, nor activities) answers CreateStateMachine ``type=EXPRESS`` with ``InvalidDefinition``;
the messages, as recorded on AWS (LocalStack, tests/aws/services/stepfunctions/v2/
test_sfn_api_express.snapshot.json, ``test_illegal_callbacks`` and
``test_illegal_activity_task``, ``aws.validated``, recorded 2024-07-03), are:

* "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: Express state machine does
  not support '.waitForTaskToken' service integration  at /States/Publish/Resource'" (two
  spaces before "at", as recorded);
* "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: Express state machine does
  not support '.sync' service integration at /States/StartExecution/Resource'";
* "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: Express state machine does
  not support Activity ARN at /States/ActivityTask/Resource'".

moto 5.2.5 (stepfunctions/parser/models.py ``create_state_machine``) only parses the
definition: an EXPRESS state machine with such a Task is created, and its executions run the
callback or job pattern. (moto ships LocalStack's ``ExpressStaticAnalyser``, unused, whose
messages differ from AWS's.)

Here CreateStateMachine and UpdateStateMachine of an EXPRESS state machine walk the
definition (nested Parallel branches and Map processors too) and refuse the first such
Task with AWS's message. The path of a nested state (``/States/<Map>/ItemProcessor/States/
<Task>/Resource``) follows the recorded top-level form; AWS's wording for nested states and
for several offending states at once is not recorded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from moto.core.exceptions import AWSError
from moto.stepfunctions.parser import models as sfn_parser_models

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "InvalidDefinition", "express_definition_problem"]

_PREFIX = "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: "
_ACTIVITY = re.compile(r"^arn:[^:]+:states:[^:]*:[^:]*:activity:")


class InvalidDefinition(AWSError):
    TYPE = "InvalidDefinition"
    STATUS = 400


def _tasks(states: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path of the Resource field, Resource) of every Task, nested ones too."""
    if not isinstance(states, dict):
        return
    for name, state in states.items():
        if not isinstance(state, dict):
            continue
        here = f"{path}/{name}"
        kind = state.get("Type")
        if kind == "Task" and isinstance(state.get("Resource"), str):
            yield f"{here}/Resource", state["Resource"]
        elif kind == "Parallel":
            for index, branch in enumerate(state.get("Branches") or []):
                if isinstance(branch, dict):
                    yield from _tasks(branch.get("States"), f"{here}/Branches/{index}/States")
        elif kind == "Map":
            for field in ("ItemProcessor", "Iterator"):
                processor = state.get(field)
                if isinstance(processor, dict):
                    yield from _tasks(processor.get("States"), f"{here}/{field}/States")


def express_definition_problem(definition: str | dict[str, Any]) -> str | None:
    """AWS's InvalidDefinition message for an EXPRESS definition, or None if it is valid."""
    try:
        parsed = json.loads(definition) if isinstance(definition, str) else definition
    except ValueError:
        return None  # moto's parser reports what is not JSON
    if not isinstance(parsed, dict):
        return None
    for where, resource in _tasks(parsed.get("States"), "/States"):
        if _ACTIVITY.match(resource):
            what = "Activity ARN"
        elif resource.endswith(".waitForTaskToken"):
            what = "'.waitForTaskToken' service integration "  # two spaces before "at"
        elif re.search(r"\.sync(:\d+)?$", resource):
            what = "'.sync' service integration"
        else:
            continue
        return f"{_PREFIX}Express state machine does not support {what} at {where}'"
    return None


def _build(rt: Runtime) -> Targets:
    backend = sfn_parser_models.StepFunctionsParserBackend
    create = backend.create_state_machine
    update = backend.update_state_machine

    def refuse(definition: Any) -> None:
        if problem := express_definition_problem(definition):
            raise InvalidDefinition(problem)

    def create_state_machine(self: Any, name: str, definition: str, *a: Any, **kw: Any) -> Any:
        if str(kw.get("sm_type") or "STANDARD") == "EXPRESS":
            refuse(definition)
        return create(self, name, definition, *a, **kw)

    def update_state_machine(
        self: Any, arn: str, definition: Any = None, *a: Any, **kw: Any
    ) -> Any:
        if definition is not None and str(self.describe_state_machine(arn).type) == "EXPRESS":
            refuse(definition)
        return update(self, arn, definition, *a, **kw)

    return {
        (backend, "create_state_machine"): create_state_machine,
        (backend, "update_state_machine"): update_state_machine,
    }


PATCHES = [
    Patch(
        name="sfn-express-definitions",
        kind=Kind.FIX,
        reason="CreateStateMachine/UpdateStateMachine of an EXPRESS state machine refuse "
        ".sync, .waitForTaskToken and activity Tasks with AWS's InvalidDefinition (moto "
        "creates it and runs them).",
        test="tests/e2e/test_localcloud_express.py"
        "::test_express_state_machine_refuses_callback_job_and_activity_tasks",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto ships LocalStack's "
        "ExpressStaticAnalyser but never runs it",
    )
]
