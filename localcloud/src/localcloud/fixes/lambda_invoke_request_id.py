"""Fix: Invoke answers with the invocation's request id.

On AWS, Invoke's ``x-amzn-RequestId`` is the invocation's own: the ``aws_request_id`` of the
function's context, the id in its START, END and REPORT lines (how its log is found from a
response), and for an asynchronous invocation the id its later log and destinations carry.
moto's responses (core/responses.py ``_enrich_response``) replace every request id with a
random one of their own. The local cloud's invocations name theirs in ``x-amzn-RequestId``
(features/lambda_runtime.py, lambda_async.py); this keeps it.
"""

from __future__ import annotations

from typing import Any

from moto.awslambda.responses import LambdaResponse

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]


def _build(rt: Runtime) -> Targets:
    enrich = LambdaResponse._enrich_response

    def enrich_response(headers: dict[str, Any], body: Any) -> tuple[dict[str, Any], Any]:
        ours = headers.pop("x-amzn-RequestId", None)  # the invocation's, when it named it
        headers, body = enrich(headers, body)
        if ours:
            headers["x-amzn-requestid"] = ours
        return headers, body

    return {(LambdaResponse, "_enrich_response"): staticmethod(enrich_response)}


PATCHES = [
    Patch(
        name="lambda-invoke-request-id",
        kind=Kind.FIX,
        reason="Invoke's x-amzn-RequestId is the invocation's request id (its context's, its "
        "log's), as on AWS; moto's responses replace it with a random one.",
        test="localcloud/tests/test_lambda_logs.py::test_invokes_request_id_is_the_invocations",
        build=_build,
        upstream="not reported yet (moto 5.2.5 core/responses.py _enrich_response)",
    )
]
