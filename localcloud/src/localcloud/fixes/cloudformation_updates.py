"""Fixes: a stack update (UpdateStack, an UPDATE change set) as CloudFormation makes it.

* ``cloudformation-update-order``: moto's ``ResourceMap.update`` removes the resources the new
  template drops, then creates every added resource, then updates every changed one. A
  resource added that references a changed one (SAM's new ``AWS::Lambda::Version`` of a
  function whose code changed) is then made from the old state (the version publishes the old
  code). CloudFormation creates and updates in dependency order (Ref, Fn::GetAtt, Fn::Sub,
  DependsOn), and removes what the template dropped last, in its cleanup phase.
* ``cloudformation-update-retains``: a resource the new template drops whose
  ``DeletionPolicy`` is ``Retain`` (or ``RetainExceptOnCreate``) is kept, as CloudFormation
  keeps it: SAM's versions (``AutoPublishAlias``) outlive the update that replaces them.
  moto deletes it (it honours the policy only when the stack is deleted).
* ``cloudformation-update-inline-code``: an ``AWS::Lambda::Function`` whose ``Code.ZipFile``
  (inline code, plain text) changes is updated with that code, as on create; moto decodes it
  as base64 and fails the update.

Regression tests: localcloud/tests/test_stack_updates.py.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from moto.awslambda.models import LambdaFunction
from moto.cloudformation.parsing import ResourceMap, parse_and_update_resource

from localcloud.patching import Kind, Patch, Targets
from localcloud.stack.dependencies import dependencies

if TYPE_CHECKING:
    from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_RETAINED = ("Retain", "RetainExceptOnCreate")


def _dependency_order(names: Iterable[str], template: dict[str, Any]) -> list[str]:
    """``names`` so that each comes after those of ``names`` it depends on (a cycle, which
    CloudFormation refuses before it starts, keeps the given order)."""
    pending = list(names)
    needs = {name: deps & set(pending) for name, deps in dependencies(template).items()}
    ordered: list[str] = []
    while pending:
        ready = [n for n in pending if not needs.get(n, set()) - set(ordered)] or pending[:1]
        ordered.extend(ready)
        pending = [n for n in pending if n not in ready]
    return ordered


def _update(self: ResourceMap, template: dict[str, Any], parameters: Any = None) -> None:
    diff = self.build_resource_diff(template, parameters)
    previous = {"Resources": self._resource_json_map}
    self._template = template
    if parameters:
        self.input_parameters = parameters
    self.load_mapping()
    self.load_parameters()
    self.load_conditions()
    self._resource_json_map = template["Resources"]
    changes = {**dict.fromkeys(diff["Add"], "Add"), **dict.fromkeys(diff["Modify"], "Modify")}
    for name in _dependency_order(changes, template):
        if changes[name] == "Add":
            _ = self[name]  # moto's way to create a resource (and what it references)
            continue
        changed = parse_and_update_resource(
            name,
            self._resource_json_map[name],
            self,
            account_id=self._account_id,
            region_name=self._region_name,
        )
        if changed is not None:
            self._parsed_resources[name] = changed
    # cleanup: what the template dropped, those that depend on others first
    for name in reversed(_dependency_order(diff["Remove"], previous)):
        resource = self._parsed_resources.pop(name, None)
        if resource is not None:
            self._delete_resource(resource, previous["Resources"][name])


def _build_order(rt: Runtime) -> Targets:
    return {(ResourceMap, "update"): _update}


_DELETE_RESOURCE = ResourceMap._delete_resource


def _delete_resource(
    self: ResourceMap, parsed_resource: Any, resource_json: dict[str, Any]
) -> None:
    if resource_json.get("DeletionPolicy") in _RETAINED:
        return  # left in the account, out of the stack
    _DELETE_RESOURCE(self, parsed_resource, resource_json)


def _build_retains(rt: Runtime) -> Targets:
    return {(ResourceMap, "_delete_resource"): _delete_resource}


_UPDATE_FUNCTION = LambdaFunction.update_from_cloudformation_json.__func__  # type: ignore[attr-defined]


def _update_function(  # noqa: PLR0917 - moto's signature
    cls: type[LambdaFunction],
    original_resource: LambdaFunction,
    new_resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
) -> LambdaFunction:
    code = dict(cloudformation_json["Properties"].get("Code") or {})
    if isinstance(code.get("ZipFile"), str):  # CloudFormation's inline code is plain text
        zipped = LambdaFunction._create_zipfile_from_plaintext_code(code["ZipFile"])
        code["ZipFile"] = base64.b64encode(zipped)
        properties = {**cloudformation_json["Properties"], "Code": code}
        cloudformation_json = {**cloudformation_json, "Properties": properties}
    return _UPDATE_FUNCTION(  # type: ignore[no-any-return]
        cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name
    )


def _build_inline_code(rt: Runtime) -> Targets:
    return {(LambdaFunction, "update_from_cloudformation_json"): classmethod(_update_function)}


_TESTS = "localcloud/tests/test_stack_updates.py::"
PATCHES = [
    Patch(
        name="cloudformation-update-order",
        kind=Kind.FIX,
        reason="A stack update creates and updates resources in dependency order and removes "
        "the dropped ones last, as CloudFormation does (moto adds before it modifies: a new "
        "version of a changed function published the old code).",
        test=_TESTS + "test_a_new_version_publishes_the_updated_code",
        build=_build_order,
        upstream="not reported yet (moto cloudformation/parsing.py ResourceMap.update)",
    ),
    Patch(
        name="cloudformation-update-retains",
        kind=Kind.FIX,
        reason="A resource a stack update drops is kept when its DeletionPolicy is Retain, as "
        "CloudFormation keeps it (moto deletes it; it honours the policy on stack deletion "
        "only).",
        test=_TESTS + "test_a_retained_resource_outlives_the_update",
        build=_build_retains,
        upstream="not reported yet (moto ResourceMap.update deletes every removed resource)",
    ),
    Patch(
        name="cloudformation-update-inline-code",
        kind=Kind.FIX,
        reason="A stack update of a function's inline code (Code.ZipFile, plain text) updates "
        "the function as create does (moto decodes it as base64 and fails).",
        test=_TESTS + "test_inline_code_changes_in_an_update",
        build=_build_inline_code,
        upstream="not reported yet (moto LambdaFunction.update_from_cloudformation_json)",
    ),
]
