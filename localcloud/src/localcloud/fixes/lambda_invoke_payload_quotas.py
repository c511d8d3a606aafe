"""Fix: Lambda Invoke enforces AWS's invocation payload quotas, request and response.

AWS (Invoke, https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html): "For
synchronous invocations, the maximum payload size is 6 MB. For asynchronous invocations,
the maximum payload size is 1 MB" (256 KB until 2025; "More room to build: serverless
services now support payloads up to 1 MB",
https://aws.amazon.com/blogs/compute/more-room-to-build-serverless-services-now-support-
payloads-up-to-1-mb; Lambda's quotas page counts MB as 1,024 KB). What callers see, as
recorded by others against AWS:

* a synchronous request over 6,291,456 bytes: HTTP 413 ``RequestEntityTooLargeException``
  "Request must be smaller than 6291456 bytes for the InvokeFunction operation";
* an asynchronous (``InvocationType=Event``) request over the quota: HTTP 413
  ``RequestEntityTooLargeException`` "<n> byte payload is too large for the Event
  invocation type (limit <quota> bytes)" (seen with the 256 KB quota, 262144; here with
  1 MB, 1048576);
* a function response over 6,291,556 bytes: HTTP 200, ``X-Amz-Function-Error: Unhandled``
  and the payload ``{"errorMessage": "Response payload size exceeded maximum allowed
  payload size (6291556 bytes).", "errorType": "Function.ResponseSizeTooLarge"}``.

moto 5.2 (awslambda/responses.py ``LambdaResponse.invoke``) accepts any request and
replaces a response whose ``sys.getsizeof`` exceeds 6,000,000 (so a valid 6.1 MB response
fails locally; getmoto/moto#3988, PR #4763). This replaces that method with moto's own
logic and AWS's three checks; Step Functions' lambda:invoke calls come through it too.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from moto.awslambda.responses import LambdaResponse
from moto.core.exceptions import JsonRESTError
from moto.utilities.aws_headers import amz_crc32

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["MAX_ASYNC_REQUEST_BYTES", "MAX_RESPONSE_BYTES", "MAX_SYNC_REQUEST_BYTES", "PATCHES"]

MAX_SYNC_REQUEST_BYTES = 6 * 1024 * 1024  # 6291456
MAX_ASYNC_REQUEST_BYTES = 1024 * 1024  # 1048576
MAX_RESPONSE_BYTES = 6 * 1024 * 1024 + 100  # 6291556, as AWS's message gives it
_RESPONSE_TOO_LARGE = {
    "errorMessage": "Response payload size exceeded maximum allowed payload size "
    f"({MAX_RESPONSE_BYTES} bytes).",
    "errorType": "Function.ResponseSizeTooLarge",
}


class RequestEntityTooLarge(JsonRESTError):
    code = 413

    def __init__(self, message: str):
        super().__init__("RequestEntityTooLargeException", message)


def _size(data: Any) -> int:
    return len(data.encode("utf-8") if isinstance(data, str) else data) if data else 0


def _check_request(invocation_type: str | None, body: Any) -> None:
    size = _size(body)
    if invocation_type == "Event" and size > MAX_ASYNC_REQUEST_BYTES:
        raise RequestEntityTooLarge(
            f"{size} byte payload is too large for the Event invocation type "
            f"(limit {MAX_ASYNC_REQUEST_BYTES} bytes)"
        )
    if invocation_type != "Event" and size > MAX_SYNC_REQUEST_BYTES:
        raise RequestEntityTooLarge(
            f"Request must be smaller than {MAX_SYNC_REQUEST_BYTES} bytes for the "
            "InvokeFunction operation"
        )


@amz_crc32  # type: ignore[untyped-decorator]
def _invoke(self: LambdaResponse) -> tuple[int, dict[str, str], str | bytes]:
    invocation_type = self.headers.get("X-Amz-Invocation-Type")
    _check_request(invocation_type, self.body)
    response_headers: dict[str, str] = {}
    function_name = unquote(self.path.rsplit("/", 2)[-2])
    qualifier = self._get_param("qualifier")
    payload = self.backend.invoke(
        function_name, qualifier, self.body, self.headers, response_headers
    )
    if payload is None:
        return 404, response_headers, "{}"
    if invocation_type not in ("Event", "DryRun") and _size(payload) > MAX_RESPONSE_BYTES:
        payload = json.dumps(_RESPONSE_TOO_LARGE).encode("utf-8")
        response_headers["x-amz-function-error"] = "Unhandled"
    response_headers["Content-Length"] = str(_size(payload))
    response_headers["content-type"] = "application/json"
    if (status := {"Event": 202, "DryRun": 204}.get(invocation_type or "")) is not None:
        response_headers["status"] = str(status)
        return status, response_headers, payload
    if self.headers.get("X-Amz-Log-Type") != "Tail":
        response_headers.pop("x-amz-log-result", None)
    # AWS: "X-Amz-Executed-Version: the version of the function that executed" ($LATEST, or
    # the number the qualifier resolved to); moto sends none.
    executed = self.backend.get_function(function_name, qualifier).version
    response_headers.setdefault("x-amz-executed-version", str(executed))
    return 200, response_headers, payload


def _build(rt: Runtime) -> Targets:
    return {(LambdaResponse, "invoke"): _invoke}


PATCHES = [
    Patch(
        name="lambda-invoke-payload-quotas",
        kind=Kind.FIX,
        reason="Invoke refuses requests over 6 MB (synchronous) or 1 MB (Event) with AWS's "
        "413 RequestEntityTooLargeException, and answers Function.ResponseSizeTooLarge for "
        "responses over 6,291,556 bytes (moto: no request quota, responses over 6,000,000).",
        test="localcloud/tests/test_quotas.py"
        "::test_invoke_refuses_requests_and_responses_over_the_quotas",
        build=_build,
        upstream="getmoto/moto#3988 (PR #4763 added the response check with "
        "sys.getsizeof > 6000000); no moto issue found for the request quotas (searched "
        "2026-11-25)",
    )
]
