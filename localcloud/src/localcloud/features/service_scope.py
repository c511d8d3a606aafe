"""Feature: a call to a service outside the local cloud's scope fails as AWS fails a call
without access to it, naming the service: never moto's canned answer, never a Python error.

The scope is :data:`SCOPE` (botocore signing names, which are also how a request's SigV4
credential scope names the service), of some only some operations (:data:`ONLY_OPERATIONS`);
localcloud/README.md "Scope" says the same in words. Any other request, from whoever makes
it, gets the error AWS gives an identity with no access to that service, the IAM wording
followed by why::

    AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/Fn-Role/local is not
    authorized to perform: comprehend:DetectSentiment because no identity-based policy allows
    the comprehend:DetectSentiment action (the local cloud does not run Amazon Comprehend:
    test this call against AWS)

The code is the service's own: its modeled ``AccessDeniedException`` (with its HTTP status)
for JSON protocols, EC2's ``UnauthorizedOperation``, ``AccessDenied`` 403 for the other
query and XML protocols. One patch for each path a call can take (their ``reason``s): every
botocore client call (after botocore's parameter validation, raised as the client's modeled
exception, ``ClientError`` where none is modeled; no request is made), a Step Functions
optimized integration (aws-sdk tasks go through the client:
``Comprehend.AccessDeniedException``, named by fixes/sfn_sdk_error_names.py), a rule target
features/delivery.py hands to moto (retried and dead-lettered as any failed delivery), and
the HTTP endpoint's requests (by the service of their SigV4 credential scope, in the
service's protocol).
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote
from xml.sax.saxutils import escape

import botocore.session
from botocore.client import BaseClient
from botocore.exceptions import ClientError
from botocore.validate import validate_parameters
from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
    CustomErrorName,
)
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEvent,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task import state_task_factory
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import (
    ResourceCondition,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (  # noqa: E501
    StateTaskServiceCallback,
)
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

from localcloud.features import delivery
from localcloud.iam.actions import Need, required
from localcloud.iam.credentials import access_key_of
from localcloud.iam.enforcement import CALLER, Authorizer, denial_message, error_parsed
from localcloud.iam.policy import Decision
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["ONLY_OPERATIONS", "PATCHES", "SCOPE", "SFN_INTEGRATIONS", "in_scope", "refusal"]

#: The services the local cloud runs, by botocore signing name (localcloud/README.md "Scope").
SCOPE: Mapping[str, str] = {
    "s3": "Amazon S3",
    "events": "Amazon EventBridge",
    "states": "AWS Step Functions",
    "lambda": "AWS Lambda",
    "dynamodb": "Amazon DynamoDB (and DynamoDB Streams)",
    "sqs": "Amazon SQS",
    "sns": "Amazon SNS",
    "scheduler": "Amazon EventBridge Scheduler",
    "iam": "AWS IAM",
    "sts": "AWS STS",
    "monitoring": "Amazon CloudWatch",
    "logs": "Amazon CloudWatch Logs",
    "kms": "AWS KMS",
    "ssm": "AWS Systems Manager (Parameter Store)",
    "cloudformation": "AWS CloudFormation",
    "glue": "AWS Glue (Data Catalog)",
}
#: Services of which only some operations are in the scope (parts of their names), and what
#: to call the rest: SSM is its Parameter Store (not Automation, Run Command, documents ...),
#: Glue its Data Catalog.
ONLY_OPERATIONS: Mapping[str, tuple[tuple[str, ...], str]] = {
    "ssm": (
        ("Parameter", "TagsForResource", "TagsToResource", "TagsFromResource"),
        "AWS Systems Manager beyond Parameter Store",
    ),
    # The Data Catalog's databases, tables and partitions (moto's); not crawlers, jobs ...
    "glue": (("Database", "Table", "Partition"), "AWS Glue beyond its Data Catalog"),
}
#: Step Functions optimized integrations in the scope (``arn:aws:states:::<name>:...``);
#: ``aws-sdk`` tasks are judged by the service they call.
SFN_INTEGRATIONS = frozenset({"aws-sdk", "lambda", "sqs", "sns", "states", "dynamodb", "events"})
# Optimized integration -> (botocore service, how Step Functions names its errors), where
# not (<name>, <Name>): glue, batch, athena
_INTEGRATION_SERVICES = {
    "bedrock": ("bedrock-runtime", "Bedrock"),
    "ecs": ("ecs", "ECS"),
    "apigateway": ("apigateway", "ApiGateway"),
    "mediaconvert": ("mediaconvert", "MediaConvert"),
    "codebuild": ("codebuild", "CodeBuild"),
    "eks": ("eks", "EKS"),
    "elasticmapreduce": ("emr", "ElasticMapReduce"),
    "emr-containers": ("emr-containers", "EMRContainers"),
    "emr-serverless": ("emr-serverless", "EMRServerless"),
    "databrew": ("databrew", "DataBrew"),
    "sagemaker": ("sagemaker", "SageMaker"),
}
_NOT_RUN = " (the local cloud does not run {name}: test this call against AWS)"


def outside(signing_name: str, operation: str) -> str | None:
    """The name of what the local cloud does not run for this call, or None (in the scope)."""
    partial = ONLY_OPERATIONS.get(signing_name)
    if partial is not None:
        parts, name = partial
        return None if any(part in operation for part in parts) else name
    return None if signing_name in SCOPE else ""


def in_scope(signing_name: str, operation: str) -> bool:
    return outside(signing_name, operation) is None


# (signing name, operation) -> the IAM action AWS checks, where it is not <prefix>:<Operation>
_ACTIONS = {
    ("bedrock", "Converse"): "bedrock:InvokeModel",
    ("bedrock", "ConverseStream"): "bedrock:InvokeModelWithResponseStream",
}


def _resource(prefix: str, operation: str, params: Mapping[str, Any], region: str) -> str:
    model = str(params.get("modelId") or "")
    if prefix == "bedrock" and model and operation.startswith(("InvokeModel", "Converse")):
        prefix = "" if model.startswith("arn:") else f"arn:aws:bedrock:{region}::foundation-model/"
        return prefix + model
    return "*"


def refusal(
    model: Any, operation: str, params: Mapping[str, Any], authorizer: Authorizer, region: str
) -> tuple[str, int, str]:
    """(code, HTTP status, message) AWS answers the caller without access to the service: a
    role session's (a function environment's, features/role_sessions.py), the thread's (a
    workflow, a rule target), else the administrator."""
    caller = CALLER.get() or authorizer.administrator
    signing_name = model.signing_name
    need = required(signing_name, operation, params, region, authorizer.account)[0]
    resource = _resource(need.action.split(":", 1)[0], operation, params, region)
    action = _ACTIONS.get((signing_name, operation), need.action)
    need = Need(action, resource, need.context)
    message = denial_message(caller, need, Decision(False, "no-identity-allow"))
    short = str(model.metadata.get("serviceAbbreviation") or "")  # Amazon EC2, not Elastic ...
    full = short if short.startswith(("Amazon ", "AWS ")) else model.metadata.get("serviceFullName")
    name = outside(signing_name, operation) or full or signing_name
    message += _NOT_RUN.format(name=name)
    protocol = model.metadata.get("protocol", "")
    if protocol == "ec2":
        message = f"You are not authorized to perform this operation. {message}"
        return "UnauthorizedOperation", 403, message
    if "AccessDeniedException" in model.shape_names:
        error = model.shape_for("AccessDeniedException").metadata.get("error", {})
        default = 403 if protocol == "rest-json" else 400
        return "AccessDeniedException", int(error.get("httpStatusCode", default)), message
    if protocol in ("json", "rest-json", "smithy-rpc-v2-cbor"):
        return "AccessDeniedException", 403 if protocol == "rest-json" else 400, message
    return "AccessDenied", 403, message


def _client_error(
    model: Any, operation: str, params: Mapping[str, Any], authorizer: Authorizer, region: str
) -> ClientError:
    code, status, message = refusal(model, operation, params, authorizer, region)
    return ClientError(error_parsed(code, status, message), operation)  # type: ignore[arg-type]


# ------------------------------------------------------------------ SDK calls
def _build_client_calls(rt: Runtime) -> Targets:
    make_api_call = BaseClient._make_api_call  # type: ignore[attr-defined]

    def refuse_outside(self: BaseClient, operation_name: str, api_params: Any) -> Any:
        model = self.meta.service_model
        if in_scope(model.signing_name, operation_name):
            return make_api_call(self, operation_name, api_params)
        if self.meta.config.parameter_validation:  # type: ignore[attr-defined]
            operation = model.operation_model(operation_name)  # botocore validates first
            validate_parameters(api_params, operation.input_shape)
        region = self.meta.region_name or "us-east-1"
        code, status, message = refusal(
            model, operation_name, api_params or {}, rt.authorizer, region
        )
        error: Any = self.exceptions.from_code(code)
        raise error(error_parsed(code, status, message), operation_name)

    return {(BaseClient, "_make_api_call"): refuse_outside}


# ------------------------------------------------------------------ Step Functions tasks
class OutOfScopeTask(StateTaskServiceCallback):
    """An optimized integration of a service the local cloud does not run: it fails as the
    service refuses the state machine's role, ``<Service>.AccessDeniedException``."""

    def __init__(self, authorizer: Any, moto_task: Any) -> None:
        patterns = {ResourceCondition.WaitForTaskToken, ResourceCondition.Sync}
        super().__init__(supported_integration_patterns=patterns | {ResourceCondition.Sync2})
        self._authorizer, self._moto_task = authorizer, moto_task

    def _validate_service_integration_is_supported(self) -> None:
        """The definition is validated as moto validates it (resource ARN, action)."""
        self._moto_task.resource = self.resource
        self._moto_task._validate_service_integration_is_supported()

    def _eval_service_task(
        self,
        env: Any,
        resource_runtime_part: Any,
        normalised_parameters: dict[str, Any],
        state_credentials: Any,
    ) -> None:
        api, action = self.resource.api_name, self.resource.api_action
        service = _INTEGRATION_SERVICES.get(api, (api, api))[0]
        model = botocore.session.get_session().get_service_model(service)
        operation = action[:1].upper() + action[1:]
        region = resource_runtime_part.region
        raise _client_error(model, operation, normalised_parameters, self._authorizer, region)

    def _from_error(self, env: Any, ex: Exception) -> FailureEvent:
        if not isinstance(ex, ClientError):
            return super()._from_error(env=env, ex=ex)  # type: ignore[no-any-return]
        api = self.resource.api_name
        service = _INTEGRATION_SERVICES.get(api, (api, api[:1].upper() + api[1:]))[1]
        error = f"{service}.{ex.response['Error']['Code']}"
        metadata = ex.response["ResponseMetadata"]
        cause = (
            f"{ex.response['Error']['Message']} (Service: {service}, Status Code: "
            f"{metadata['HTTPStatusCode']}, Request ID: {metadata['RequestId']})"
        )
        return FailureEvent(
            env=env,
            error_name=CustomErrorName(error_name=error),
            event_type=HistoryEventType.TaskFailed,
            event_details=EventDetails(
                taskFailedEventDetails=TaskFailedEventDetails(
                    resource=self._get_sfn_resource(),
                    resourceType=self._get_sfn_resource_type(),
                    error=error,
                    cause=cause,
                )
            ),
        )


def _build_sfn_tasks(rt: Runtime) -> Targets:
    task_for = state_task_factory.state_task_service_for

    def state_task_service_for(service_name: str) -> Any:
        task = task_for(service_name=service_name)  # moto refuses names it does not know
        return task if service_name in SFN_INTEGRATIONS else OutOfScopeTask(rt.authorizer, task)

    return {(state_task_factory, "state_task_service_for"): state_task_service_for}


# ------------------------------------------------------------------ EventBridge rule targets
# A built-in target (arn:aws:events:<region>:<account>:target/<name>): the EC2 call it makes
_BUILT_IN_TARGETS = {
    "target/create-snapshot": ("ec2", "CreateSnapshot"),
    "target/reboot-instance": ("ec2", "RebootInstances"),
    "target/stop-instance": ("ec2", "StopInstances"),
    "target/terminate-instance": ("ec2", "TerminateInstances"),
}
# A target's ARN service -> (botocore service, the call EventBridge makes to it)
_TARGET_CALLS = {
    "kinesis": ("kinesis", "PutRecord"),
    "firehose": ("firehose", "PutRecord"),
    "ecs": ("ecs", "RunTask"),
    "batch": ("batch", "SubmitJob"),
    "codebuild": ("codebuild", "StartBuild"),
    "codepipeline": ("codepipeline", "StartPipelineExecution"),
    "redshift": ("redshift-data", "ExecuteStatement"),
    "sagemaker": ("sagemaker", "StartPipelineExecution"),
    "inspector": ("inspector", "StartAssessmentRun"),
    "ssm": ("ssm", "SendCommand"),
}


def _target_call(arn: str) -> tuple[str, str] | None:
    parts = arn.split(":", 5)
    if len(parts) < 6:
        return None
    service, resource = parts[2], parts[5]
    if service == "events":
        return _BUILT_IN_TARGETS.get(resource)
    if service == "ssm" and resource.startswith("automation-definition/"):
        return "ssm", "StartAutomationExecution"
    return _TARGET_CALLS.get(service)


def _build_rule_targets(rt: Runtime) -> Targets:
    """features/delivery.py hands a rule's targets it does not call itself to moto's
    ``Rule.send_to_targets``, which ignores those of these services: they are refused."""
    send = delivery._orig_send_to_targets

    def send_to_targets(rule: Any, event: Any, transform_input: bool = True) -> Any:
        for target in rule.targets:
            call = _target_call(str(target["Arn"]))
            if call is None:
                continue
            service, operation = call
            model = botocore.session.get_session().get_service_model(service)
            region = str(target["Arn"]).split(":")[3] or "us-east-1"
            raise _client_error(model, operation, {}, rt.authorizer, region)
        return send(rule, event, transform_input=transform_input)

    return {(delivery, "_orig_send_to_targets"): send_to_targets}


# ------------------------------------------------------------------ the HTTP endpoint
@functools.cache
def _services_by_signing_name() -> dict[str, tuple[str, ...]]:
    """botocore's service names by signing name (a model's ``signingName``, else its
    ``endpointPrefix``, as ``ServiceModel.signing_name``), read once per process from the
    metadata at the head of each service's latest model file: 60 ms, where loading every
    model took 4 s."""
    found: dict[str, list[str]] = {}
    for service in sorted((Path(botocore.__file__).parent / "data").iterdir()):
        versions = sorted(service.glob("*/service-2.json*"))
        if not versions:
            continue
        opener: Any = gzip.open if versions[-1].suffix == ".gz" else open
        with opener(versions[-1], "rt", encoding="utf-8") as model:
            head = model.read(16384)
        try:
            start = head.index("{", head.index('"metadata"'))
            metadata = json.JSONDecoder().raw_decode(head, start)[0]
        except ValueError:  # not within the head: the whole model
            metadata = botocore.session.get_session().get_service_model(service.name).metadata
        name = metadata.get("signingName") or metadata.get("endpointPrefix")
        found.setdefault(str(name), []).append(service.name)
    return {signing_name: tuple(names) for signing_name, names in found.items()}


@functools.cache
def _models(signing_name: str) -> tuple[Any, ...]:
    """botocore's models of the services signed as ``signing_name``."""
    session = botocore.session.get_session()
    names = _services_by_signing_name().get(signing_name, ())
    return tuple(session.get_service_model(name) for name in names)


def _uri_pattern(uri: str) -> tuple[str, list[str]]:
    """A regex of an operation's requestUri (its labels as groups ``g0``, ``g1``, ...: a
    ``{name+}`` label spans slashes) and the labels' names."""
    parts, pattern = re.split(r"\{([^}]+)\}", uri), ""
    names: list[str] = []
    for index, part in enumerate(parts):
        if index % 2 == 0:
            pattern += re.escape(part)
        else:
            pattern += f"(?P<g{len(names)}>{'.+' if part.endswith('+') else '[^/]+'})"
            names.append(part.rstrip("+"))
    return pattern.rstrip("/") + "/?", names


def _rest_operation(
    models: tuple[Any, ...], method: str, path: str
) -> tuple[Any, str, dict[str, str]] | None:
    """The model and operation whose requestUri ``path`` matches best, with its path labels."""
    best: tuple[int, Any, str, dict[str, str]] | None = None
    for model in models:
        for name in model.operation_names:
            http = model.operation_model(name).http
            uri = str(http.get("requestUri", "/")).split("?", 1)[0]
            if http.get("method") != method:
                continue
            pattern, labels = _uri_pattern(uri)
            found = re.fullmatch(pattern, path)
            if found:
                score = len(re.sub(r"\{[^}]+\}", "", uri))
                if best is None or score > best[0]:
                    values = {label: unquote(found[f"g{i}"]) for i, label in enumerate(labels)}
                    best = (score, model, name, values)
    return best[1:] if best else None


def _identify(environ: dict[str, Any]) -> tuple[Any, str, str, dict[str, str]] | None:
    """(service model, operation, region, its path labels) of a request outside the scope,
    else None."""
    found = access_key_of(environ.get("HTTP_AUTHORIZATION", ""))
    if not found:
        return None
    _, region, signing_name = found
    if signing_name in SCOPE and signing_name not in ONLY_OPERATIONS:
        return None
    models = _models(signing_name)
    if not models:
        return None
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    match: tuple[Any, str, dict[str, str]] | None
    if target:
        prefix, _, operation = target.rpartition(".")
        model = next((m for m in models if m.metadata.get("targetPrefix") == prefix), models[0])
        match = model, operation, {}
    elif str(environ.get("CONTENT_TYPE", "")).startswith("application/x-www-form-urlencoded"):
        form = parse_qs(request_body(environ).decode()) or parse_qs(environ.get("QUERY_STRING", ""))
        model = next((m for m in models if m.metadata["protocol"] in ("query", "ec2")), models[0])
        match = model, (form.get("Action") or [""])[0], {}
    else:
        method, path = environ.get("REQUEST_METHOD", "GET"), environ.get("PATH_INFO", "/")
        match = _rest_operation(models, method, path)
    if match is None or in_scope(signing_name, match[1]):
        return None
    return match[0], match[1], region, match[2]


def request_body(environ: dict[str, Any]) -> bytes:
    """The request's body, read once and put back for moto."""
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    length = str(environ.get("CONTENT_LENGTH") or "").strip()
    data = stream.read(int(length)) if length.isdigit() else stream.read()
    environ["wsgi.input"] = io.BytesIO(data)
    return bytes(data)


def error_body(protocol: str, code: str, message: str, request_id: str) -> tuple[str, str]:
    """(content type, body) of an error in a JSON, EC2 or query/XML protocol."""
    if protocol in ("json", "rest-json"):
        return "application/x-amz-json-1.1", json.dumps({"__type": code, "message": message})
    error = f"<Code>{code}</Code><Message>{escape(message)}</Message>"
    if protocol == "ec2":
        body = (
            f"<Response><Errors><Error>{error}</Error></Errors>"
            f"<RequestID>{request_id}</RequestID></Response>"
        )
    else:
        body = (
            f"<ErrorResponse><Error><Type>Sender</Type>{error}</Error>"
            f"<RequestId>{request_id}</RequestId></ErrorResponse>"
        )
    return "text/xml", f'<?xml version="1.0" encoding="UTF-8"?>\n{body}'


def _build_http_requests(rt: Runtime) -> Targets:
    call = DomainDispatcherApplication.__call__

    def refuse_outside(
        self: DomainDispatcherApplication, environ: dict[str, Any], start_response: Any
    ) -> Any:
        found = _identify(environ)
        if found is None:
            return call(self, environ, start_response)
        model, operation, region, params = found
        code, status, message = refusal(model, operation, params, rt.authorizer, region)
        request_id = str(uuid.uuid4())
        protocol = model.metadata.get("protocol", "")
        content_type, body = error_body(protocol, code, message, request_id)
        headers = [
            ("Content-Type", content_type),
            ("x-amzn-RequestId", request_id),
            ("x-amzn-ErrorType", code),
        ]
        start_response(f"{status} Forbidden" if status == 403 else f"{status} Bad Request", headers)
        return [body.encode()]

    return {(DomainDispatcherApplication, "__call__"): refuse_outside}


PATCHES = [
    Patch(
        name="refuse-calls-outside-the-scope",
        kind=Kind.FEATURE,
        reason="An SDK call to a service outside the local cloud's scope (Bedrock, Comprehend, "
        "EC2, ...) fails as AWS fails a caller without access to it, naming the service "
        "(moto answers some with canned data, others with NotImplementedError).",
        test="localcloud/tests/test_service_scope.py::test_the_administrators_calls_are_refused",
        build=_build_client_calls,
    ),
    Patch(
        name="refuse-tasks-outside-the-scope",
        kind=Kind.FEATURE,
        reason="A Step Functions optimized integration of a service outside the scope "
        "(bedrock:invokeModel, ecs:runTask, ...) fails with <Service>.AccessDeniedException, "
        "which a Catch can handle (moto forwards it to a client without the method, or to "
        "its canned backend).",
        test="localcloud/tests/test_service_scope.py"
        "::test_a_bedrock_invoke_model_task_fails_into_its_catch",
        build=_build_sfn_tasks,
    ),
    Patch(
        name="refuse-rule-targets-outside-the-scope",
        kind=Kind.FEATURE,
        reason="An EventBridge rule target of a service outside the scope (an EC2 built-in "
        "target, Kinesis, ECS, ...) fails as the service refuses it, NO_PERMISSIONS naming "
        "the service (moto's send_to_targets ignores it and the delivery reads DELIVERED).",
        test="localcloud/tests/test_service_scope.py"
        "::test_a_rule_target_outside_the_scope_is_refused",
        build=_build_rule_targets,
        when="event_delivery",
    ),
    Patch(
        name="refuse-requests-outside-the-scope",
        kind=Kind.FEATURE,
        reason="The HTTP endpoint answers a request to a service outside the scope with the "
        "service's access-denied error, naming the service (moto: canned data or a 404).",
        test="localcloud/tests/test_service_scope.py"
        "::test_an_http_request_outside_the_scope_is_refused",
        build=_build_http_requests,
    ),
]
