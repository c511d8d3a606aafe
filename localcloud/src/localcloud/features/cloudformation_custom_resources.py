"""Lambda-backed custom resources (``Custom::*``, ``AWS::CloudFormation::CustomResource``)
through CloudFormation's Create/Update/Delete protocol.

moto 5.2.5 has the start of it (cloudformation/custom_model.py ``CustomModel``): for a
``Custom::`` type it invokes the function in a thread with a Create request whose
``ResponseURL`` is moto's own server (``/cloudformation_<region>/cfnresponse``), leaves the
stack CREATE_IN_PROGRESS, and the response's ``Data`` completes it. That only works for a
function that runs elsewhere (Docker) against a served moto; it never waits, so a resource
that reads the custom resource with ``Fn::GetAtt`` gets nothing; a FAILED response, a missing
response, Update and Delete are not handled, and ``AWS::CloudFormation::CustomResource`` is
unknown. :class:`LambdaCustomResource` extends it (moto's stack still records it with
``add_custom_resource``, so moto's own endpoint keeps working) and does what CloudFormation
does (CloudFormation User Guide, "Custom resources", "Custom resource request objects",
"Custom resource response objects"):

* it invokes the ``ServiceToken`` function (a Lambda ARN of the stack's region) asynchronously
  with the request (``RequestType``, ``ResponseURL``, ``StackId``, ``RequestId``,
  ``ResourceType``, ``LogicalResourceId``, ``ResourceProperties`` with the property values as
  strings, as CloudFormation sends them; ``PhysicalResourceId`` for Update/Delete,
  ``OldResourceProperties`` for Update) and waits for the response PUT to the
  ``ResponseURL``: a listener on 127.0.0.1 that lives as long as the request (the function's
  environment reaches it, as urllib3, requests and urllib do);
* SUCCESS: ``PhysicalResourceId`` is the resource's Ref, ``Data`` its ``Fn::GetAtt``
  attributes; FAILED fails the operation with CloudFormation's reason, "Received response
  status [FAILED] from custom resource. Message returned: <Reason> (RequestId: <id>)";
* no response within ``ServiceTimeout`` (1-3600 s, default 3600; ``LOCALCLOUD_CUSTOM_RESOURCE_
  TIMEOUT`` caps it locally) fails with CloudFormation's "did not receive a response" reason.
  Locally the wait ends sooner once no response can come: every invocation has ended (a
  function error is retried twice, as Lambda retries an asynchronous invocation, without
  its 1 and 2 minute delays) or the one under way has run past the function's Timeout; the
  reason then says so;
* Update (UpdateStack) sends Update; a new ``PhysicalResourceId`` is a replacement, and the
  old one gets its Delete afterwards, as in the update's cleanup;
* DeleteStack sends Delete to the stack's custom resources first (newest first), then moto
  deletes the rest; a FAILED Delete leaves the stack DELETE_FAILED, with every resource.

The response body is limited to 4096 bytes, as on AWS.
"""

from __future__ import annotations

import contextvars
import itertools
import json
import logging
import os
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote

from moto.awslambda.utils import get_backend as get_lambda_backend
from moto.cloudformation import parsing as cfn_parsing
from moto.cloudformation.custom_model import CustomModel
from moto.cloudformation.exceptions import ValidationError
from moto.cloudformation.models import CloudFormationBackend, Stack

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = [
    "CUSTOM_RESOURCE_TYPE",
    "PATCHES",
    "TIMEOUT_VARIABLE",
    "CustomResourceError",
    "LambdaCustomResource",
    "delete_custom_resources",
    "installed",
    "is_custom_resource_type",
]

LOG = logging.getLogger(__name__)
CUSTOM_RESOURCE_TYPE = "AWS::CloudFormation::CustomResource"
#: seconds: caps every custom resource's ServiceTimeout locally (unset: the ServiceTimeout)
TIMEOUT_VARIABLE = "LOCALCLOUD_CUSTOM_RESOURCE_TIMEOUT"
SERVICE_TIMEOUT = 3600  # CloudFormation's default and maximum ServiceTimeout, in seconds
RESPONSE_LIMIT = 4096  # bytes of a response body
ATTEMPTS = 3  # an asynchronous invocation that fails is retried twice
GRACE = 1.0  # seconds a response may still take once the invocation has ended
_ORDER = itertools.count()  # creation order, for deletion newest first


class CustomResourceError(Exception):
    """A custom resource operation failed; the message is CloudFormation's status reason."""


def is_custom_resource_type(resource_type: str) -> bool:
    return resource_type.startswith("Custom::") or resource_type == CUSTOM_RESOURCE_TYPE


def installed() -> bool:
    """Whether this module's patch is in place (moto's CustomModel cannot run a handler)."""
    return cfn_parsing.CustomModel is LambdaCustomResource


def _as_strings(value: Any) -> Any:
    """Property values as CloudFormation sends them to a provider: scalars become strings."""
    if isinstance(value, dict):
        return {key: _as_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_strings(item) for item in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


# ------------------------------------------------------------------ the response URL
class _Listener:
    """Receives the response PUT of one request on 127.0.0.1 (an S3 presigned URL on AWS)."""

    def __init__(self) -> None:
        self.received = threading.Event()
        self.body: bytes | None = None
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                if listener.body is None:
                    listener.body = body
                self.send_response(200)  # what S3 answers a presigned PUT
                self.send_header("Content-Length", "0")
                self.end_headers()
                listener.received.set()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="custom-resource-response",
            daemon=True,
        )
        self.thread.start()

    def url(self, region: str, stack_id: str, logical_id: str, request_id: str) -> str:
        key = quote(f"{stack_id}|{logical_id}|{request_id}", safe="")
        port = self.server.server_address[1]
        return f"http://127.0.0.1:{port}/cloudformation-custom-resource-response-{region}/{key}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# ------------------------------------------------------------------ one request
class _Invocation:
    """One asynchronous invocation of the provider function, on a thread of its own."""

    def __init__(self, backend: Any, name: str, qualifier: str | None, body: str) -> None:
        self.function_error: str | None = None
        self.done = threading.Event()
        self.started = time.monotonic()

        def run() -> None:
            # On this thread, as the asynchronous invocation it is (its retries: _send)
            headers: dict[str, str] = {}
            try:
                payload = backend.invoke(name, qualifier, body, {}, headers)
                if headers.get("x-amz-function-error"):
                    self.function_error = _error_type(payload)
            except Exception as exc:  # a Lambda service error: retried as a function error
                self.function_error = f"{type(exc).__name__}: {exc}"
            finally:
                self.done.set()

        context = contextvars.copy_context()
        threading.Thread(
            target=context.run, args=(run,), name=f"custom-resource-{name}", daemon=True
        ).start()


def _error_type(payload: Any) -> str:
    try:
        error = json.loads(payload)
        return f"{error.get('errorType')}: {error.get('errorMessage')}"
    except (TypeError, ValueError, AttributeError):
        return "function error"


def _timeout(properties: dict[str, Any]) -> float:
    raw = properties.get("ServiceTimeout", SERVICE_TIMEOUT)
    try:
        seconds = int(str(raw))
    except ValueError:
        seconds = 0
    if not 1 <= seconds <= SERVICE_TIMEOUT:
        raise CustomResourceError(
            f"ServiceTimeout must be an integer from 1 to {SERVICE_TIMEOUT}, got {raw!r}"
        )
    cap = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    return min(float(seconds), float(cap)) if cap else float(seconds)


def _no_response(request_id: str, why: str) -> CustomResourceError:
    return CustomResourceError(
        "CloudFormation did not receive a response from your Custom Resource. Please check "
        f"your logs for requestId [{request_id}]. If you are using the Python cfn-response "
        "module, you may need to update your Lambda function code so that CloudFormation can "
        f"attach the updated version. (locally: {why})"
    )


def _send(account_id: str, region: str, request: dict[str, Any]) -> dict[str, Any]:
    """Invoke the provider with ``request`` (ResponseURL and RequestId are added) and wait for
    its response: the response object, SUCCESS; CustomResourceError otherwise."""
    properties = request["ResourceProperties"]
    token = str(properties.get("ServiceToken", ""))
    parts = token.split(":")
    if len(parts) < 7 or parts[2] != "lambda" or parts[5] != "function":
        kind = "an SNS topic" if token.startswith("arn:aws:sns:") else "not a Lambda function"
        raise CustomResourceError(
            f"ServiceToken {token!r} is {kind}: only Lambda-backed custom resources run locally"
        )
    if parts[3] != region:
        raise CustomResourceError(f"ServiceToken {token!r} is not in the stack's Region {region}")
    name, qualifier = parts[6], (parts[7] if len(parts) > 7 else None)
    backend = get_lambda_backend(account_id, region)
    function = backend.get_function(name, qualifier)  # unknown -> ResourceNotFoundException
    limit = _timeout(properties)
    request_id = str(uuid.uuid4())
    listener = _Listener()
    try:
        event = {
            "RequestType": request["RequestType"],
            "ServiceToken": token,
            "ResponseURL": listener.url(
                region, request["StackId"], request["LogicalResourceId"], request_id
            ),
            "RequestId": request_id,
            **request,
        }
        body = json.dumps(event)
        deadline = time.monotonic() + limit
        function_timeout = float(function.timeout or 3)
        invocation, attempts, ended = _Invocation(backend, name, qualifier, body), 1, None
        while not listener.received.wait(0.02):
            now = time.monotonic()
            if now >= deadline:
                raise _no_response(request_id, f"no response within {limit:g} s")
            if invocation.done.is_set():
                if invocation.function_error and attempts < ATTEMPTS:
                    invocation, attempts = _Invocation(backend, name, qualifier, body), attempts + 1
                    continue
                ended = ended or now
                if now - ended >= GRACE:
                    outcome = invocation.function_error or "returned"
                    raise _no_response(
                        request_id,
                        f"{name} ended without sending a response ({attempts} invocation(s), "
                        f"the last {outcome}); CloudFormation would wait for the "
                        f"ServiceTimeout of {limit:g} s",
                    )
            elif now - invocation.started > function_timeout + GRACE:
                raise _no_response(
                    request_id,
                    f"{name} ran past its Timeout of {function_timeout:g} s without a response",
                )
    finally:
        listener.close()
    return _read_response(listener.body or b"", event)


def _read_response(body: bytes, request: dict[str, Any]) -> dict[str, Any]:
    if len(body) > RESPONSE_LIMIT:
        raise CustomResourceError("Response object is too long.")
    try:
        response = json.loads(body)
    except ValueError as exc:
        raise CustomResourceError(f"Invalid response object: not JSON ({exc})") from exc
    if not isinstance(response, dict):
        raise CustomResourceError("Invalid response object: not a JSON object")
    status = response.get("Status")
    if status not in ("SUCCESS", "FAILED"):
        raise CustomResourceError(
            f"Invalid response object: Status must be SUCCESS or FAILED, got {status!r}"
        )
    for key in ("StackId", "RequestId", "LogicalResourceId"):
        if response.get(key) != request[key]:
            raise CustomResourceError(
                f"Invalid response object: {key} {response.get(key)!r} is not the request's "
                f"{request[key]!r}"
            )
    if status == "FAILED":
        raise CustomResourceError(
            "Received response status [FAILED] from custom resource. Message returned: "
            f"{response.get('Reason') or ''} (RequestId: {request['RequestId']})"
        )
    physical = response.get("PhysicalResourceId")
    if not isinstance(physical, str) or not physical or len(physical.encode()) > 1024:
        raise CustomResourceError(
            "Invalid PhysicalResourceId: a non-empty string of up to 1 KB is required"
        )
    data = response.get("Data") or {}
    if not isinstance(data, dict):
        raise CustomResourceError("Invalid response object: Data must be a JSON object")
    response["Data"] = data
    return response


# ------------------------------------------------------------------ the resource
class LambdaCustomResource(CustomModel):
    """moto's CustomModel, run through the whole protocol (see the module docstring)."""

    request_id: str  # the first response's

    def __init__(  # noqa: PLR0917 - a resource's identity and properties
        self, account_id: str, region_name: str, stack_id: str, logical_id: str,
        resource_type: str, properties: dict[str, Any],
    ) -> None:  # fmt: skip
        super().__init__(region_name, "", logical_id, "")
        self.account_id, self.stack_id = account_id, stack_id
        self.resource_type, self.properties = resource_type, properties
        self.order = next(_ORDER)
        self._failed_update: tuple[str, CustomResourceError] | None = None

    def _respond(self, response: dict[str, Any]) -> None:
        self.request_id = self.request_id or response["RequestId"]
        self.resource_name = response["PhysicalResourceId"]
        self.no_echo = bool(response.get("NoEcho"))
        self.set_data(response["Data"])

    def _request(self, request_type: str, **extra: Any) -> dict[str, Any]:
        request = {
            "RequestType": request_type,
            "StackId": self.stack_id,
            "LogicalResourceId": self.logical_id,
            "ResourceType": self.resource_type,
            **extra,
        }
        return _send(self.account_id, self.region_name, request)

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> LambdaCustomResource:
        from moto.cloudformation import cloudformation_backends

        properties = _as_strings(cloudformation_json.get("Properties") or {})
        stack_id, logical_id, kind = kwargs["StackId"], kwargs["LogicalId"], kwargs["ResourceType"]
        resource = cls(account_id, region_name, stack_id, logical_id, kind, properties)
        resource._respond(resource._request("Create", ResourceProperties=properties))
        stack = cloudformation_backends[account_id][region_name].get_stack(stack_id)
        stack.add_custom_resource(resource)  # moto's cfnresponse endpoint finds it there
        return resource

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[misc]
        cls,
        original_resource: LambdaCustomResource,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> LambdaCustomResource:
        old = original_resource
        properties = _as_strings(cloudformation_json.get("Properties") or {})
        if properties.get("ServiceToken") != old.properties.get("ServiceToken"):
            raise CustomResourceError("Modifying service token is not allowed.")
        key = json.dumps(properties, sort_keys=True)
        if old._failed_update and old._failed_update[0] == key:
            raise old._failed_update[1]  # moto tries a failed update again: not the provider
        try:
            response = old._request(
                "Update",
                PhysicalResourceId=old.physical_resource_id,
                ResourceProperties=properties,
                OldResourceProperties=old.properties,
            )
        except CustomResourceError as exc:
            old._failed_update = (key, exc)
            raise
        if response["PhysicalResourceId"] == old.physical_resource_id:
            old.properties = properties
            old._respond(response)
            return old
        new = cls(
            account_id, region_name, old.stack_id, old.logical_id, old.resource_type, properties
        )
        new._respond(response)
        try:  # a replacement: the old resource is deleted in the update's cleanup
            old.delete(account_id, region_name)
        except CustomResourceError as exc:
            LOG.warning("%s: deleting the replaced resource failed: %s", old.logical_id, exc)
        return new

    def delete(self, account_id: str, region_name: str) -> None:
        self._request(
            "Delete",
            PhysicalResourceId=self.physical_resource_id,
            ResourceProperties=self.properties,
        )

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return True  # whatever the provider returns in Data

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        if attribute_name in self.data:
            return self.data[attribute_name]
        raise ValidationError(
            message="CustomResource attribute error: Vendor response doesn't contain "
            f"{attribute_name} key in object {self.stack_id}|{self.logical_id}|"
            f"{self.physical_resource_id}"
        )


def delete_custom_resources(stack: Stack) -> None:
    """Send Delete to each custom resource of ``stack`` (newest first, not those retained) and
    forget it; the first that fails raises CustomResourceError (``<logical id>: <reason>``),
    the rest are kept."""
    templates = stack.resource_map._resource_json_map
    found = [
        resource
        for resource in stack.resource_map._parsed_resources.values()
        if isinstance(resource, LambdaCustomResource)
        and (templates.get(resource.logical_id) or {}).get("DeletionPolicy") != "Retain"
    ]
    for resource in sorted(found, key=lambda r: -r.order):
        try:
            resource.delete(stack.account_id, stack.region_name)
        except CustomResourceError as exc:
            raise CustomResourceError(f"{resource.logical_id}: {exc}") from exc
        stack.resource_map._parsed_resources.pop(resource.logical_id, None)
        stack.custom_resources.pop(resource.logical_id, None)


# ------------------------------------------------------------------ the patch
def _build(rt: Runtime) -> Targets:
    get_model_map = cfn_parsing.get_model_map
    delete_stack = CloudFormationBackend.delete_stack

    def model_map() -> dict[str, Any]:
        return {**get_model_map(), CUSTOM_RESOURCE_TYPE: LambdaCustomResource}

    def delete(self: CloudFormationBackend, name_or_stack_id: str) -> None:
        stack = next(
            (s for s in self.stacks.values() if name_or_stack_id in (s.stack_id, s.name)), None
        )
        if stack is not None:
            try:
                delete_custom_resources(stack)
            except CustomResourceError as exc:
                stack._add_stack_event("DELETE_FAILED", resource_status_reason=str(exc))
                stack.status = "DELETE_FAILED"
                return
        delete_stack(self, name_or_stack_id)

    return {
        (cfn_parsing, "CustomModel"): LambdaCustomResource,
        (cfn_parsing, "get_model_map"): model_map,
        (CloudFormationBackend, "delete_stack"): delete,
    }


PATCHES = [
    Patch(
        name="cloudformation-custom-resources",
        kind=Kind.FEATURE,
        reason="Lambda-backed custom resources run their provider function through "
        "CloudFormation's Create/Update/Delete protocol (response URL on 127.0.0.1, Data for "
        "Fn::GetAtt, FAILED and missing responses fail the stack); moto's CustomModel needs a "
        "served moto and a Docker function, never waits and only creates.",
        test="localcloud/tests/test_custom_resources.py"
        "::test_inline_cfnresponse_data_reaches_outputs",
        build=_build,
    ),
]
