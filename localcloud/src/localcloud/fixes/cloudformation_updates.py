"""Fixes: a stack update (UpdateStack, an UPDATE change set) and deletion as CloudFormation
makes them; each patch's reason says what it fixes.

``cloudformation-update-order``: moto's ``ResourceMap.update`` removes the resources the new
template drops, then creates every added resource, then updates every changed one. A resource
added that references a changed one (SAM's new ``AWS::Lambda::Version`` of a function whose code
changed) is then made from the old state (the version publishes the old code). CloudFormation
creates and updates in dependency order (Ref, Fn::GetAtt, Fn::Sub, DependsOn), updates what
references a replaced resource with the new one (a rule's target, a role's policy), and
removes what the template dropped last, in its cleanup phase. A resource whose ``Condition``
is false is neither made nor updated (moto updated it from nothing: "'NoneType' object has no
attribute 'delete'"); one whose condition turns false is removed, one whose condition turns
true is made.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable
from typing import Any

from moto.awslambda.models import LambdaFunction
from moto.cloudformation.parsing import ResourceMap, parse_and_update_resource
from moto.iam.models import Role, iam_backends
from moto.utilities.utils import get_partition

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime
from localcloud.stack.dependencies import dependencies

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


def _conditioned(
    self: ResourceMap, template: dict[str, Any], diff: dict[str, Any], previous: dict[str, Any]
) -> dict[str, str]:
    """What to make ("Add") and update ("Modify"), as the resources' Conditions decide: one
    whose condition is false now is neither (and removed in the cleanup if it was made); one
    never made (its condition was false) is made."""
    changes = {**dict.fromkeys(diff["Add"], "Add"), **dict.fromkeys(diff["Modify"], "Modify")}
    for name in list(changes):
        condition = template["Resources"][name].get("Condition")
        if condition and not self.lazy_condition_map[condition]:
            del changes[name]
            if name in self._parsed_resources and name in previous["Resources"]:
                diff["Remove"].append(name)
        elif name not in self._parsed_resources:
            changes[name] = "Add"
    return changes


def _build_order(rt: Runtime) -> Targets:
    def update(self: ResourceMap, template: dict[str, Any], parameters: Any = None) -> None:
        diff = self.build_resource_diff(template, parameters)
        previous = {"Resources": self._resource_json_map}
        self._template = template
        if parameters:
            self.input_parameters = parameters
        self.load_mapping()
        self.load_parameters()
        self.load_conditions()
        self._resource_json_map = template["Resources"]
        changes = _conditioned(self, template, diff, previous)
        needs = dependencies(template)
        for name in _dependency_order(template["Resources"], template):
            if name not in changes:
                continue
            if changes[name] == "Add":
                _ = self[name]  # moto's way to create a resource (and what it references)
                continue
            resource = self._resource_json_map[name]
            before = getattr(self._parsed_resources.get(name), "physical_resource_id", None)
            try:
                changed = parse_and_update_resource(
                    name, resource, self, account_id=self._account_id, region_name=self._region_name
                )
            except Exception as exc:  # reported by logical id, as CloudFormation's events do
                rt.deploy_report.failures.append((name, resource.get("Type", ""), str(exc)))
                raise
            if changed is not None:
                self._parsed_resources[name] = changed
                if getattr(changed, "physical_resource_id", before) != before:  # replaced: what
                    for dependent, on in needs.items():  # names it is updated with the new one
                        if name in on:
                            changes.setdefault(dependent, "Modify")
        # cleanup: what the template dropped, those that depend on others first
        for name in reversed(_dependency_order(diff["Remove"], previous)):
            resource = self._parsed_resources.pop(name, None)
            if resource is not None:
                self._delete_resource(resource, previous["Resources"][name])

    return {(ResourceMap, "update"): update}


_DELETE_RESOURCE = ResourceMap._delete_resource


def _delete_resource(
    self: ResourceMap, parsed_resource: Any, resource_json: dict[str, Any]
) -> None:
    if resource_json.get("DeletionPolicy") in _RETAINED:
        return  # left in the account, out of the stack
    _DELETE_RESOURCE(self, parsed_resource, resource_json)


_DELETE = ResourceMap.delete


def _delete(self: ResourceMap) -> None:
    template = {"Resources": self._resource_json_map}
    for name in reversed(_dependency_order(list(self._resource_json_map), template)):
        resource, resource_json = self._parsed_resources.get(name), self._resource_json_map[name]
        if resource is None or isinstance(resource, str):
            continue
        if resource_json.get("DeletionPolicy") != "Retain":
            self._delete_resource(resource, resource_json)
            self._parsed_resources.pop(name)
    _DELETE(self)  # what is left, as moto deletes it (its retries; retained resources skipped)


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


def _update_role(  # noqa: PLR0917 - moto's signature
    cls: type[Role],
    original_resource: Role,
    new_resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
) -> Role:
    props = cloudformation_json["Properties"]
    if props.get("RoleName", original_resource.name) != original_resource.name:  # replaced
        Role.delete_from_cloudformation_json(original_resource.name, {}, account_id, region_name)
        return Role.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )
    iam = iam_backends[account_id][get_partition(region_name)]
    name = original_resource.name
    trust = props["AssumeRolePolicyDocument"]  # as create takes it (SAM's has no Version)
    original_resource.assume_role_policy_document = (
        trust if isinstance(trust, str) else json.dumps(trust)
    )
    iam.update_role(name, props.get("Description", ""), props.get("MaxSessionDuration", 3600))
    wanted = {p["PolicyName"]: p["PolicyDocument"] for p in props.get("Policies") or []}
    for policy in set(original_resource.policies) - set(wanted):
        original_resource.delete_policy(policy)
    for policy, document in wanted.items():  # unvalidated, as create puts them; as JSON text,
        text = document if isinstance(document, str) else json.dumps(document)  # as the API
        original_resource.put_policy(policy, text)
    return iam.get_role(name)


def _replacing(owner: Any, name: str, replacement: Any) -> Callable[[Runtime], Targets]:
    """The build of a patch that replaces ``owner.name`` with ``replacement``."""
    return lambda rt: {(owner, name): replacement}


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
        name="cloudformation-delete-order",
        kind=Kind.FIX,
        reason="A stack is deleted dependents first (reverse dependency order), as "
        "CloudFormation deletes it (moto: in any order, so a queue went before its QueuePolicy "
        "(QueueDoesNotExist), a schedule group before its schedule, and the stack ended "
        "DELETE_FAILED on the dependent's error).",
        test=_TESTS + "test_a_stack_is_deleted_dependents_first",
        build=_replacing(ResourceMap, "delete", _delete),
        upstream="not reported yet (moto cloudformation/parsing.py ResourceMap.delete)",
    ),
    Patch(
        name="cloudformation-update-retains",
        kind=Kind.FIX,
        reason="A resource a stack update drops is kept when its DeletionPolicy is Retain (or "
        "RetainExceptOnCreate), as CloudFormation keeps it: SAM's AutoPublishAlias versions "
        "outlive the update that replaces them (moto deletes it; it honours the policy on "
        "stack deletion only).",
        test=_TESTS + "test_a_retained_resource_outlives_the_update",
        build=_replacing(ResourceMap, "_delete_resource", _delete_resource),
        upstream="not reported yet (moto ResourceMap.update deletes every removed resource)",
    ),
    Patch(
        name="cloudformation-update-roles",
        kind=Kind.FIX,
        reason="A stack update of an IAM role applies its trust policy, inline Policies, "
        "Description and MaxSessionDuration (moto updates the description only, and reads the "
        "session duration from RoleDescription: a policy naming a replaced resource kept the "
        "old one).",
        test=_TESTS + "test_a_replaced_resource_is_named_anew_by_what_references_it",
        build=_replacing(Role, "update_from_cloudformation_json", classmethod(_update_role)),
        upstream="not reported yet (moto iam/models.py Role.update_from_cloudformation_json)",
    ),
    Patch(
        name="cloudformation-update-inline-code",
        kind=Kind.FIX,
        reason="A stack update of a function's inline code (Code.ZipFile, plain text) updates "
        "the function as create does (moto decodes it as base64 and fails the update).",
        test=_TESTS + "test_inline_code_changes_in_an_update",
        build=_replacing(
            LambdaFunction, "update_from_cloudformation_json", classmethod(_update_function)
        ),
        upstream="not reported yet (moto LambdaFunction.update_from_cloudformation_json)",
    ),
]
