"""Fix: ``Fn::GetAtt`` answers every attribute CloudFormation documents for the resource types
in scope, and every created resource has a physical id.

moto's models declare only some attributes (``has_cfn_attr``): a template using another failed
to deploy ("resource X does not support attribute type Y in Fn::GetAtt"). Missing in moto
5.2.5, against the CloudFormation User Guide's "Return values" of each type:
``AWS::StepFunctions::StateMachine`` ``Arn`` (how a rule, a schedule, a role's policy or a
parent workflow names a state machine) and ``StateMachineRevisionId``; ``AWS::SNS::Topic``
``TopicArn``; ``AWS::SQS::Queue`` ``QueueUrl``; ``AWS::KMS::Key`` ``KeyId``;
``AWS::IAM::ManagedPolicy`` ``PolicyArn`` (moto's model has no ``get_cfn_attribute``: a role's
``ManagedPolicyArns: [!GetAtt Own.PolicyArn]`` crashed the deploy with an AttributeError;
localcloud/tests/test_managed_policies.py). An attribute CloudFormation does not document is
still refused, with moto's (and CloudFormation's) message.

Physical ids (``Ref``, DescribeStackResources) moto's models lack: ``AWS::Events::EventBus``
(its name; moto returned the model object, and a rule on ``!Ref MyBus`` crashed with
"'EventBus' object has no attribute 'split'"), ``AWS::Lambda::Version`` (its ARN, which SAM's
``AutoPublishAlias`` gives its alias), ``AWS::Lambda::Permission`` (every SAM event source that
invokes a function: S3, SNS, schedules, rules; listed without one; CloudFormation's id is its
statement id, here the logical id). A permission on a qualified function ARN (the alias SAM's
``AutoPublishAlias`` makes) is the alias's, as AddPermission with a Qualifier: moto gave it to
the unqualified function, so SNS or S3 could not invoke the alias.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from moto.awslambda.models import LambdaVersion, Permission
from moto.awslambda.utils import get_backend
from moto.cloudformation.exceptions import UnformattedGetAttTemplateException
from moto.events.models import EventBus
from moto.iam.models import ManagedPolicy
from moto.kms.models import Key
from moto.sns.models import Topic
from moto.sqs.models import Queue
from moto.stepfunctions.models import StateMachine

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["ADDED", "PATCHES"]


def _revision(machine: Any) -> str:
    """A revision id that changes with the definition and role, as a revision does."""
    digest = hashlib.sha256(f"{machine.definition}\0{machine.roleArn}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


#: the attributes added to each moto model, and how each is read from an instance
ADDED: dict[Any, dict[str, Callable[[Any], Any]]] = {
    StateMachine: {"Arn": lambda m: m.arn, "StateMachineRevisionId": _revision},
    Topic: {"TopicArn": lambda t: t.arn},
    Queue: {"QueueUrl": lambda q: q.physical_resource_id},
    Key: {"KeyId": lambda k: k.id},
}


def _only(attributes: dict[str, Callable[[Any], Any]]) -> Callable[[Any, str], Any]:
    def get_cfn_attribute(self: Any, attr: str) -> Any:
        if attr not in attributes:
            raise UnformattedGetAttTemplateException()
        return attributes[attr](self)

    return get_cfn_attribute


def _build(rt: Runtime) -> Targets:
    targets: Targets = {}
    for model, added in ADDED.items():
        has_cfn_attr, get_cfn_attribute = model.has_cfn_attr, model.get_cfn_attribute

        def has(cls: type, attr: str, added: Any = added, inner: Any = has_cfn_attr) -> bool:
            return attr in added or bool(inner(attr))

        def get(self: Any, attr: str, added: Any = added, inner: Any = get_cfn_attribute) -> Any:
            return added[attr](self) if attr in added else inner(self, attr)

        targets[(model, "has_cfn_attr")] = classmethod(has)
        targets[(model, "get_cfn_attribute")] = get
    return targets


def _build_ids(rt: Runtime) -> Targets:
    create_version = LambdaVersion.create_from_cloudformation_json

    def version(cls: Any, name: str, cloudformation_json: Any, *args: Any, **kw: Any) -> Any:
        created = create_version(name, cloudformation_json, *args, **kw)
        function = get_backend(*args[:2]).get_function(
            cloudformation_json["Properties"]["FunctionName"]
        )
        created.arn = f"{function.function_arn}:{created.version}"
        return created

    def permission(cls: Any, name: str, cloudformation_json: Any, account: str, region: str,
                   **kw: Any) -> Any:  # fmt: skip
        props = cloudformation_json["Properties"]
        function, qualifier = str(props["FunctionName"]), None
        if function.startswith("arn:") and function.count(":") == 7:
            function, qualifier = function.rsplit(":", 1)
        get_backend(account, region).add_permission(function, qualifier, json.dumps(props))
        created = Permission(region=region)
        created.logical_id = name
        return created

    return {
        (EventBus, "physical_resource_id"): property(lambda bus: bus.name),
        (LambdaVersion, "physical_resource_id"): property(lambda version: version.arn),
        (LambdaVersion, "create_from_cloudformation_json"): classmethod(version),
        (LambdaVersion, "get_cfn_attribute"): _only(
            {"Version": lambda v: v.version, "FunctionArn": lambda v: v.arn}
        ),
        (Permission, "physical_resource_id"): property(lambda p: p.logical_id),
        (Permission, "create_from_cloudformation_json"): classmethod(permission),
        (ManagedPolicy, "get_cfn_attribute"): _only({"PolicyArn": lambda p: p.arn}),
    }


PATCHES = [
    Patch(
        name="cloudformation-attributes",
        kind=Kind.FIX,
        reason="Fn::GetAtt answers the attributes CloudFormation documents (a state machine's "
        "Arn, a topic's TopicArn, a queue's QueueUrl, a key's KeyId); moto refuses the "
        "template.",
        test="localcloud/tests/test_cloudformation_attributes.py"
        "::test_documented_attributes_resolve",
        build=_build,
        upstream="not reported yet (moto 5.2.5 has_cfn_attr lists)",
    ),
    Patch(
        name="cloudformation-physical-ids",
        kind=Kind.FIX,
        reason="Ref to an event bus is its name, to a Lambda version its ARN; a Lambda "
        "permission has a physical id; a managed policy's GetAtt PolicyArn is its ARN. moto "
        "crashes on a rule of !Ref MyBus, gives an alias no version, lists a permission "
        "without an id (the deploy's KeyError) and has no attribute of a managed policy.",
        test="localcloud/tests/test_cloudformation_attributes.py::test_physical_ids",
        build=_build_ids,
        upstream="not reported yet (moto 5.2.5: no physical_resource_id on these models)",
        adds=("physical_resource_id", "get_cfn_attribute"),
    ),
]
