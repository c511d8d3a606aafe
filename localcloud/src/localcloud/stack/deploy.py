"""``deploy``: prepare, create the stack, apply what moto ignores, register the functions."""

from __future__ import annotations

import json
import logging
import re
from contextlib import suppress
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from localcloud.code import stand_in_zip
from localcloud.iam import enforcement as iam
from localcloud.iam.actions import Need
from localcloud.iam.enforcement import IAM_VARIABLE
from localcloud.patching import PatchSet, speedups_enabled, without_from_environment
from localcloud.runtime import Runtime
from localcloud.stack import custom_resources, patches, snapshot
from localcloud.stack import speedups as speedup_patches
from localcloud.stack.base import (
    LOG,
    DeployedStack,
    StackDeployError,
    UnsupportedPropertyError,
    UnsupportedResourceError,
)
from localcloud.stack.clients import DeployClients
from localcloud.stack.dependencies import check_circular_dependencies, references
from localcloud.stack.properties import _apply_ignored_properties
from localcloud.stack.ssm import _check_ssm_parameters
from localcloud.stack.support import (
    _inert_properties,
    unsupported_properties,
    unsupported_resources,
)
from localcloud.stack.template import load_template, localize, override_environment, sam_transform

CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]
_UNRESOLVED = re.compile(r"\$\{[A-Za-z0-9_.:]+\}")


class _MotoLogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(_RUN_TIME_WARNINGS):  # the state runs, and fails, when entered
            LOG.info("moto: %s", message)
        else:
            self.messages.append(message)


# moto's warnings about what happens when an execution runs, not about the deploy: a task of a
# service outside the local cloud's scope is called through moto's client for it when the
# state is entered, and fails there as that service answers (AWS would deploy it too).
_RUN_TIME_WARNINGS = ("Unsupported Optimised service integration",)


def deploy_patch_set(*, speedups: bool | None = None) -> PatchSet:
    """The patches installed around ``create_stack`` (stack/patches.py, and stack/speedups.py
    when speedups are on), minus those named in ``LOCALCLOUD_WITHOUT``."""
    speedups = speedups_enabled() if speedups is None else speedups
    without = without_from_environment()
    chosen = [*patches.PATCHES, *(speedup_patches.PATCHES if speedups else [])]
    return PatchSet(p for p in chosen if p.name not in without)


def _create_stack(
    clients: DeployClients,
    stack_name: str,
    body: str,
    parameters: dict[str, str],
    *,
    runtime: Runtime,
) -> None:
    cfn = clients("cloudformation")
    report = runtime.deploy_report
    report.clear()
    patches = deploy_patch_set()
    capture = _MotoLogCapture()  # e.g. a GetAtt moto cannot resolve: the property is dropped
    logging.getLogger("moto").addHandler(capture)
    error: Exception | None = None
    try:
        patches.install(runtime)
        cfn.create_stack(
            StackName=stack_name,
            TemplateBody=body,
            Parameters=[
                {"ParameterKey": k, "ParameterValue": str(v)} for k, v in parameters.items()
            ],
            Capabilities=CAPABILITIES,
        )
        _apply_ignored_properties(report.created, clients)  # layers resolve through the patches
    except StackDeployError:
        raise
    except Exception as exc:  # moto raises from the failing resource instead of CREATE_FAILED
        error = exc
    finally:
        patches.uninstall()
        logging.getLogger("moto").removeHandler(capture)
    status = None
    if error is None:
        status = cfn.describe_stacks(StackName=stack_name)["Stacks"][0]["StackStatus"]
    if error is not None or status != "CREATE_COMPLETE" or capture.messages:
        head = f"{type(error).__name__}: {error}" if error else f"status {status}"
        lines = [f"stack {stack_name}: {head}"]
        if report.failures:
            lid, rtype, reason = report.failures[0]
            lines.append(f"  failed resource: {lid} ({rtype}): {reason}")
            lines += [f"  then: {lid} ({rtype}) failed" for lid, rtype, _ in report.failures[1:]]
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


class _Artifacts:
    """Uploads a stand-in zip per local code directory into a stack artifact bucket."""

    def __init__(self, stack_name: str, clients: DeployClients) -> None:
        self.clients, self.region, self.prefix = clients, clients.region, stack_name
        self.s3 = clients("s3")
        name = re.sub(r"[^a-z0-9-]", "-", stack_name.lower())[:40].strip("-") or "stack"
        self.bucket = f"{name}-local-artifacts"
        self.uploaded: dict[Path, dict[str, str]] = {}

    def __call__(self, path: Path) -> dict[str, str]:
        if path not in self.uploaded:
            if not self.uploaded:
                where = {"LocationConstraint": self.region}
                extra = {} if self.region == "us-east-1" else {"CreateBucketConfiguration": where}
                with suppress(self.s3.exceptions.BucketAlreadyOwnedByYou):
                    self.s3.create_bucket(Bucket=self.bucket, **extra)
            key = f"{self.prefix}/{len(self.uploaded)}-{path.name or 'code'}.zip"
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=stand_in_zip(path))
            self.uploaded[path] = {"Bucket": self.bucket, "Key": key}
        return self.uploaded[path]


def _prepare(
    path: Path,
    parameters: dict[str, str],
    upload: _Artifacts,
    environment: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Localized, transformed and checked: what create_stack receives (``environment``: the
    functions' variables overridden as ``sam local invoke --env-vars`` does)."""
    return prepare_source(
        load_template(path), path.parent, path.name, parameters, upload, environment=environment
    )


def prepare_source(
    template: dict[str, Any],
    base_dir: Path,
    name: str,
    parameters: dict[str, str],
    upload: _Artifacts,
    *,
    environment: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``_prepare`` of a parsed template (``name`` in messages; local paths under
    ``base_dir``), also for a template given to CloudFormation's API."""
    source = localize(template, base_dir, upload)
    try:
        transformed = sam_transform(source, parameters, region=upload.region)
    except Exception as exc:  # samtranslator's InvalidDocumentException lists every problem
        raise StackDeployError(f"SAM transform of {name} failed: {exc}") from exc
    override_environment(transformed, environment or {})
    _check_references(transformed)
    check_circular_dependencies(transformed)
    unsupported = unsupported_resources(transformed)
    if unsupported:
        raise UnsupportedResourceError(unsupported)
    dropped = unsupported_properties(transformed)
    if dropped:
        raise UnsupportedPropertyError(dropped)
    inert = _inert_properties(transformed)
    if inert:
        LOG.info("no local effect (accepted): %s", ", ".join(inert))
    _check_ssm_parameters(transformed, parameters, upload.clients)
    return transformed


_PSEUDO = {"AWS::AccountId", "AWS::NotificationARNs", "AWS::NoValue", "AWS::Partition",
           "AWS::Region", "AWS::StackId", "AWS::StackName", "AWS::URLSuffix"}  # fmt: skip


def _check_references(template: dict[str, Any]) -> None:
    """A Ref or Fn::GetAtt of nothing the template declares is refused as CloudFormation
    refuses it ("Unresolved resource dependencies"), not left to fail inside moto."""
    names = set(template.get("Resources") or {}) | set(template.get("Parameters") or {}) | _PSEUDO
    for section in ("Resources", "Outputs"):
        missing = references(template.get(section) or {}, sub=False) - names
        if missing:
            raise StackDeployError(
                f"Template format error: Unresolved resource dependencies "
                f"[{', '.join(sorted(missing))}] in the {section} block of the template"
            )


def _create(
    clients: DeployClients,
    stack_name: str,
    transformed: dict[str, Any],
    parameters: dict[str, str],
    runtime: Runtime,
) -> snapshot.Recorded:
    """create_stack, then what it made checked as AWS would refuse it."""
    region = clients.region
    with custom_resources.managed_policies_meanwhile(  # a custom resource invokes a function
        runtime, region, stack_name, lambda physical: _managed_policies(transformed, physical)
    ):
        _create_stack(clients, stack_name, json.dumps(transformed), parameters, runtime=runtime)
    cfn = clients("cloudformation")
    described = cfn.describe_stacks(StackName=stack_name)["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
    missing = sorted(set(transformed.get("Outputs") or {}) - set(outputs))
    if missing:
        raise StackDeployError(f"stack {stack_name}: outputs moto left unresolved: {missing}")
    resources, types = _physical_resources(cfn, stack_name)
    _check_state_machines(clients("stepfunctions"), resources, types)

    # moto's CloudFormation drops ManagedPolicyArns: the authorizer reads them from here
    managed = _managed_policies(transformed, resources)
    _check_condition_keys(runtime, managed, region)
    _check_log_delivery(runtime, resources, types, clients)
    return snapshot.Recorded(
        outputs, resources, types, managed, list(runtime.deploy_report.created)
    )


def deploy(
    template: Path,
    *,
    stack_name: str = "local",
    region: str = "us-east-1",
    parameters: dict[str, str] | None = None,
    runtime: Runtime | None = None,
    snapshots: bool = False,
    environment: dict[str, Any] | None = None,
) -> DeployedStack:
    """Deploy ``template`` into the active moto mock (see the module docstring). The
    functions are registered in ``runtime.handlers`` (features/lambda_processes.py); the
    deploy-time patches (``deploy_patch_set``) are installed for it while ``create_stack`` runs.

    ``snapshots``: a mock that holds only what LocalCloud puts there before each deploy may
    get a copy of this process's first deploy of the same stack (stack/snapshot.py)."""
    template = Path(template).resolve()
    parameters = dict(parameters or {})
    # boto3's default session: its loader caches service models (a new Session costs ~0.3 s);
    # each service's client is made once per deploy, when first needed.
    clients = DeployClients(region)
    runtime = Runtime() if runtime is None else runtime
    digest = None
    if snapshots and snapshot.enabled() and not environment:
        names, iam_on = sorted(p.name for p in deploy_patch_set()), runtime.authorizer.enabled
        digest = snapshot.key(
            snapshot.sources(template), parameters, stack_name, region, names, iam_on
        )
    recorded = snapshot.restore(digest) if digest else None
    restored = recorded is not None
    if recorded is None:
        transformed = _prepare(template, parameters, _Artifacts(stack_name, clients), environment)
        recorded = _create(clients, stack_name, transformed, parameters, runtime)
        if digest and not custom_resources.present(recorded.types):  # providers act outside moto
            snapshot.record(digest, recorded)
    else:
        runtime.deploy_report.clear()
        runtime.deploy_report.created.extend(recorded.created)
        runtime.authorizer.managed.update(recorded.managed)
    resources, types = recorded.resources, recorded.types
    functions = {lid: resources[lid] for lid, t in types.items() if t == "AWS::Lambda::Function"}
    return custom_resources.stack_type(types)(  # with custom resources: deleted on stop
        stack_name, region, recorded.outputs, resources, functions, types, restored
    )


def _check_condition_keys(
    runtime: Runtime, managed: dict[str, tuple[str, ...]], region: str
) -> None:
    """The local cloud's IAM evaluates every policy; a condition key it never supplies (or an
    operator it lacks) would decide wrongly, so the deploy refuses it by name."""
    authorizer = runtime.authorizer
    authorizer.managed.update(managed)
    if not authorizer.enabled:
        return
    unknown = authorizer.unknown_keys(region)
    if unknown:
        listed = "; ".join(f"{p}: {', '.join(sorted(k))}" for p, k in sorted(unknown.items()))
        raise StackDeployError(
            f"policy conditions the local cloud cannot evaluate: {listed}. It refuses them "
            f"rather than allow or deny by guess; {IAM_VARIABLE}=off deploys without IAM."
        )


# What Step Functions does with the state machine's role when it is created with a CloudWatch
# Logs destination (CloudWatch Logs User Guide, "Enabling logging from AWS services": the
# log delivery, and the log group's resource policy).
LOG_DELIVERY_ACTIONS = (
    "logs:CreateLogDelivery",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
)


def _check_log_delivery(
    runtime: Runtime, resources: dict[str, str], types: dict[str, str], clients: DeployClients
) -> None:
    """A state machine with a log destination whose role may not set up the delivery fails to
    create, as CloudFormation reports it on AWS."""
    if not runtime.authorizer.enabled:
        return
    sfn = clients("stepfunctions")
    for logical_id, kind in sorted(types.items()):
        if kind != "AWS::StepFunctions::StateMachine":
            continue
        described = sfn.describe_state_machine(stateMachineArn=resources[logical_id])
        if not (described.get("loggingConfiguration") or {}).get("destinations"):
            continue
        caller = iam.role(described["roleArn"], "states")
        for action in LOG_DELIVERY_ACTIONS:
            allowed = runtime.authorizer.check(caller, Need(action, "*"), clients.region, True)
            if not allowed.allowed:
                raise StackDeployError(
                    f"{logical_id} (AWS::StepFunctions::StateMachine) CREATE_FAILED: Resource "
                    'handler returned message: "The state machine IAM Role is not authorized '
                    "to access the Log Destination (Service: AWSStepFunctions; Status Code: "
                    '400; Error Code: AccessDeniedException)" (its role may not '
                    f"{action})"
                )


def _managed_policies(
    transformed: dict[str, Any], resources: dict[str, str]
) -> dict[str, tuple[str, ...]]:
    """Role name -> its ManagedPolicyArns (``Fn::Sub`` of the partition resolved; a ``Ref``
    or ``Fn::GetAtt [X, PolicyArn]`` of the template's own AWS::IAM::ManagedPolicy: its ARN)."""
    out: dict[str, tuple[str, ...]] = {}
    declared = transformed.get("Resources") or {}
    for logical_id, resource in declared.items():
        if resource.get("Type") != "AWS::IAM::Role" or logical_id not in resources:
            continue
        arns = []
        for item in (resource.get("Properties") or {}).get("ManagedPolicyArns") or []:
            arn = item["Fn::Sub"] if isinstance(item, dict) and "Fn::Sub" in item else item
            if isinstance(arn, dict):  # the template's own policy: Ref / GetAtt PolicyArn
                own = arn.get("Ref") or (arn.get("Fn::GetAtt") or [None])[0]
                kind = (declared.get(own) or {}).get("Type") if isinstance(own, str) else None
                arn = resources.get(own) if kind == "AWS::IAM::ManagedPolicy" else None
            if isinstance(arn, str):
                arns.append(arn.replace("${AWS::Partition}", "aws"))
        out[resources[logical_id]] = tuple(arns)
    return out
