"""Feature: UpdateStack of a SAM template runs as CloudFormation runs it.

moto's UpdateStack takes the template as given: its parser skips every ``AWS::Serverless::*``
resource of an untransformed template, and the functions went on running the code of the
first deploy. With a stack deployer on the runtime (``Runtime.stack_updates``: the
``StackUpdates`` of stack/updates.py, set by ``LocalCloud``), the update's template is
prepared as the deploy prepares it (SAM transform server-side, refusals by name as a
ValidationError), moto updates the stack with the deploy's patches, and the functions then
run the code the update deployed (a published version: the code it was published with).

Regression test: localcloud/tests/test_stack_updates.py::test_a_sam_update_runs_the_new_code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moto.cloudformation.models import CloudFormationBackend

from localcloud.patching import Kind, Patch, Targets

if TYPE_CHECKING:
    from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_UPDATE_STACK = CloudFormationBackend.update_stack


def _build(rt: Runtime) -> Targets:
    def update_stack(  # noqa: PLR0917 - moto's signature
        self: CloudFormationBackend,
        name: str,
        template: str,
        role_arn: str | None,
        parameters: list[dict[str, Any]],
        tags: dict[str, str] | None,
    ) -> Any:
        updates = rt.stack_updates
        if updates is None:
            return _UPDATE_STACK(self, name, template, role_arn, parameters, tags)
        body, code = updates.prepare(self, name, template, parameters)
        updated = updates.run(
            rt,
            self.region_name,
            lambda: _UPDATE_STACK(self, name, body, role_arn, parameters, tags),
        )
        updates.refresh(rt, self.region_name, updated.name, code)
        return updated

    return {(CloudFormationBackend, "update_stack"): update_stack}


PATCHES = [
    Patch(
        name="cloudformation-sam-updates",
        kind=Kind.FEATURE,
        reason="UpdateStack of a template with the SAM transform is transformed server-side "
        "and checked as the deploy is (moto skips AWS::Serverless::* resources); the "
        "functions then run the code the update deployed, and a published version the code "
        "it was published with.",
        test="localcloud/tests/test_stack_updates.py::test_a_sam_update_runs_the_new_code",
        build=_build,
    ),
]
