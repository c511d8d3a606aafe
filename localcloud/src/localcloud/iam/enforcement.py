"""Every SDK call inside the local cloud is made by a principal and authorized as AWS would.

Who calls (:data:`CALLER`, a context variable; ``None`` is the administrator: tests, the
operator CLI, the HTTP endpoint's clients). A request signed with a role session's
credentials (``Authorizer.credentials``, iam/credentials.py: STS AssumeRole's, or issued for
a function environment) is that session's, over HTTP and in the process
(features/role_sessions.py), before any of these:

* a Lambda function calls with its environment's credentials: a session of its execution
  role (features/lambda_processes.py);
* a Step Functions execution, its service integrations, Map iterations and ItemReader /
  ResultWriter, runs as its state machine's role (``execution-runs-as-its-role`` below);
* an EventBridge rule target with a ``RoleArn`` is called with that role, others (SQS, SNS,
  Lambda targets, the rule's dead-letter queue) by ``events.amazonaws.com`` with
  ``aws:SourceArn`` = the rule (features/delivery.py); a schedule's target and its DLQ with
  the schedule's role (features/scheduler.py); an SQS event source mapping polls with the
  function's role (features/event_source_mappings.py); an alarm action publishes as
  ``cloudwatch.amazonaws.com`` (features/alarm_actions.py).

Threads inherit their starter's caller (``threads-inherit-the-caller``): a Parallel branch
or Map iteration runs as its execution.

How (``authorize-sdk-calls``, features/iam.py): a botocore ``before-call`` handler on every
client maps the operation to the actions and resources AWS checks (iam/actions.py), evaluates
them (iam/policy.py) against the caller's role policies (inline, and AWS managed ones with
moto's copy of their documents) and the resource's policy (bucket, queue, topic, Lambda
function, KMS key), and on a refusal returns the service's own error instead of sending the
request: S3 ``AccessDenied`` 403 (a HEAD request gets a bodiless 403), DynamoDB/KMS/Step
Functions ``AccessDeniedException`` 400, Lambda ``AccessDeniedException`` 403, SNS
``AuthorizationError`` 403, SQS ``AccessDenied`` 403, with the IAM message "User: <caller> is
not authorized to perform: <action> on resource: <arn> because ...". Implicit checks AWS makes:
publishing to an SNS topic encrypted with a KMS key needs ``kms:GenerateDataKey*`` and
``kms:Decrypt`` on it (SNS answers ``KMSAccessDenied``), and reading a missing S3 object without
``s3:ListBucket`` is a 403, not a 404.

``aws:SecureTransport``: features/iam.py ``secure_transport``. Every decision is kept
(``Authorizer.decisions``) for the least-privilege report.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse
from moto.iam.aws_managed_policies import aws_managed_policies_data

from localcloud.iam.actions import KNOWN_CONDITION_KEYS, Need, required
from localcloud.iam.credentials import CredentialsRegistry
from localcloud.iam.policy import (
    Decision,
    Policy,
    PolicyError,
    Principal,
    Request,
    evaluate,
    parse_policy,
    unknown_condition_keys,
)

__all__ = [
    "CALLER",
    "IAM_VARIABLE",
    "Authorizer",
    "Caller",
    "acting_as",
    "iam_enabled",
    "role",
    "service",
]

IAM_VARIABLE = "LOCALCLOUD_IAM"
ADMINISTRATOR = "LocalCloudAdministrator"
_ADMINISTRATOR_ACCESS = parse_policy(
    "aws-managed/AdministratorAccess",
    {"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]},
)


@functools.cache
def _aws_managed_documents() -> dict[str, Any]:
    """moto's copy of the AWS managed policies (1.5 MB of JSON: parsed once per process)."""
    return dict(json.loads(aws_managed_policies_data))


def iam_enabled() -> bool:
    """On unless ``LOCALCLOUD_IAM`` is off/0/false/no."""
    return os.environ.get(IAM_VARIABLE, "on").strip().lower() not in {"off", "0", "false", "no"}


@dataclass(frozen=True)
class Caller:
    principal: Principal
    context: Mapping[str, Any] = field(default_factory=dict)  # aws:SourceArn, ...


CALLER: ContextVar[Caller | None] = ContextVar("localcloud_caller", default=None)


@contextmanager
def acting_as(caller: Caller | None) -> Iterator[None]:
    """Run the block as ``caller`` (None: the administrator, never checked)."""
    token = CALLER.set(caller)
    try:
        yield
    finally:
        CALLER.reset(token)


def role(arn: str, session: str = "local") -> Caller:
    return Caller(Principal(arn=arn, session=session))


def find_role(account: str, arn_or_name: str) -> Any:
    """moto's role of this name (the last part of an ARN), or None."""
    from moto.iam.models import iam_backends

    name = arn_or_name.rsplit("/", 1)[-1]
    return next((r for r in iam_backends[account]["aws"].roles.values() if r.name == name), None)


def service(name: str, source_arn: str, account: str) -> Caller:
    """An AWS service acting for one of the account's resources (``source_arn``)."""
    context = {
        "aws:SourceArn": source_arn,
        "aws:SourceAccount": account,
        "aws:SourceOwner": account,
    }
    return Caller(Principal(service=name), context)


# ------------------------------------------------------------------ errors, as each service answers
# signing name -> (error code, HTTP status)
_DENIED = {
    "s3": ("AccessDenied", 403),
    "sns": ("AuthorizationError", 403),
    "sqs": ("AccessDenied", 403),
    "lambda": ("AccessDeniedException", 403),
    "sts": ("AccessDenied", 403),
}
_WHY = {
    "explicit-deny-identity": "with an explicit deny in an identity-based policy",
    "explicit-deny-resource": "with an explicit deny in a resource-based policy",
    "no-identity-allow": "because no identity-based policy allows the {action} action",
    "no-resource-allow": "because no resource-based policy allows the {action} action",
    "key-policy": "because no resource-based policy allows the {action} action",
}


def denial_message(caller: Caller, need: Need, decision: Decision) -> str:
    """The IAM wording; S3 quotes the resource, SNS writes ``SNS:Publish``, SQS lower-cases
    the action (as published: tests/conformance/samples/access-denied-*)."""
    action, resource = need.action, need.resource
    prefix, _, name = action.partition(":")
    if prefix == "sns":
        action = f"SNS:{name}"
    elif prefix == "sqs":
        action = action.lower()
    elif prefix == "s3":
        resource = f'"{resource}"'
    where = f" on resource: {resource}" if need.resource != "*" else ""
    # STS gives no reason for AssumeRole (a role's trust is not disclosed)
    why = "" if action == "sts:AssumeRole" else " " + _WHY[decision.reason].format(action=action)
    return f"User: {caller.principal.caller} is not authorized to perform: {action}{where}{why}"


def error_parsed(code: str, status: int, message: str) -> dict[str, Any]:
    """An error response as botocore parses it."""
    metadata = {"RequestId": str(uuid.uuid4()), "HTTPStatusCode": status, "HTTPHeaders": {}}
    return {"Error": {"Code": code, "Message": message}, "ResponseMetadata": metadata}


def _error(
    code: str, status: int, message: str, *, head: bool = False
) -> tuple[Any, dict[str, Any]]:
    if head:  # a HEAD response has no body: botocore reports the status
        code, message = str(status), "Forbidden"
    response = AWSResponse("https://localcloud.invalid", status, {}, None)
    return response, error_parsed(code, status, message)


# ------------------------------------------------------------------ the authorizer
class Authorizer:
    """Policies of one cloud (read from moto's backends) and the decisions made with them."""

    def __init__(self, account: str) -> None:
        self.account = account
        self.enabled = True
        #: role name -> AWS managed policy ARNs the template attaches (moto's CloudFormation
        #: drops ManagedPolicyArns; the documents come from moto's copy)
        self.managed: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()
        self._seen: dict[tuple[Any, ...], dict[str, Any]] = {}
        self._parsed: dict[tuple[str, str], Policy] = {}
        self._identity: dict[str, tuple[Any, list[Policy]]] = {}
        self._objects: dict[str, tuple[Any, int, Policy]] = {}
        #: the role sessions' temporary credentials (STS AssumeRole, a function's environment)
        self.credentials = CredentialsRegistry()

    def caller_of(self, access_key_id: str | None) -> Caller | None:
        """The role session whose credentials these are, or None for a key not issued here."""
        session = self.credentials.session(access_key_id)
        return role(session.role_arn, session.session_name) if session else None

    # --- policies ---------------------------------------------------------------------
    def _parse(self, policy_id: str, document: Any) -> Policy:
        """``parse_policy``, once per document: policies are read again on every call, so a
        change (PutBucketPolicy, PutRolePolicy, ...) applies at once. A parsed document (an
        SNS topic's, changed in place by AddPermission) is known by identity and size."""
        if not isinstance(document, str):  # a document, or a list of statements
            statements = document if isinstance(document, list) else document.get("Statement")
            seen = self._objects.get(policy_id)
            size = len(statements or ())
            if seen is not None and seen[0] is document and seen[1] == size:
                return seen[2]
            policy = parse_policy(policy_id, {"Statement": statements or []})
            self._objects[policy_id] = (document, size, policy)
            return policy
        parsed = self._parsed.get((policy_id, document))
        if parsed is None:
            parsed = self._parsed[(policy_id, document)] = parse_policy(policy_id, document)
        return parsed

    @property
    def administrator(self) -> Caller:
        """The tests, the operator CLI and clients of the HTTP endpoint: an identity allowed
        everything, still subject to resource policies' explicit denies and key policies."""
        return role(f"arn:aws:iam::{self.account}:role/{ADMINISTRATOR}", "local")

    def identity_policies(self, role_arn: str) -> list[Policy]:
        if role_arn == self.administrator.principal.arn:
            return [_ADMINISTRATOR_ACCESS]
        found = find_role(self.account, role_arn)
        if found is None:
            return []
        name = found.name
        # The same documents as last time (moto replaces a document to change it): reuse.
        signature = (
            id(found),
            tuple(map(id, found.policies.values())),
            tuple(found.managed_policies),
            self.managed.get(name, ()),
        )
        cached = self._identity.get(role_arn)
        if cached is not None and cached[0] == signature:
            return cached[1]
        policies = [self._parse(f"role/{name}/{p}", doc) for p, doc in found.policies.items()]
        for arn, managed in found.managed_policies.items():  # a customer managed policy:
            document = next(v.document for v in managed.versions if v.is_default)  # its default
            policies.append(self._parse(f"managed/{arn.rsplit('/', 1)[-1]}", document))
        for arn in self.managed.get(name, ()):
            document = self._managed_document(arn)
            if document is not None:
                policies.append(self._parse(f"aws-managed/{arn.rsplit('/', 1)[-1]}", document))
        self._identity[role_arn] = (signature, policies)
        return policies

    def _managed_document(self, arn: str) -> Any:
        """An AWS managed policy's document (moto's copy), else a customer managed policy's
        default version (the template's own, by its ARN)."""
        from moto.iam.models import iam_backends

        if ":iam::aws:policy/" in arn:
            entry = _aws_managed_documents().get(arn.rsplit("/", 1)[-1])
            if entry:
                return entry["Document"]
        managed = iam_backends[self.account]["aws"].managed_policies.get(arn)
        versions = getattr(managed, "versions", None) or ()
        return next((v.document for v in versions if v.is_default), None)

    def resource_policy(self, need: Need, region: str) -> tuple[Policy | None, bool]:
        """The resource's policy, and whether it must allow as a KMS key policy does (a key's,
        and a role's trust policy for AssumeRole)."""
        parts = need.resource.split(":", 5)
        if len(parts) < 6:
            return None, False
        svc, region, name = parts[2], parts[3] or region, parts[5]
        try:
            if svc == "iam" and need.action.lower() == "sts:assumerole":
                return self._trust_policy(name), True
            if svc == "kms":
                key = self._kms_key(name, region)
                return (self._parse(f"key/{key.id}", key.policy) if key else None), True
            policy_id, document = self._resource_document(svc, name, need.resource, region)
        except Exception:  # no such resource (moto's own errors): no policy
            return None, False
        return (self._parse(policy_id, document) if document else None), False

    def _resource_document(self, svc: str, name: str, arn: str, region: str) -> tuple[str, Any]:
        """(policy id, policy or None) of a bucket, queue, topic or function."""
        from moto.awslambda.utils import get_backend
        from moto.s3.models import s3_backends
        from moto.sns.models import sns_backends
        from moto.sqs.models import sqs_backends

        if svc == "s3":
            bucket = name.split("/", 1)[0]
            raw = getattr(s3_backends[self.account]["aws"].buckets.get(bucket), "policy", None)
            return f"bucket/{bucket}", raw.decode() if isinstance(raw, bytes) else raw
        if svc == "sqs":
            queue = sqs_backends[self.account][region].queues.get(name)
            return f"queue/{name}", getattr(queue, "policy", None)
        if svc == "sns":
            topic = sns_backends[self.account][region].topics.get(arn)
            return f"topic/{name}", getattr(topic, "_policy_json", None)
        if svc == "lambda":
            function = name.split(":")[1] if ":" in name else name
            fn = get_backend(self.account, region).get_function(function)
            return f"function/{function}", fn.policy.statements if fn.policy else None
        return "", None

    def _trust_policy(self, resource: str) -> Policy | None:
        """A role's trust policy (``role/<path/>name``): who may assume it."""
        found = find_role(self.account, resource)
        document = found.assume_role_policy_document if found is not None else None
        return self._parse(f"trust/{found.name}", document) if document else None

    def _kms_key(self, resource: str, region: str) -> Any:
        """The KMS key of an ARN, ``key/<id>``, ``alias/<name>`` or a bare id; None if none."""
        from moto.kms.models import kms_backends

        backend = kms_backends[self.account][region]
        resource = resource.split(":", 5)[-1]
        key_id = resource.split("/", 1)[-1]
        if resource.startswith("alias/"):
            key_id = backend.get_key_id_from_alias(resource) or ""
        return backend.keys.get(key_id)

    # --- decisions --------------------------------------------------------------------
    def check(self, caller: Caller, need: Need, region: str, secure: bool) -> Decision:
        principal = {
            "aws:PrincipalArn": caller.principal.arn,
            "aws:PrincipalServiceName": caller.principal.service,
        }
        context = {
            "aws:SecureTransport": "true" if secure else "false",
            "aws:PrincipalAccount": self.account,
            **{key: value for key, value in principal.items() if value},
            **caller.context,
            **need.context,
        }
        request = Request(caller.principal, need.action, need.resource, context)
        identity = self.identity_policies(caller.principal.arn) if caller.principal.arn else []
        resource, is_key = self.resource_policy(need, region)
        try:
            decision = evaluate(request, identity, resource, key_policy=is_key)
        except PolicyError as exc:  # never a silent allow
            decision = Decision(False, "no-identity-allow", denied_by=(f"unevaluable: {exc}",))
        self._record(request, decision)
        return decision

    def _record(self, request: Request, decision: Decision) -> None:
        if request.principal.arn.endswith(f":role/{ADMINISTRATOR}"):
            return  # the report is about the template's principals
        context = {k: v for k, v in sorted(request.context.items()) if k != "aws:PrincipalAccount"}
        key = (
            str(request.principal),
            request.action,
            request.resource,
            tuple((k, str(v)) for k, v in context.items()),
        )
        with self._lock:
            entry = self._seen.get(key)
            if entry is None:
                self._seen[key] = {
                    "principal": request.principal.arn or request.principal.service,
                    "action": request.action,
                    "resource": request.resource,
                    "context": context,
                    "allowed": decision.allowed,
                    "reason": decision.reason,
                    "allowed_by": list(decision.allowed_by),
                    "denied_by": list(decision.denied_by),
                    "count": 1,
                }
            else:
                entry["count"] += 1

    @property
    def decisions(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(entry) for entry in self._seen.values()]

    def all_policies(self, region: str) -> list[Policy]:
        """Every role's policies and every bucket, queue, topic, function and key policy."""
        from moto.awslambda.utils import get_backend
        from moto.iam.models import iam_backends
        from moto.kms.models import kms_backends
        from moto.s3.models import s3_backends
        from moto.sns.models import sns_backends
        from moto.sqs.models import sqs_backends

        policies: list[Policy] = []
        for r in iam_backends[self.account]["aws"].roles.values():
            policies.extend(self.identity_policies(r.arn))
        arns = [f"arn:aws:s3:::{name}" for name in s3_backends[self.account]["aws"].buckets]
        arns += [q.queue_arn for q in sqs_backends[self.account][region].queues.values()]
        arns += list(sns_backends[self.account][region].topics)
        arns += [f.function_arn for f in get_backend(self.account, region).list_functions()]
        arns += [k.arn for k in kms_backends[self.account][region].keys.values()]
        for arn in arns:
            policy, _ = self.resource_policy(Need("", arn), region)
            if policy is not None:
                policies.append(policy)
        return policies

    def unknown_keys(self, region: str) -> dict[str, set[str]]:
        """Condition keys, per policy, that the local cloud never supplies (deploy refuses)."""
        found: dict[str, set[str]] = {}
        for policy in self.all_policies(region):
            try:
                unknown = unknown_condition_keys(policy, KNOWN_CONDITION_KEYS)
            except PolicyError as exc:
                unknown = {str(exc)}
            if unknown:
                found[policy.id] = unknown
        return found

    # --- one SDK call -----------------------------------------------------------------
    def authorize(
        self,
        caller: Caller,
        signing_name: str,
        operation: str,
        params: Mapping[str, Any],
        *,
        region: str,
        secure: bool,
    ) -> tuple[Any, dict[str, Any]] | None:
        """None when AWS would let the call through, else the error response it would give."""
        code, status = _DENIED.get(signing_name, ("AccessDeniedException", 400))
        head = operation.startswith("Head")
        for need in required(signing_name, operation, params, region, self.account):
            if need.action.startswith("kms:") and ":alias/" in need.resource:
                key = self._kms_key(need.resource, region)  # policies name keys
                need = Need(need.action, key.arn, need.context) if key else need  # noqa: PLW2901
            decision = self.check(caller, need, region, secure)
            if not decision.allowed:
                return _error(code, status, denial_message(caller, need, decision), head=head)
        if signing_name == "sns" and operation in ("Publish", "PublishBatch"):
            return self._topic_key(
                caller, str(params.get("TopicArn") or params.get("TargetArn")), region, secure
            )
        if signing_name == "s3":
            return self._object(caller, operation, params, region, secure)
        return None

    def _refusal(
        self, caller: Caller, need: Need, region: str, secure: bool, *, head: bool = False
    ) -> tuple[Any, dict[str, Any]] | None:
        """None when ``need`` is allowed, else S3's AccessDenied."""
        decision = self.check(caller, need, region, secure)
        if decision.allowed:
            return None
        return _error("AccessDenied", 403, denial_message(caller, need, decision), head=head)

    def _object(
        self, caller: Caller, operation: str, params: Mapping[str, Any], region: str, secure: bool
    ) -> tuple[Any, dict[str, Any]] | None:
        """What S3 checks besides the call's own action: without s3:ListBucket, it answers 403
        for a key that does not exist (not 404); SSE-KMS: it decrypts a read with
        ``kms:Decrypt`` and encrypts a write with ``kms:GenerateDataKey`` on the object's key,
        as the caller (S3 answers AccessDenied)."""
        from moto.s3.models import FakeDeleteMarker, s3_backends

        bucket = s3_backends[self.account]["aws"].buckets.get(str(params.get("Bucket")))
        if bucket is None:
            return None
        if operation in ("PutObject", "CreateMultipartUpload", "CopyObject"):
            action, key_id = "kms:GenerateDataKey", params.get("SSEKMSKeyId")
        elif operation in ("GetObject", "HeadObject"):
            wanted = params.get("VersionId")
            versions = bucket.keys.getlist(str(params.get("Key")), [])
            found = [v for v in versions if not wanted or str(v.version_id) == str(wanted)]
            obj = found[-1] if found else None
            # the current version: a delete marker reads as a missing key
            if obj is None or (not wanted and isinstance(obj, FakeDeleteMarker)):
                prefix = {"s3:prefix": str(params.get("Key"))}
                need = Need("s3:ListBucket", f"arn:aws:s3:::{bucket.name}", prefix)
                refused = self._refusal(
                    caller, need, region, secure, head=operation == "HeadObject"
                )
                if refused is not None:
                    return refused
            if operation == "HeadObject" or getattr(obj, "encryption", None) != "aws:kms":
                return None  # (a delete marker has no encryption)
            action, key_id = "kms:Decrypt", getattr(obj, "kms_key_id", None)
        else:
            return None
        key = self._kms_key(str(key_id or ""), region)
        if key is None:
            return None
        via = {"kms:ViaService": f"s3.{region}.amazonaws.com", "kms:CallerAccount": self.account}
        return self._refusal(caller, Need(action, key.arn, via), region, secure)

    def _topic_key(
        self, caller: Caller, topic_arn: str, region: str, secure: bool
    ) -> tuple[Any, dict[str, Any]] | None:
        """SNS encrypts with the topic's key on the publisher's behalf."""
        from moto.sns.models import sns_backends

        topic = sns_backends[self.account][region].topics.get(topic_arn)
        key = self._kms_key(getattr(topic, "kms_master_key_id", None) or "", region)
        if key is None:
            return None
        via = {"kms:ViaService": f"sns.{region}.amazonaws.com", "kms:CallerAccount": self.account}
        for action in ("kms:GenerateDataKey", "kms:Decrypt"):
            if not self.check(caller, Need(action, key.arn, via), region, secure).allowed:
                message = (  # as SNS reports it (tests/conformance/samples/access-denied-*)
                    "null (Service: AWSKMS; Status Code: 400; Error Code: AccessDeniedException; "
                    f"Request ID: {uuid.uuid4()}; Proxy: null)"
                )
                return _error("KMSAccessDenied", 400, message)
        return None
