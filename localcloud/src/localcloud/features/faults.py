"""The ``operation-faults`` patch: AWS operations answer with the error codes injected in
the cloud's :class:`~localcloud.faults.Faults` (localcloud/faults.py: where and how)."""

from __future__ import annotations

from typing import Any

from moto.core.exceptions import ServiceException
from moto.core.responses import ActionResult, BaseResponse
from moto.s3 import exceptions as s3_exceptions
from moto.s3 import responses as s3_responses

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]


# ---------------------------------------------------------------- operation faults
class _InjectedFault(ServiceException):
    """An injected error. Not in a ``moto.<service>`` module, so moto's serializer looks its
    shape up in the service being called (for ``moto.core`` it would look up "core")."""


_InjectedFault.__module__ = "localcloud.features.faults"


def _s3_key_operation(request: Any, full_url: str) -> str:
    method = request.method
    if method == "PUT":
        return "CopyObject" if "x-amz-copy-source" in request.headers else "PutObject"
    return {"GET": "GetObject", "HEAD": "HeadObject", "DELETE": "DeleteObject"}.get(method, method)


def _s3_bucket_operation(request: Any, full_url: str) -> str:
    method = request.method
    if method == "GET":
        if "versions" in full_url:
            return "ListObjectVersions"
        return "ListObjectsV2" if "list-type=2" in full_url else "ListObjects"
    return {
        "HEAD": "HeadBucket",
        "PUT": "CreateBucket",
        "DELETE": "DeleteBucket",
        "POST": "DeleteObjects",
    }.get(method, method)


def _build(rt: Runtime) -> Targets:
    faults = rt.faults
    call_action = BaseResponse.call_action

    def faulty_call_action(self: Any) -> Any:
        fault = faults.take_operation(self.boto3_service_name, self._get_action())
        if fault is None:
            return call_action(self)
        _, headers, body = self.serialized(ActionResult(_InjectedFault(fault.code, fault.message)))
        headers, body = self._enrich_response(headers, body)
        return fault.status, headers, body

    def s3_faulty(respond: Any, operation: Any) -> Any:
        def faulty(self: Any, request: Any, full_url: str, headers: Any) -> Any:
            fault = faults.take_operation("s3", operation(request, full_url))
            if fault is None:
                return respond(self, request, full_url, headers)
            self.setup_class(request)
            error = s3_exceptions.S3ClientError(fault.code, fault.message)
            _, headers, body = self._send_response(self.serialized(ActionResult(error)))
            return fault.status, headers, body

        return faulty

    s3 = s3_responses.S3Response
    return {
        (BaseResponse, "call_action"): faulty_call_action,
        (s3, "key_response"): s3_faulty(s3.key_response, _s3_key_operation),
        (s3, "bucket_response"): s3_faulty(s3.bucket_response, _s3_bucket_operation),
    }


PATCHES = [
    Patch(
        name="operation-faults",
        kind=Kind.FEATURE,
        reason="Any AWS operation can be made to answer with an error code N times, for every "
        "caller (handlers, the workflow's integrations, the AWS CLI); moto has no request hook.",
        test="tests/e2e/test_event_graph.py::test_injected_operation_faults_answer_as_the_service",
        build=_build,
    )
]
