"""What moto can create: resource types and, for audited types, which properties it applies."""

from __future__ import annotations

from typing import Any, NamedTuple

from moto.cloudformation import parsing as cfn_parsing

from localcloud.features import cloudformation_custom_resources as custom_resources
from localcloud.stack.shims import SHIMS


def unsupported_resources(template: dict[str, Any]) -> dict[str, str]:
    """logical id -> type of each resource neither moto nor a shim can create (a custom
    resource runs when the cloudformation-custom-resources patch is installed)."""
    supported = cfn_parsing.get_model_map().keys() | SHIMS.keys()  # NULL_MODELS are skipped
    custom = custom_resources.installed()
    return {
        logical_id: resource.get("Type", "<no Type>")
        for logical_id, resource in (template.get("Resources") or {}).items()
        if resource.get("Type") not in supported
        and not (custom and custom_resources.is_custom_resource_type(str(resource.get("Type"))))
    }


class Support(NamedTuple):
    moto: frozenset[str]  # applied by moto's CloudFormation model (read in moto 5.2.5)
    applied: frozenset[str] = frozenset()  # applied here after creation (_APPLIERS)
    inert: frozenset[str] = frozenset()  # accepted: nothing to emulate locally


_STATE_MACHINE_TYPES = ("STANDARD", "EXPRESS")

# Audited types only; properties outside moto | applied | inert raise UnsupportedPropertyError.
PROPERTY_SUPPORT: dict[str, Support] = {
    "AWS::S3::Bucket": Support(
        moto=frozenset({"BucketName", "BucketEncryption", "Tags"}),
        applied=frozenset({"VersioningConfiguration", "NotificationConfiguration",
                           "PublicAccessBlockConfiguration", "OwnershipControls",
                           "LifecycleConfiguration", "LoggingConfiguration",
                           "CorsConfiguration", "ReplicationConfiguration"}),
    ),
    "AWS::DynamoDB::Table": Support(
        moto=frozenset({"TableName", "AttributeDefinitions", "KeySchema", "BillingMode",
                        "GlobalSecondaryIndexes", "LocalSecondaryIndexes", "ProvisionedThroughput",
                        "SSESpecification", "StreamSpecification", "Tags", "WarmThroughput",
                        "DeletionProtectionEnabled"}),
        applied=frozenset({"TimeToLiveSpecification", "PointInTimeRecoverySpecification"}),
    ),
    "AWS::Lambda::Function": Support(
        moto=frozenset({"Code", "FunctionName", "Handler", "Role", "Runtime", "Description",
                        "MemorySize", "Timeout", "VpcConfig", "Environment",
                        "ReservedConcurrentExecutions"}),
        applied=frozenset({"Layers", "TracingConfig", "Architectures", "EphemeralStorage", "Tags",
                           "DeadLetterConfig", "DurableConfig", "TenancyConfig",
                           "LoggingConfig"}),
        # RuntimeManagementConfig: one runtime version here; PackageType: Zip (Image is
        # refused below)
        inert=frozenset({"RuntimeManagementConfig", "PackageType"}),
    ),
    # created by fixes/sfn_cloudformation_state_machine.py (StateMachineType STANDARD or
    # EXPRESS, checked below and, when an intrinsic, by the shim; EXPRESS executions:
    # fixes/sfn_express_executions.py; LoggingConfiguration: fixes/sfn_execution_logs.py)
    "AWS::StepFunctions::StateMachine": Support(
        moto=frozenset({"StateMachineName", "DefinitionString", "Definition",
                        "DefinitionSubstitutions", "RoleArn", "Tags", "StateMachineType",
                        "LoggingConfiguration"}),
        inert=frozenset({"TracingConfiguration"}),  # no X-Ray
    ),
    "AWS::Logs::LogGroup": Support(moto=frozenset({"LogGroupName", "RetentionInDays", "Tags"})),
    "AWS::Events::Rule": Support(
        moto=frozenset({"Name", "Description", "EventBusName", "EventPattern",
                        "ScheduleExpression", "State", "Targets", "RoleArn", "Tags"}),
    ),
}  # fmt: skip


def unsupported_properties(template: dict[str, Any]) -> dict[str, list[str]]:
    """logical id -> properties that would be dropped silently (audited types and shims)."""
    found: dict[str, list[str]] = {}
    for logical_id, resource in (template.get("Resources") or {}).items():
        rtype, props = resource.get("Type"), resource.get("Properties") or {}
        if rtype in SHIMS:
            known = SHIMS[rtype].PROPERTIES
        elif rtype in PROPERTY_SUPPORT:
            support = PROPERTY_SUPPORT[rtype]
            known = support.moto | support.applied | support.inert
        else:
            continue
        bad = [p for p in props if p not in known]
        machine_type = props.get("StateMachineType", "STANDARD")
        if rtype == "AWS::Lambda::Function" and props.get("PackageType", "Zip") != "Zip":
            bad.append(f"PackageType={props['PackageType']} (container images need Docker)")
        if (
            rtype == "AWS::StepFunctions::StateMachine"
            and isinstance(machine_type, str)  # an intrinsic: the shim checks its value
            and machine_type not in _STATE_MACHINE_TYPES
        ):
            bad.append(f"StateMachineType={machine_type} (STANDARD or EXPRESS)")
        if bad:
            found[logical_id] = bad
    return found


def _inert_properties(template: dict[str, Any]) -> list[str]:
    return [
        f"{logical_id}.{prop}"
        for logical_id, resource in (template.get("Resources") or {}).items()
        for prop in resource.get("Properties") or {}
        if prop in PROPERTY_SUPPORT.get(resource.get("Type", ""), Support(frozenset())).inert
    ]
