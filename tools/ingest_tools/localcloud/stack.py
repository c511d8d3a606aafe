"""Deploy the real SAM template into moto through CloudFormation, the way ``sam deploy`` would.

``deploy(template)`` runs inside ``moto.mock_aws(config=...)`` with the local cloud's
patches installed (fixes/sfn_cloudformation_state_machine.py puts CloudFormation state
machines into the executing Step Functions backend and applies DefinitionSubstitutions). It:

1. loads the template with CloudFormation short tags (samtranslator's YAML loader);
2. makes it deployable without ``sam build``/``sam package``: every local ``CodeUri``
   (Globals and functions) and layer ``ContentUri`` becomes the S3 location of a small
   placeholder zip uploaded into moto S3 (handlers run in-process, never from the zip), and
   every state machine ``DefinitionUri`` becomes an inline ``Definition``;
3. runs the SAM transform offline (samtranslator, bundled managed-policy map, no AWS call);
4. refuses, before creating anything, what moto would silently get wrong:
   * a resource type moto's CloudFormation cannot create and no shim covers
     (``UnsupportedResourceError``; moto itself logs a warning, skips the resource and
     reports CREATE_COMPLETE);
   * for the audited types in ``PROPERTY_SUPPORT``, a property that neither moto's model nor
     this module applies and that is not listed as having no local effect
     (``UnsupportedPropertyError``);
   * an ``AWS::SSM::Parameter::Value<...>`` parameter whose SSM parameter does not exist in
     moto (seed public ``/aws/service/...`` ones with ``put_public_parameter``);
5. ``create_stack`` with the transformed template; a resource that fails is reported with its
   logical id, type and reason (``StackDeployError``). Properties moto's models ignore are
   then applied: through the API for S3 (versioning, EventBridge notifications, public access
   block, ownership, lifecycle) and DynamoDB (TTL, PITR); on moto's Lambda model for layers,
   tracing, architectures and tags (its UpdateFunctionConfiguration ignores them). Checks
   CREATE_COMPLETE and that every state machine is visible to ``DescribeStateMachine`` with
   no ``${...}`` left;
6. registers the functions' handlers in ``handlers`` (by physical function name) and
   puts the functions' resolved environment variables into ``os.environ`` (one process, so
   functions must agree on every variable; ``DeployedStack.restore_environment()`` undoes it).

Shims (``SHIMS``) for types moto 5.2's CloudFormation does not create (checked against
``moto.cloudformation.parsing.get_model_map()``):

* ``AWS::S3::BucketPolicy`` -> PutBucketPolicy. moto enforces ``Principal: "*"`` statements
  but ignores their ``Condition``, so the usual ``DenyInsecureTransport`` statement would deny
  every object call. Conditions are evaluated here against the local request context
  (``LOCAL_REQUEST_CONTEXT``: SDK calls are HTTPS); statements that cannot apply are left out
  of the policy given to moto (the template's document stays on the shim as ``document``); a
  condition that cannot be evaluated raises.
* ``AWS::SQS::QueuePolicy`` -> SetQueueAttributes(Policy) (moto does not enforce it).
* ``AWS::SNS::Subscription`` -> Subscribe (+ subscription attributes).
* ``AWS::CloudWatch::Alarm`` -> PutMetricAlarm (single-metric alarms).

While ``create_stack`` runs, layer versions of ``PUBLIC_LAYER_ACCOUNTS`` (the Powertools
layer account) resolve to a stand-in, since moto only knows layers published into it; any
other unknown layer still fails as in moto. Not audited property by property (moto passes
their properties through, or IAM is not enforced): SQS queues, SNS topics, IAM roles.
"""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import importlib
import io
import json
import logging
import os
import re
import sys
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import boto3
from botocore.exceptions import ClientError
from moto.awslambda.models import LambdaBackend
from moto.cloudformation import models as cfn_models
from moto.cloudformation import parsing as cfn_parsing
from moto.cloudwatch.models import cloudwatch_backends
from moto.core import DEFAULT_ACCOUNT_ID
from moto.s3.models import s3_backends
from moto.sns.models import sns_backends
from moto.sqs.models import sqs_backends

__all__ = [
    "CAPABILITIES",
    "LOCAL_REQUEST_CONTEXT",
    "PROPERTY_SUPPORT",
    "PUBLIC_LAYER_ACCOUNTS",
    "SHIMS",
    "DeployedStack",
    "StackDeployError",
    "UnsupportedPropertyError",
    "UnsupportedResourceError",
    "deploy",
    "load_template",
    "localize",
    "moto_supported_types",
    "put_public_parameter",
    "sam_transform",
    "unsupported_properties",
    "unsupported_resources",
]

LOG = logging.getLogger(__name__)
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]
# Account that publishes the official Powertools for AWS Lambda layers.
PUBLIC_LAYER_ACCOUNTS = frozenset({"017000801446"})
# What IAM condition keys evaluate to for requests made through the SDK against moto.
LOCAL_REQUEST_CONTEXT: dict[str, str] = {"aws:SecureTransport": "true"}
_UNRESOLVED = re.compile(r"\$\{[A-Za-z0-9_.:]+\}")
_PARTITION = "aws"


class StackDeployError(RuntimeError):
    """The template could not be deployed into moto; the message says which resource and why."""


class UnsupportedResourceError(StackDeployError):
    """Resources whose type moto's CloudFormation cannot create (and no shim covers)."""

    def __init__(self, resources: dict[str, str]) -> None:
        self.resources = dict(resources)  # logical id -> type
        listed = ", ".join(f"{lid} ({rtype})" for lid, rtype in sorted(resources.items()))
        super().__init__(
            f"moto's CloudFormation cannot create {len(resources)} resource(s): {listed}. "
            "Add a shim to ingest_tools.localcloud.stack.SHIMS or change the template; "
            "moto itself would skip them silently."
        )


class UnsupportedPropertyError(StackDeployError):
    """Properties moto would ignore without a word (and nothing here applies)."""

    def __init__(self, properties: dict[str, list[str]]) -> None:
        self.properties = {lid: sorted(props) for lid, props in properties.items()}
        listed = "; ".join(f"{lid}: {', '.join(p)}" for lid, p in sorted(self.properties.items()))
        super().__init__(
            f"moto would ignore these properties: {listed}. Apply them in "
            "ingest_tools.localcloud.stack (PROPERTY_SUPPORT) or change the template."
        )


@dataclass(frozen=True)
class DeployedStack:
    stack_name: str
    region: str
    outputs: dict[str, str]  # template Outputs, resolved
    resources: dict[str, str]  # logical id -> physical id (DescribeStackResources)
    functions: dict[str, str]  # logical id of each function -> physical function name
    environment: dict[str, str] = field(default_factory=dict)  # put into os.environ
    _previous_environment: dict[str, str | None] = field(default_factory=dict, repr=False)

    def restore_environment(self) -> None:
        """Put back the os.environ values ``deploy`` replaced."""
        for name, value in self._previous_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# ------------------------------------------------------------------ template preparation
def load_template(path: Path) -> dict[str, Any]:
    """A SAM/CloudFormation YAML or JSON template, short tags (!Ref, !Sub ...) expanded."""
    text = Path(path).read_text()
    return copy.deepcopy(_parse_yaml(text))


@functools.lru_cache(maxsize=8)
def _parse_yaml(text: str) -> dict[str, Any]:  # per text: callers get deep copies
    from samtranslator.yaml_helper import yaml_parse

    parsed: dict[str, Any] = yaml_parse(text)
    return parsed


def _is_local(uri: Any) -> bool:
    return isinstance(uri, str) and not uri.startswith("s3://")


def localize(
    template: dict[str, Any], base_dir: Path, upload: Callable[[Path], dict[str, str]]
) -> tuple[dict[str, Any], dict[str, Path]]:
    """A copy of ``template`` with local artifact paths replaced, as ``sam package`` would.

    ``upload(path)`` returns ``{"Bucket": ..., "Key": ...}`` for a local CodeUri/ContentUri.
    Returns the new template and, per function logical id, its local code directory.
    """
    out = copy.deepcopy(template)
    resources = out.get("Resources") or {}
    global_fn = (out.get("Globals") or {}).get("Function") or {}

    def local_path(uri: str, where: str) -> Path:
        path = (base_dir / uri).resolve()
        if not path.exists():
            raise StackDeployError(f"{where}: {uri!r} does not exist (relative to {base_dir})")
        return path

    global_code: Path | None = None
    if _is_local(global_fn.get("CodeUri")):
        global_code = local_path(global_fn["CodeUri"], "Globals.Function.CodeUri")
        global_fn["CodeUri"] = upload(global_code)

    code_dirs: dict[str, Path] = {}
    for logical_id, resource in resources.items():
        rtype, props = resource.get("Type"), resource.get("Properties") or {}
        if rtype == "AWS::Serverless::Function":
            if _is_local(props.get("CodeUri")):
                code_dirs[logical_id] = local_path(props["CodeUri"], f"{logical_id}.CodeUri")
                props["CodeUri"] = upload(code_dirs[logical_id])
            elif "CodeUri" not in props and "InlineCode" not in props and global_code:
                code_dirs[logical_id] = global_code
        elif rtype == "AWS::Serverless::LayerVersion" and _is_local(props.get("ContentUri")):
            props["ContentUri"] = upload(
                local_path(props["ContentUri"], f"{logical_id}.ContentUri")
            )
        elif rtype == "AWS::Serverless::StateMachine" and "DefinitionUri" in props:
            uri = props.pop("DefinitionUri")
            if not _is_local(uri):
                raise StackDeployError(
                    f"{logical_id}.DefinitionUri {uri!r}: only local definition files are "
                    "supported locally (moto does not read DefinitionS3Location)"
                )
            props["Definition"] = json.loads(
                local_path(uri, f"{logical_id}.DefinitionUri").read_text()
            )
        resource["Properties"] = props
    return out, code_dirs


class _NoIamManagedPolicies:
    """ManagedPolicyLoader stand-in: samtranslator's bundled map covers AWS managed policies."""

    def load(self) -> dict[str, str]:
        return {}


def sam_transform(
    template: dict[str, Any], parameters: dict[str, str] | None = None, *, region: str
) -> dict[str, Any]:
    """``AWS::Serverless-2016-10-31`` applied offline (the steps of samtranslator's transform)."""
    key = json.dumps([template, parameters or {}, region], sort_keys=True, default=str)
    return copy.deepcopy(_transform(key))


@functools.lru_cache(maxsize=8)
def _transform(key: str) -> dict[str, Any]:  # per (template, parameters, region): deep copies
    template, parameters, region = json.loads(key)
    return _sam_transform(template, parameters, region=region)


def _sam_transform(
    template: dict[str, Any], parameters: dict[str, str] | None = None, *, region: str
) -> dict[str, Any]:
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator
    from samtranslator.utils.py27hash_fix import (
        to_py27_compatible_template,
        undo_mark_unicode_str_in_template,
    )

    if "Transform" not in template:
        return copy.deepcopy(template)
    fragment = copy.deepcopy(template)
    values: dict[str, Any] = dict(parameters or {})
    to_py27_compatible_template(fragment, values)
    # An explicit session: the translator needs a region and must not depend on the caller's env.
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region))
    loader = _NoIamManagedPolicies()
    transformed = translator.translate(
        fragment, parameter_values=values, get_managed_policy_map=loader.load
    )
    result: dict[str, Any] = undo_mark_unicode_str_in_template(transformed)
    return result


# ------------------------------------------------------------------ resource type support
def moto_supported_types() -> frozenset[str]:
    """Resource types moto's CloudFormation creates (its model map; NULL_MODELS are skipped)."""
    return frozenset(cfn_parsing.get_model_map())


def unsupported_resources(template: dict[str, Any]) -> dict[str, str]:
    """logical id -> type of each resource neither moto nor a shim can create."""
    supported = moto_supported_types() | SHIMS.keys()
    return {
        logical_id: resource.get("Type", "<no Type>")
        for logical_id, resource in (template.get("Resources") or {}).items()
        if resource.get("Type") not in supported
    }


class Support(NamedTuple):
    moto: frozenset[str]  # applied by moto's CloudFormation model (read in moto 5.2.5)
    applied: frozenset[str] = frozenset()  # applied here after creation (_APPLIERS)
    inert: frozenset[str] = frozenset()  # accepted: nothing to emulate locally


# Audited types only; properties outside moto | applied | inert raise UnsupportedPropertyError.
PROPERTY_SUPPORT: dict[str, Support] = {
    "AWS::S3::Bucket": Support(
        moto=frozenset({"BucketName", "BucketEncryption", "Tags"}),
        applied=frozenset({"VersioningConfiguration", "NotificationConfiguration",
                           "PublicAccessBlockConfiguration", "OwnershipControls",
                           "LifecycleConfiguration"}),
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
        applied=frozenset({"Layers", "TracingConfig", "Architectures", "EphemeralStorage", "Tags"}),
        inert=frozenset({"LoggingConfig"}),  # handler logs go to the test process
    ),
    # created by fixes/sfn_cloudformation_state_machine.py (StateMachineType: only STANDARD,
    # checked below)
    "AWS::StepFunctions::StateMachine": Support(
        moto=frozenset({"StateMachineName", "DefinitionString", "Definition",
                        "DefinitionSubstitutions", "RoleArn", "Tags", "StateMachineType"}),
        inert=frozenset({"LoggingConfiguration", "TracingConfiguration"}),  # no CW Logs / X-Ray
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
        if rtype == "AWS::StepFunctions::StateMachine" and machine_type != "STANDARD":
            bad.append(f"StateMachineType={machine_type} (only STANDARD runs locally)")
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


# ------------------------------------------------------------------ properties moto ignores
def _bool(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).lower() == "true"


def _only(mapping: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(mapping) - allowed)
    if extra:
        raise StackDeployError(f"{where}: {', '.join(extra)} not applied locally")


def _notification_configuration(cfg: dict[str, Any], where: str) -> dict[str, Any]:
    """CloudFormation NotificationConfiguration -> PutBucketNotificationConfiguration shape."""
    kinds = (
        ("QueueConfigurations", "QueueConfigurations", "Queue", "QueueArn"),
        ("TopicConfigurations", "TopicConfigurations", "Topic", "TopicArn"),
        ("LambdaConfigurations", "LambdaFunctionConfigurations", "Function", "LambdaFunctionArn"),
    )
    _only(cfg, {k[0] for k in kinds} | {"EventBridgeConfiguration"}, where)
    out: dict[str, Any] = {}
    for cfn_key, api_key, cfn_arn, api_arn in kinds:
        for item in cfg.get(cfn_key) or []:
            entry: dict[str, Any] = {api_arn: item[cfn_arn], "Events": [item["Event"]]}
            rules = ((item.get("Filter") or {}).get("S3Key") or {}).get("Rules")
            if rules:
                entry["Filter"] = {"Key": {"FilterRules": rules}}
            out.setdefault(api_key, []).append(entry)
    eventbridge = cfg.get("EventBridgeConfiguration")
    if eventbridge is not None and _bool(eventbridge.get("EventBridgeEnabled", True)):
        out["EventBridgeConfiguration"] = {}
    return out


_LIFECYCLE_KEYS = {
    "Id", "Status", "Prefix", "ExpirationInDays", "ExpirationDate", "ExpiredObjectDeleteMarker",
    "NoncurrentVersionExpiration", "NoncurrentVersionExpirationInDays",
    "AbortIncompleteMultipartUpload",
}  # fmt: skip


def _lifecycle_rule(rule: dict[str, Any], where: str) -> dict[str, Any]:
    """One CloudFormation lifecycle rule -> PutBucketLifecycleConfiguration shape."""
    _only(rule, _LIFECYCLE_KEYS, where)
    out: dict[str, Any] = {"Status": rule["Status"], "Filter": {}}
    if "Id" in rule:
        out["ID"] = rule["Id"]
    if rule.get("Prefix"):
        out["Filter"] = {"Prefix": rule["Prefix"]}
    expiration: dict[str, Any] = {}
    if "ExpirationInDays" in rule:
        expiration["Days"] = int(rule["ExpirationInDays"])
    if "ExpirationDate" in rule:
        expiration["Date"] = rule["ExpirationDate"]
    if "ExpiredObjectDeleteMarker" in rule:
        expiration["ExpiredObjectDeleteMarker"] = _bool(rule["ExpiredObjectDeleteMarker"])
    if expiration:
        out["Expiration"] = expiration
    noncurrent = dict(rule.get("NoncurrentVersionExpiration") or {})
    if "NoncurrentVersionExpirationInDays" in rule:
        noncurrent["NoncurrentDays"] = rule["NoncurrentVersionExpirationInDays"]
    if noncurrent:
        out["NoncurrentVersionExpiration"] = {k: int(v) for k, v in noncurrent.items()}
    if "AbortIncompleteMultipartUpload" in rule:
        days = rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"]
        out["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": int(days)}
    return out


def _apply_bucket(name: str, props: dict[str, Any], resource: Any, region: str) -> None:
    s3 = boto3.client("s3", region_name=region)
    if "VersioningConfiguration" in props:
        status = props["VersioningConfiguration"]["Status"]
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": status})
    if "NotificationConfiguration" in props:
        config = _notification_configuration(
            props["NotificationConfiguration"], f"{name} NotificationConfiguration"
        )
        s3.put_bucket_notification_configuration(Bucket=name, NotificationConfiguration=config)
    if "PublicAccessBlockConfiguration" in props:
        block = {k: _bool(v) for k, v in props["PublicAccessBlockConfiguration"].items()}
        s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration=block)
    if "OwnershipControls" in props:
        s3.put_bucket_ownership_controls(Bucket=name, OwnershipControls=props["OwnershipControls"])
    if "LifecycleConfiguration" in props:
        lifecycle = props["LifecycleConfiguration"]
        _only(lifecycle, {"Rules"}, f"{name} LifecycleConfiguration")
        rules = [_lifecycle_rule(r, f"{name} lifecycle rule") for r in lifecycle["Rules"]]
        s3.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration={"Rules": rules})


def _apply_table(name: str, props: dict[str, Any], resource: Any, region: str) -> None:
    ddb = boto3.client("dynamodb", region_name=region)
    ttl = props.get("TimeToLiveSpecification")
    if ttl and _bool(ttl.get("Enabled", False)):
        ddb.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
        )
    pitr = props.get("PointInTimeRecoverySpecification")
    if pitr and _bool(pitr.get("PointInTimeRecoveryEnabled", False)):
        spec: dict[str, Any] = {"PointInTimeRecoveryEnabled": True}
        if "RecoveryPeriodInDays" in pitr:
            spec["RecoveryPeriodInDays"] = int(pitr["RecoveryPeriodInDays"])
        ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=spec)


def _apply_function(name: str, props: dict[str, Any], fn: Any, region: str) -> None:
    # moto's UpdateFunctionConfiguration ignores TracingConfig: set them on moto's model, as
    # its own CreateFunction does from the same keys (awslambda/models.py LambdaFunction).
    if "Layers" in props:
        fn.layers = fn._get_layers_data(props["Layers"])  # public layers: stand-in (patches)
    if "TracingConfig" in props:
        fn.tracing_config = props["TracingConfig"]
    if "Architectures" in props:
        fn.architectures = props["Architectures"]
    if "EphemeralStorage" in props:
        fn.ephemeral_storage = int(props["EphemeralStorage"]["Size"])
    if "Tags" in props:
        fn.tags = {tag["Key"]: tag["Value"] for tag in props["Tags"]}


_APPLIERS: dict[str, Callable[[str, dict[str, Any], Any, str], None]] = {
    "AWS::S3::Bucket": _apply_bucket,
    "AWS::DynamoDB::Table": _apply_table,
    "AWS::Lambda::Function": _apply_function,
}


class _Created(NamedTuple):
    logical_id: str
    rtype: str
    props: dict[str, Any]  # resolved (Ref, GetAtt, Sub ...)
    resource: Any


def _apply_ignored_properties(created: list[_Created], region: str) -> None:
    for item in created:
        support = PROPERTY_SUPPORT[item.rtype]
        props = {k: v for k, v in item.props.items() if k in support.applied}
        if not props:
            continue
        try:
            _APPLIERS[item.rtype](item.resource.physical_resource_id, props, item.resource, region)
        except StackDeployError:
            raise
        except Exception as exc:
            raise StackDeployError(
                f"{item.logical_id} ({item.rtype}): applying {', '.join(sorted(props))} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc


# ------------------------------------------------------------------ SSM parameters
def put_public_parameter(
    name: str, value: str, *, region: str, account_id: str = DEFAULT_ACCOUNT_ID
) -> None:
    """Seed a public SSM parameter (``/aws/service/...``) that AWS publishes and moto's API
    refuses to write (reserved prefix), the way moto seeds its own public parameters."""
    from moto.ssm.models import Parameter, ssm_backends

    versions = ssm_backends[account_id][region]._parameters[name]
    versions.append(
        Parameter(
            account_id=account_id,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=datetime.now(UTC),
            version=len(versions) + 1,
            data_type="text",
        )
    )


def _check_ssm_parameters(
    template: dict[str, Any], parameters: dict[str, str], region: str
) -> None:
    ssm = boto3.client("ssm", region_name=region)
    missing = []
    for key, spec in (template.get("Parameters") or {}).items():
        if not str(spec.get("Type", "")).startswith("AWS::SSM::Parameter::"):
            continue
        name = parameters.get(key, spec.get("Default"))
        try:
            ssm.get_parameter(Name=name)
        except ClientError:
            missing.append(f"{key} -> {name}")
    if missing:
        raise StackDeployError(
            f"SSM parameters not found in the local SSM: {', '.join(missing)}. AWS publishes "
            "/aws/service/... parameters; seed them with stack.put_public_parameter()."
        )


# ------------------------------------------------------------------ shims
class _Shim:
    """Duck-typed like moto's CloudFormationModel (not a subclass: moto's model map is built
    from CloudFormationModel.__subclasses__(), and must keep saying what moto itself does)."""

    TYPE = ""
    PROPERTIES: frozenset[str] = frozenset()
    ATTRIBUTES: frozenset[str] = frozenset()

    def __init__(self, physical_resource_id: str, account_id: str, region: str) -> None:
        self.physical_resource_id = physical_resource_id
        self.account_id, self.region = account_id, region

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in cls.ATTRIBUTES

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        """Fn::GetAtt: a declared attribute is the shim's attribute of that name ("Arn" -> arn)."""
        from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

        if attribute_name in self.ATTRIBUTES:
            return getattr(self, attribute_name.lower())
        raise UnformattedGetAttTemplateException()

    def is_created(self) -> bool:
        return True

    @classmethod
    def create_from_cloudformation_json(
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> _Shim:
        # unsupported_properties() has checked the property names against PROPERTIES
        return cls.create(resource_name, cloudformation_json.get("Properties") or {}, account_id,
                          region_name)  # fmt: skip

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        raise NotImplementedError

    def delete(self, account_id: str, region_name: str) -> None:
        raise NotImplementedError


def _matches(actual: str, expected: Any) -> bool:
    wanted = expected if isinstance(expected, list) else [expected]
    return any(str(actual).lower() == str(value).lower() for value in wanted)


def _condition_applies(condition: dict[str, Any], where: str) -> bool:
    """Evaluate a policy Condition block against LOCAL_REQUEST_CONTEXT (Bool keys only)."""
    for operator, block in condition.items():
        if operator not in ("Bool", "BoolIfExists"):
            raise StackDeployError(
                f"{where}: condition operator {operator} is not evaluated locally"
            )
        for key, expected in block.items():
            if key not in LOCAL_REQUEST_CONTEXT:
                raise StackDeployError(f"{where}: condition key {key} is not known locally")
            if not _matches(LOCAL_REQUEST_CONTEXT[key], expected):
                return False
    return True


class _BucketPolicy(_Shim):
    TYPE = "AWS::S3::BucketPolicy"
    PROPERTIES = frozenset({"Bucket", "PolicyDocument"})

    def __init__(self, name: str, account_id: str, region: str, bucket: str, document: Any) -> None:
        super().__init__(name, account_id, region)
        self.bucket, self.document = bucket, document  # document: as written in the template

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        document = props["PolicyDocument"]
        if isinstance(document, str):
            document = json.loads(document)
        statements = document.get("Statement") or []
        if isinstance(statements, dict):
            statements = [statements]
        effective = []
        for index, statement in enumerate(statements):
            where = f"{cls.TYPE} {name} statement {statement.get('Sid', index)}"
            if "Condition" not in statement:
                effective.append(statement)
            elif _condition_applies(statement["Condition"], where):
                effective.append({k: v for k, v in statement.items() if k != "Condition"})
        backend = s3_backends[account_id][_PARTITION]
        if effective:
            policy = dict(document, Statement=effective)
            backend.put_bucket_policy(props["Bucket"], json.dumps(policy).encode())
        return cls(name, account_id, region, props["Bucket"], document)

    def delete(self, account_id: str, region_name: str) -> None:
        s3_backends[account_id][_PARTITION].delete_bucket_policy(self.bucket)


class _QueuePolicy(_Shim):
    TYPE = "AWS::SQS::QueuePolicy"
    PROPERTIES = frozenset({"Queues", "PolicyDocument"})

    def __init__(self, name: str, account_id: str, region: str, queues: list[str]) -> None:
        super().__init__(name, account_id, region)
        self.queues = queues

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        document = props["PolicyDocument"]
        policy = document if isinstance(document, str) else json.dumps(document)
        names = [url.rstrip("/").rsplit("/", 1)[-1] for url in props["Queues"]]
        backend = sqs_backends[account_id][region]
        for queue in names:
            backend.set_queue_attributes(queue, {"Policy": policy})
        return cls(name, account_id, region, names)

    def delete(self, account_id: str, region_name: str) -> None:
        backend = sqs_backends[account_id][region_name]
        for queue in self.queues:
            backend.set_queue_attributes(queue, {"Policy": ""})


class _Subscription(_Shim):
    TYPE = "AWS::SNS::Subscription"
    _ATTRIBUTES = ("DeliveryPolicy", "FilterPolicy", "FilterPolicyScope", "RawMessageDelivery",
                   "RedrivePolicy", "ReplayPolicy", "SubscriptionRoleArn")  # fmt: skip
    PROPERTIES = frozenset({"TopicArn", "Protocol", "Endpoint", "Region", *_ATTRIBUTES})

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        if props.get("Region", region) != region:
            raise StackDeployError(f"{cls.TYPE} {name}: cross-region subscriptions are not local")
        backend = sns_backends[account_id][region]
        subscription = backend.subscribe(props["TopicArn"], props["Endpoint"], props["Protocol"])
        for attribute in cls._ATTRIBUTES:
            if attribute in props:
                value = props[attribute]
                if isinstance(value, dict | list):
                    value = json.dumps(value)
                elif isinstance(value, bool):
                    value = str(value).lower()
                backend.set_subscription_attributes(subscription.arn, attribute, value)
        return cls(subscription.arn, account_id, region)

    def delete(self, account_id: str, region_name: str) -> None:
        sns_backends[account_id][region_name].unsubscribe(self.physical_resource_id)


class _Alarm(_Shim):
    TYPE = "AWS::CloudWatch::Alarm"
    PROPERTIES = frozenset({
        "ActionsEnabled", "AlarmActions", "AlarmDescription", "AlarmName", "ComparisonOperator",
        "DatapointsToAlarm", "Dimensions", "EvaluateLowSampleCountPercentile",
        "EvaluationPeriods", "ExtendedStatistic", "InsufficientDataActions", "MetricName",
        "Namespace", "OKActions", "Period", "Statistic", "Tags", "Threshold", "ThresholdMetricId",
        "TreatMissingData", "Unit",
    })  # fmt: skip
    ATTRIBUTES = frozenset({"Arn"})

    def __init__(self, name: str, account_id: str, region: str, arn: str) -> None:
        super().__init__(name, account_id, region)
        self.arn = arn

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        def number(key: str, kind: type = int) -> Any:
            return kind(props[key]) if key in props else None

        alarm = cloudwatch_backends[account_id][region].put_metric_alarm(
            name=props.get("AlarmName", name),
            namespace=props.get("Namespace"),
            metric_name=props.get("MetricName"),
            comparison_operator=props["ComparisonOperator"],
            evaluation_periods=number("EvaluationPeriods"),
            period=number("Period"),
            threshold=number("Threshold", float),
            statistic=props.get("Statistic"),
            description=props.get("AlarmDescription"),
            dimensions=props.get("Dimensions", []),
            alarm_actions=props.get("AlarmActions", []),
            datapoints_to_alarm=number("DatapointsToAlarm"),
            extended_statistic=props.get("ExtendedStatistic"),
            ok_actions=props.get("OKActions", []),
            insufficient_data_actions=props.get("InsufficientDataActions", []),
            unit=props.get("Unit"),
            actions_enabled=str(props.get("ActionsEnabled", True)).lower() == "true",
            treat_missing_data=props.get("TreatMissingData"),
            evaluate_low_sample_count_percentile=props.get("EvaluateLowSampleCountPercentile"),
            threshold_metric_id=props.get("ThresholdMetricId"),
            tags=props.get("Tags"),
        )
        return cls(alarm.name, account_id, region, alarm.alarm_arn)

    def delete(self, account_id: str, region_name: str) -> None:
        cloudwatch_backends[account_id][region_name].delete_alarms([self.physical_resource_id])


class _Schedule(_Shim):
    """AWS::Scheduler::Schedule -> moto's Scheduler backend (fired by scheduler.Schedules)."""

    TYPE = "AWS::Scheduler::Schedule"
    PROPERTIES = frozenset({
        "Name", "GroupName", "Description", "ScheduleExpression", "ScheduleExpressionTimezone",
        "FlexibleTimeWindow", "Target", "State", "KmsKeyArn", "StartDate", "EndDate",
    })  # fmt: skip
    ATTRIBUTES = frozenset({"Arn"})

    def __init__(self, name: str, account_id: str, region: str, arn: str, group: str) -> None:
        super().__init__(name, account_id, region)
        self.arn, self.group = arn, group

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        from moto.scheduler.models import scheduler_backends

        schedule = scheduler_backends[account_id][region].create_schedule(
            description=props.get("Description", ""),
            end_date=props.get("EndDate", ""),
            flexible_time_window=props["FlexibleTimeWindow"],
            group_name=props.get("GroupName", "default"),
            kms_key_arn=props.get("KmsKeyArn", ""),
            name=props.get("Name", name),
            schedule_expression=props["ScheduleExpression"],
            schedule_expression_timezone=props.get("ScheduleExpressionTimezone", "UTC"),
            start_date=props.get("StartDate", ""),
            state=props.get("State", "ENABLED"),
            target=copy.deepcopy(props["Target"]),
            action_after_completion=None,
        )
        return cls(schedule.name, account_id, region, schedule.arn, schedule.group_name)

    def delete(self, account_id: str, region_name: str) -> None:
        from moto.scheduler.models import scheduler_backends

        scheduler_backends[account_id][region_name].delete_schedule(
            self.group, self.physical_resource_id
        )


SHIMS: dict[str, type[_Shim]] = {
    shim.TYPE: shim for shim in (_BucketPolicy, _QueuePolicy, _Subscription, _Alarm, _Schedule)
}


class _PublicLayer:
    """Stand-in for a public layer version moto has never seen (content unused: in-process)."""

    def __init__(self, arn: str) -> None:
        self.arn, self.code_size, self.code_bytes = arn, 0, b""


def _is_public_layer(arn: str) -> bool:
    parts = arn.split(":")
    return len(parts) == 8 and parts[2] == "lambda" and parts[4] in PUBLIC_LAYER_ACCOUNTS


@contextmanager
def _moto_patches(failures: list[tuple[str, str, str]], created: list[_Created]) -> Iterator[None]:
    """Shims, public layers, failure reports and the resolved properties of created resources,
    only while the stack is being created."""
    orig_class_from_type = cfn_parsing.resource_class_from_type
    orig_create = cfn_parsing.parse_and_create_resource
    orig_layer = LambdaBackend.layers_versions_by_arn
    orig_parse_template = cfn_models.Stack.__dict__["parse_template"]
    orig_name = cfn_parsing.generate_resource_name
    orig_suffix = cfn_parsing.random_suffix

    def class_from_type(resource_type: str) -> Any:
        return SHIMS.get(resource_type) or orig_class_from_type(resource_type)

    def create(
        logical_id: str, resource_json: dict[str, Any], resources_map: Any, *args: Any, **kw: Any
    ) -> Any:
        try:
            resource = orig_create(logical_id, resource_json, resources_map, *args, **kw)
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            failures.append((logical_id, resource_json.get("Type", "?"), reason))
            raise
        rtype = resource_json.get("Type", "")
        if resource is not None and rtype in _APPLIERS:
            props = cfn_parsing.clean_json(resource_json.get("Properties") or {}, resources_map)
            created.append(_Created(logical_id, rtype, props, resource))
        return resource

    def layer(self: LambdaBackend, layer_version_arn: str) -> Any:
        found = orig_layer(self, layer_version_arn)
        if found is None and _is_public_layer(layer_version_arn):
            return _PublicLayer(layer_version_arn)
        return found

    def parse_template(template: str) -> dict[str, Any]:
        # moto tries PyYAML (pure Python, ~0.1 s here) before JSON; deploy() sends JSON.
        try:
            return dict(json.loads(template))
        except ValueError:
            return orig_parse_template.__func__(template)  # type: ignore[no-any-return]

    def resource_name(resource_type: str, stack_name: str, logical_id: str) -> str:
        # AWS appends a random suffix to generated names. Here it is derived from the stack
        # and logical id, so the same deploy gets the same names: the state machine definition
        # (which embeds the table name) is then parsed once per process, not per deploy.
        digest = base64.b32encode(hashlib.sha256(f"{stack_name}/{logical_id}".encode()).digest())
        cfn_parsing.random_suffix = digest[:12].decode
        try:
            return orig_name(resource_type, stack_name, logical_id)
        finally:
            cfn_parsing.random_suffix = orig_suffix

    cfn_parsing.resource_class_from_type = class_from_type
    cfn_parsing.parse_and_create_resource = create
    cfn_parsing.generate_resource_name = resource_name
    LambdaBackend.layers_versions_by_arn = layer  # type: ignore[method-assign]
    cfn_models.Stack.parse_template = staticmethod(parse_template)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        cfn_parsing.resource_class_from_type = orig_class_from_type
        cfn_parsing.parse_and_create_resource = orig_create
        cfn_parsing.generate_resource_name = orig_name
        LambdaBackend.layers_versions_by_arn = orig_layer  # type: ignore[method-assign]
        cfn_models.Stack.parse_template = orig_parse_template  # type: ignore[method-assign]


# ------------------------------------------------------------------ deploy
_PLACEHOLDER_ZIP: bytes | None = None


def _placeholder_zip() -> bytes:
    global _PLACEHOLDER_ZIP  # noqa: PLW0603 - built once per process
    if _PLACEHOLDER_ZIP is None:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr(
                "LOCAL_PLACEHOLDER.txt",
                "ingest_tools.localcloud.stack: handlers run in-process from the source tree.\n",
            )
        _PLACEHOLDER_ZIP = buffer.getvalue()
    return _PLACEHOLDER_ZIP


class _MotoLogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _create_stack(
    cfn: Any, stack_name: str, body: str, parameters: dict[str, str], region: str
) -> None:
    failures: list[tuple[str, str, str]] = []
    created: list[_Created] = []
    moto_log = logging.getLogger("moto")
    capture = _MotoLogCapture()  # e.g. a GetAtt moto cannot resolve: the property is dropped
    moto_log.addHandler(capture)
    error: Exception | None = None
    try:
        with _moto_patches(failures, created):
            cfn.create_stack(
                StackName=stack_name,
                TemplateBody=body,
                Parameters=[
                    {"ParameterKey": k, "ParameterValue": str(v)} for k, v in parameters.items()
                ],
                Capabilities=CAPABILITIES,
            )
            _apply_ignored_properties(created, region)
    except StackDeployError:
        raise
    except Exception as exc:  # moto raises from the failing resource instead of CREATE_FAILED
        error = exc
    finally:
        moto_log.removeHandler(capture)
    status = None
    if error is None:
        status = cfn.describe_stacks(StackName=stack_name)["Stacks"][0]["StackStatus"]
    if error is not None or status != "CREATE_COMPLETE" or capture.messages:
        head = f"{type(error).__name__}: {error}" if error else f"status {status}"
        lines = [f"stack {stack_name}: {head}"]
        if failures:
            lid, rtype, reason = failures[0]
            lines.append(f"  failed resource: {lid} ({rtype}): {reason}")
            lines += [f"  then: {lid} ({rtype}) failed" for lid, rtype, _ in failures[1:]]
        lines += [f"  moto: {message}" for message in capture.messages]
        raise StackDeployError("\n".join(lines)) from error


def _physical_resources(cfn: Any, stack_name: str) -> tuple[dict[str, str], dict[str, str]]:
    # moto lists a resource whose Condition is false as an entry with no ids: not created.
    described = [
        r
        for r in cfn.describe_stack_resources(StackName=stack_name)["StackResources"]
        if r.get("LogicalResourceId")
    ]
    resources = {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in described}
    types = {r["LogicalResourceId"]: r["ResourceType"] for r in described}
    return resources, types


def _check_state_machines(sfn: Any, resources: dict[str, str], types: dict[str, str]) -> None:
    for logical_id, rtype in types.items():
        if rtype != "AWS::StepFunctions::StateMachine":
            continue
        arn = resources[logical_id]
        try:
            definition = sfn.describe_state_machine(stateMachineArn=arn)["definition"]
        except ClientError as exc:
            raise StackDeployError(
                f"{logical_id}: {arn} is not visible to DescribeStateMachine "
                f"({exc.response['Error']['Code']}); are the local cloud's patches installed?"
            ) from exc
        leftover = sorted(set(_UNRESOLVED.findall(definition)))
        if leftover:
            raise StackDeployError(f"{logical_id}: definition still contains {', '.join(leftover)}")


def _function_environment(configs: dict[str, dict[str, Any]]) -> dict[str, str]:
    merged: dict[str, str] = {}
    owner: dict[str, str] = {}
    for logical_id, config in configs.items():
        variables = (config.get("Environment") or {}).get("Variables") or {}
        for name, raw in variables.items():
            value = str(raw)
            if name in merged and merged[name] != value:
                raise StackDeployError(
                    f"environment variable {name} differs between functions: "
                    f"{owner[name]}={merged[name]!r}, {logical_id}={value!r} "
                    "(handlers share one process and one os.environ)"
                )
            merged[name], owner[name] = value, logical_id
    return merged


def _resolve_handler(handler: str, where: str) -> Callable[[Any, Any], Any]:
    module_name, _, attribute = handler.rpartition(".")
    if not module_name:
        raise StackDeployError(f"{where}: Handler {handler!r} is not 'module.function'")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise StackDeployError(f"{where}: cannot import Handler {handler!r}: {exc}") from exc
    if not callable(target):
        raise StackDeployError(f"{where}: Handler {handler!r} is not callable")
    return target  # type: ignore[no-any-return]


class _Artifacts:
    """Uploads a placeholder zip per local code directory into a stack artifact bucket."""

    def __init__(self, stack_name: str, region: str) -> None:
        self.s3 = boto3.client("s3", region_name=region)
        self.bucket = re.sub(r"[^a-z0-9-]", "-", stack_name.lower())[:40].strip("-") or "stack"
        self.bucket += "-local-artifacts"
        self.prefix, self.region = stack_name, region
        self.uploaded: dict[Path, dict[str, str]] = {}

    def __call__(self, path: Path) -> dict[str, str]:
        if path not in self.uploaded:
            if not self.uploaded:
                location = {"LocationConstraint": self.region}
                extra = (
                    {} if self.region == "us-east-1" else {"CreateBucketConfiguration": location}
                )
                with suppress(self.s3.exceptions.BucketAlreadyOwnedByYou):
                    self.s3.create_bucket(Bucket=self.bucket, **extra)
            key = f"{self.prefix}/{len(self.uploaded)}-{path.name or 'code'}.zip"
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=_placeholder_zip())
            self.uploaded[path] = {"Bucket": self.bucket, "Key": key}
        return self.uploaded[path]


def _prepare(
    template: Path, parameters: dict[str, str], upload: _Artifacts
) -> tuple[dict[str, Any], dict[str, Path]]:
    """Localized, transformed and checked: what create_stack receives."""
    source, code_dirs = localize(load_template(template), template.parent, upload)
    try:
        transformed = sam_transform(source, parameters, region=upload.region)
    except Exception as exc:  # samtranslator's InvalidDocumentException lists every problem
        raise StackDeployError(f"SAM transform of {template.name} failed: {exc}") from exc
    unsupported = unsupported_resources(transformed)
    if unsupported:
        raise UnsupportedResourceError(unsupported)
    dropped = unsupported_properties(transformed)
    if dropped:
        raise UnsupportedPropertyError(dropped)
    inert = _inert_properties(transformed)
    if inert:
        LOG.info("no local effect (accepted): %s", ", ".join(inert))
    _check_ssm_parameters(transformed, parameters, upload.region)
    return transformed, code_dirs


def _register_handlers(
    functions: dict[str, str],
    code_dirs: dict[str, Path],
    region: str,
    handlers: dict[str, Callable[[Any, Any], Any]],
) -> tuple[dict[str, str], dict[str, str | None]]:
    """handlers[physical name] = the imported Handler; the functions' environment
    into os.environ first (handlers read it at import). Returns (environment, previous)."""
    lambda_client = boto3.client("lambda", region_name=region)
    configs = {
        lid: lambda_client.get_function_configuration(FunctionName=name)
        for lid, name in functions.items()
    }
    environment = _function_environment(configs)
    previous = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    for path in dict.fromkeys(str(p) for p in code_dirs.values()):
        if path not in sys.path:
            sys.path.insert(0, path)  # the code directory is /var/task, first on Lambda's path
    try:
        for lid, name in functions.items():
            runtime = str(configs[lid].get("Runtime", ""))
            if not runtime.startswith("python"):
                raise StackDeployError(f"{lid}: runtime {runtime} cannot run in-process")
            handlers[name] = _resolve_handler(configs[lid]["Handler"], lid)
    except BaseException:
        DeployedStack("", region, {}, {}, {}, {}, previous).restore_environment()
        raise
    return environment, previous


def deploy(
    template: Path,
    *,
    stack_name: str = "ingest-local",
    region: str = "us-east-1",
    parameters: dict[str, str] | None = None,
    handlers: dict[str, Callable[[Any, Any], Any]] | None = None,
) -> DeployedStack:
    """Deploy ``template`` into the active moto mock (see the module docstring). The
    functions' handlers are registered in ``handlers`` (a ``Runtime.handlers``)."""
    template = Path(template).resolve()
    parameters = dict(parameters or {})
    # boto3's default session: its loader caches service models (a new Session costs ~0.3 s).
    cfn = boto3.client("cloudformation", region_name=region)
    transformed, code_dirs = _prepare(template, parameters, _Artifacts(stack_name, region))

    _create_stack(cfn, stack_name, json.dumps(transformed), parameters, region)

    described = cfn.describe_stacks(StackName=stack_name)["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
    missing = sorted(set(transformed.get("Outputs") or {}) - set(outputs))
    if missing:
        raise StackDeployError(f"stack {stack_name}: outputs moto left unresolved: {missing}")
    resources, types = _physical_resources(cfn, stack_name)
    _check_state_machines(boto3.client("stepfunctions", region_name=region), resources, types)

    functions = {lid: resources[lid] for lid, t in types.items() if t == "AWS::Lambda::Function"}
    environment, previous = _register_handlers(
        functions, code_dirs, region, {} if handlers is None else handlers
    )
    return DeployedStack(
        stack_name=stack_name,
        region=region,
        outputs=outputs,
        resources=resources,
        functions=functions,
        environment=environment,
        _previous_environment=previous,
    )
