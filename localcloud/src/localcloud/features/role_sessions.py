"""Feature: role sessions are known by their credentials, as STS and IAM know them.

A request signed with a role session's temporary credentials (the cloud authorizer's
:class:`~localcloud.iam.credentials.CredentialsRegistry`: a function environment's, and those
STS AssumeRole answers with) is that session's, whichever process or thread sends it: IAM
judges it as ``arn:aws:sts::<account>:assumed-role/<role>/<session>`` and GetCallerIdentity
answers that ARN:

* ``sts-role-session-credentials`` (moto's STS backend; AssumeRoleWithWebIdentity is made
  with AssumeRole). AssumeRole itself is authorized with the role's trust policy
  (iam/actions.py, ``Authorizer.resource_policy``): a principal it does not trust gets
  ``AccessDenied`` "User: ... is not authorized to perform: sts:AssumeRole on resource: <role
  ARN>";
* over HTTP, :class:`SignedRequests`; in the process (the mock, no HTTP),
  ``authorize-sdk-calls`` (features/iam.py) judges a client signing with registered
  credentials as their session, before the thread's caller.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from moto.core import routing
from moto.core.parse import PROTOCOL_PARSERS
from moto.core.request import Request as MotoRequest
from moto.core.request import determine_request_protocol
from moto.core.utils import get_service_model
from moto.sts.models import STSBackend
from werkzeug.wrappers import Response

from localcloud.features.service_scope import SCOPE, error_body, in_scope, request_body
from localcloud.iam.credentials import access_key_of
from localcloud.iam.enforcement import Authorizer, Caller, acting_as, find_role
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "SignedRequests", "identify"]

ADMIN_PREFIX = "/_localcloud/"


# ------------------------------------------------------------------ STS
def _build_sts_sessions(rt: Runtime) -> Targets:
    assume_role = STSBackend.assume_role
    caller_identity = STSBackend.get_caller_identity
    registry = rt.authorizer.credentials

    def assume_and_register(self: STSBackend, **kwargs: Any) -> Any:
        role = assume_role(self, **kwargs)
        credentials = {
            "AccessKeyId": role.access_key_id,
            "SecretAccessKey": role.secret_access_key,
            "SessionToken": role.session_token,
            "Expiration": role.expiration,
        }
        registry.register(credentials, role.role_arn, role.session_name)
        return role

    def get_caller_identity(
        self: STSBackend, access_key_id: str, region: str
    ) -> tuple[str, str, str]:
        session = registry.session(access_key_id)
        if session is None:
            return caller_identity(self, access_key_id, region)
        principal = session.principal
        found = find_role(principal.account, session.role_arn)
        role_id = found.id if found is not None else "AROA" + principal.account
        return f"{role_id}:{session.session_name}", principal.caller, principal.account

    return {
        (STSBackend, "assume_role"): assume_and_register,
        (STSBackend, "get_caller_identity"): get_caller_identity,
    }


# ------------------------------------------------------------------ HTTP requests
# a credential scope's service (a signing name in the scope) -> botocore's services of it
_SERVICES = {
    "states": ("stepfunctions",),
    "monitoring": ("cloudwatch",),
    "dynamodb": ("dynamodb", "dynamodbstreams"),
}


def _service_name(signing_name: str, target: str) -> str:
    names = _SERVICES.get(signing_name, (signing_name,))
    if target and len(names) > 1:  # DynamoDB and DynamoDB Streams: by X-Amz-Target's prefix
        prefix = target.rpartition(".")[0]
        for name in names:
            if get_service_model(name).metadata.get("targetPrefix") == prefix:
                return name
    return names[0]


def identify(environ: dict[str, Any], signing_name: str) -> tuple[str, dict[str, Any], str] | None:
    """(operation, parameters as botocore names them, protocol) of an AWS request, by
    botocore's model of the service of its credential scope; None when the model does not
    match it."""
    target = str(environ.get("HTTP_X_AMZ_TARGET") or "")
    service = _service_name(signing_name, target)
    model = get_service_model(service)
    protocol = determine_request_protocol(model, environ.get("CONTENT_TYPE"))
    s3 = service == "s3"
    # S3's payload is the object: only DeleteObjects' is read (the keys it deletes)
    wanted = not s3 or "delete" in parse_qs(str(environ.get("QUERY_STRING") or ""), True)
    data = request_body(environ) if wanted else b""
    request = MotoRequest(environ)
    try:
        uri_params: dict[str, Any] = {}
        if target:
            operation = target.rpartition(".")[2]
        elif protocol in ("query", "ec2"):
            form = parse_qs(data.decode("utf-8", "replace"))
            operation = (form or parse_qs(request.query_string.decode())).get("Action", [""])[0]
        else:
            operation_model, uri_params = routing.get_service_router(service).match(request)
            operation = operation_model.name
        if operation not in model.operation_names:
            return None
        parser = PROTOCOL_PARSERS[protocol](model.operation_model(operation), map_type=dict)
        params = parser.parse(
            {
                "method": request.method,
                "values": request.args if s3 else request.values,
                "headers": request.headers,
                "body": data,
                "url_path": request.path,
                "url_params": uri_params,
            }
        )
        return operation, dict(params), protocol
    finally:
        if wanted:  # moto reads it again
            environ["wsgi.input"] = io.BytesIO(data)


def _error_response(protocol: str, code: str, status: int, message: str, *, head: bool) -> Response:
    request_id = str(uuid.uuid4())
    headers = {"x-amzn-RequestId": request_id, "x-amz-request-id": request_id}
    if head:
        return Response(b"", status=status, headers=headers)
    if protocol in ("json", "rest-json"):
        headers["x-amzn-ErrorType"] = code
        body = json.dumps({"__type": code, "message": message, "Message": message})
        content_type = "application/x-amz-json-1.1" if protocol == "json" else "application/json"
    elif protocol == "rest-xml":  # S3
        content_type = "application/xml"
        body = (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{escape(message)}</Message><RequestId>{request_id}</RequestId></Error>"
        )
    else:
        content_type, body = error_body(protocol, code, message, request_id)
    return Response(body, status=status, headers=headers, content_type=content_type)


def _signed_with(environ: dict[str, Any]) -> tuple[str, str, str] | None:
    """(access key id, region, signing name) of a request's signature: SigV4's credential
    scope, or an S3 presigned URL's (SigV4 ``X-Amz-Credential``; SigV2 ``AWSAccessKeyId``,
    which boto3 makes for a custom endpoint)."""
    authorization = str(environ.get("HTTP_AUTHORIZATION") or "")
    query = str(environ.get("QUERY_STRING") or "")
    if authorization or ("Credential=" not in query and "AWSAccessKeyId=" not in query):
        return access_key_of(authorization)
    values = parse_qs(query)
    found = access_key_of("", values.get("X-Amz-Credential", [""])[0])
    if found is None and values.get("AWSAccessKeyId"):
        return values["AWSAccessKeyId"][0], "us-east-1", "s3"
    return found


class SignedRequests:
    """WSGI middleware of the HTTP front (server.py): a request whose SigV4 credential
    (``Authorization: ... Credential=<key>/...``, or a presigned URL's) is a registered key is
    authorized as that session, as SDK calls in the process are, a refusal answered in the
    service's protocol; moto handles it with ``CALLER`` set to the session (what it calls on,
    the STS answers). Other keys act as before: the administrator, unchecked. Not judged:
    requests to services outside the scope (features/service_scope.py refuses them all), the
    admin API (``/_localcloud/``), and a request whose operation botocore's model does not
    match (moto answers it as it would anyway)."""

    def __init__(self, app: Any, authorizer: Authorizer) -> None:
        self.app, self.authorizer = app, authorizer

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        admin = str(environ.get("PATH_INFO", "")).startswith(ADMIN_PREFIX)
        found = None if admin else _signed_with(environ)
        caller = self.authorizer.caller_of(found[0]) if found else None
        if caller is None or found is None:
            return self.app(environ, start_response)  # type: ignore[no-any-return]
        _, region, signing_name = found
        with acting_as(caller):
            refused = self.refusal(environ, caller, region, signing_name)
            app = self.app if refused is None else refused
            return app(environ, start_response)  # type: ignore[no-any-return]

    def refusal(
        self, environ: dict[str, Any], caller: Caller, region: str, signing_name: str
    ) -> Response | None:
        """The service's error when IAM refuses ``caller`` this request, else None."""
        if not self.authorizer.enabled or signing_name not in SCOPE:
            return None  # outside the scope: features/service_scope.py refuses it
        try:
            found = identify(environ, signing_name)
        except Exception:
            found = None
        if found is None:
            return None
        operation, params, protocol = found
        if not in_scope(signing_name, operation):
            return None
        # secure: the local endpoint stands in for AWS's https one (features/iam.py)
        denied = self.authorizer.authorize(
            caller, signing_name, operation, params, region=region, secure=True
        )
        if denied is None:
            return None
        error = denied[1]["Error"]
        status = int(denied[1]["ResponseMetadata"]["HTTPStatusCode"])
        head = environ.get("REQUEST_METHOD") == "HEAD"
        return _error_response(protocol, error["Code"], status, error["Message"], head=head)


PATCHES = [
    Patch(
        name="sts-role-session-credentials",
        kind=Kind.FEATURE,
        reason="STS knows a role session by its credentials: AssumeRole's are registered "
        "with the cloud's credentials, and GetCallerIdentity with a session's credentials "
        "answers its assumed-role ARN (moto answers user/moto for credentials it did not make).",
        test="localcloud/tests/test_iam_credentials.py"
        "::test_assume_role_answers_credentials_of_the_session",
        build=_build_sts_sessions,
    ),
]
