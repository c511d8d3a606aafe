"""Feature: CloudFormation's stack operations (UpdateStack; CreateChangeSet and
ExecuteChangeSet, what ``sam deploy`` sends) run a template as the local deploy runs one.

With stack operations on the runtime (``Runtime.stacks``: stack/api.py's ``StackOperations``,
set by ``LocalCloud``), a template sent to the API is prepared as the deploy prepares one (the
SAM transform server-side; refusals by name as a ValidationError); moto creates or updates the
stack with the deploy's patches; then the IAM layer, the functions' code and the cloud's view
of the stack follow, as after a deploy. Where moto differs from CloudFormation:

* a CREATE change set's stack gets its outputs (moto applied it as an update of an empty
  stack and left no Outputs: ``sam deploy --resolve-s3`` found its managed stack unhealthy);
  an UPDATE's outputs are those of the new template;
* a resource that fails rolls the stack back, as CloudFormation does (moto raised from the
  request): a create ends ``ROLLBACK_COMPLETE`` with what it made deleted, an update
  ``UPDATE_ROLLBACK_COMPLETE`` with the previous template in force, the failed resource and
  its reason in the stack's events.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from moto.cloudformation.exceptions import ValidationError
from moto.cloudformation.models import CloudFormationBackend

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_UPDATE_STACK = CloudFormationBackend.update_stack
_CREATE_CHANGE_SET = CloudFormationBackend.create_change_set
_EXECUTE_CHANGE_SET = CloudFormationBackend.execute_change_set


def _change(rt: Runtime, stack: Any, kind: str, body: str, change: Callable[[], Any]) -> None:
    """``change()`` of ``stack`` (kind CREATE or UPDATE) with the deploy's patches; what fails
    is rolled back as CloudFormation rolls it back."""
    previous = json.dumps(stack.template_dict)  # as prepared (JSON), or as given (YAML)
    try:
        rt.stacks.run(rt, stack, body, change)
    except ValidationError:
        raise
    except Exception as exc:  # a resource failed: CloudFormation rolls the stack back
        logical_id, reason = "", f"{type(exc).__name__}: {exc}"
        if rt.deploy_report.failures:  # the resource that failed
            logical_id, _, reason = rt.deploy_report.failures[0]
        verb = "create" if kind == "CREATE" else "update"
        stack._add_stack_event(f"{kind}_FAILED", resource_status_reason=f"{logical_id}: {reason}")
        failed = f"The following resource(s) failed to {verb}: [{logical_id}]. "
        if kind == "CREATE":
            stack._add_stack_event("ROLLBACK_IN_PROGRESS", resource_status_reason=failed)
            try:
                stack.resource_map.delete()
            finally:
                stack._add_stack_event("ROLLBACK_COMPLETE")
                stack.status = "ROLLBACK_COMPLETE"
            return
        stack._add_stack_event("UPDATE_ROLLBACK_IN_PROGRESS", resource_status_reason=failed)
        rt.stacks.run(rt, stack, previous, lambda: stack.update(previous))
        stack.events = [e for e in stack.events if e.resource_status != "UPDATE_COMPLETE"
                        or e.timestamp < stack.events[-1].timestamp]  # fmt: skip
        stack._add_stack_event("UPDATE_ROLLBACK_COMPLETE")
        stack.status = "UPDATE_ROLLBACK_COMPLETE"
        rt.stacks.settle(rt, stack, previous)
        return
    rt.stacks.settle(rt, stack, body)


def _create(stack: Any, template: str) -> None:
    """A new stack's resources and outputs, from the change set's template."""
    stack.template = template
    stack._parse_template()
    stack.resource_map = stack._create_resource_map()
    stack.output_map = stack._create_output_map()
    stack._add_stack_event("CREATE_IN_PROGRESS", resource_status_reason="User Initiated")
    stack.create_resources()
    stack.output_map = stack._create_output_map()


def _build(rt: Runtime) -> Targets:
    prepared: dict[str, str] = {}  # change set id -> the template as the deploy prepared it

    def update_stack(  # noqa: PLR0917 - moto's signature
        self: CloudFormationBackend,
        name: str,
        template: str,
        role_arn: str | None,
        parameters: list[dict[str, Any]],
        tags: dict[str, str] | None,
    ) -> Any:
        if rt.stacks is None:
            return _UPDATE_STACK(self, name, template, role_arn, parameters, tags)
        body = rt.stacks.prepare(self, name, template, parameters)
        stack = self.get_stack(name)
        parameters = [  # UsePreviousValue resolved here (moto: KeyError for a default)
            {"ParameterKey": k, "ParameterValue": v}
            for k, v in rt.stacks.parameter_values(stack, parameters).items()
        ]
        _change(rt, stack, "UPDATE", body,
                lambda: _UPDATE_STACK(self, name, body, role_arn, parameters, tags))  # fmt: skip
        return stack

    def create_change_set(self: CloudFormationBackend, stack_name: str, change_set_name: str,
                          template: str, parameters: dict[str, str], *args: Any,
                          **kwargs: Any) -> tuple[str, str]:  # fmt: skip
        if rt.stacks is None:
            return _CREATE_CHANGE_SET(
                self, stack_name, change_set_name, template, parameters, *args, **kwargs
            )
        body = rt.stacks.prepare(self, stack_name, template, parameters)
        change_set_id, stack_id = _CREATE_CHANGE_SET(
            self, stack_name, change_set_name, body, parameters, *args, **kwargs
        )
        prepared[change_set_id] = body
        return change_set_id, stack_id

    def execute_change_set(
        self: CloudFormationBackend, change_set_name: str, stack_name: str | None = None
    ) -> None:
        change_set = self.describe_change_set(change_set_name)
        if rt.stacks is None or change_set is None or change_set.change_set_id not in prepared:
            return _EXECUTE_CHANGE_SET(self, change_set_name, stack_name)
        stack = self.stacks[change_set.stack_id]
        kind = change_set.change_set_type
        if kind == "CREATE":
            change = lambda: _create(stack, change_set.template)  # noqa: E731
        else:

            def change() -> None:
                _EXECUTE_CHANGE_SET(self, change_set_name, stack_name)
                stack.parameters = change_set.parameters  # moto kept the old ones
                stack.output_map = stack._create_output_map()

        _change(rt, stack, kind, prepared.pop(change_set.change_set_id), change)
        change_set.execution_status = (
            "EXECUTE_COMPLETE" if stack.status.endswith("_COMPLETE")
            and "ROLLBACK" not in stack.status else "EXECUTE_FAILED"
        )  # fmt: skip
        return None

    return {
        (CloudFormationBackend, "update_stack"): update_stack,
        (CloudFormationBackend, "create_change_set"): create_change_set,
        (CloudFormationBackend, "execute_change_set"): execute_change_set,
    }


PATCHES = [
    Patch(
        name="cloudformation-stack-api",
        kind=Kind.FEATURE,
        reason="UpdateStack and change sets run a template (SAM's too, transformed "
        "server-side) as the deploy runs one: outputs, IAM, the functions' deployed code; a "
        "failed resource rolls the stack back (moto skips AWS::Serverless::* resources, "
        "leaves a created change set's stack without outputs, and raises on a failure).",
        test="localcloud/tests/test_stack_updates.py::test_a_sam_update_runs_the_new_code",
        build=_build,
    ),
]
