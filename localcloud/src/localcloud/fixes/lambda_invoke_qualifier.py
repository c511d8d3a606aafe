"""Fix: Invoke's ``Qualifier`` (a version or an alias) chooses what runs, as in Lambda.

moto's ``LambdaResponse.invoke`` reads the parameter as ``qualifier`` where the API (and
every SDK) sends ``Qualifier``, so it always got None: ``aws lambda invoke --qualifier dev``
ran ``$LATEST``, a version that does not exist was not refused, and a durable or versioned
function could not be invoked by version. Lambda's responses read it by its name.
"""

from __future__ import annotations

from typing import Any

from moto.awslambda.responses import LambdaResponse

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_GET_PARAM = LambdaResponse._get_param


def _get_param(self: LambdaResponse, param_name: str, if_none: Any = None) -> Any:
    # Lambda's own parameter names; Invoke's is asked for as "qualifier" (its only lower-case
    # request, also in fixes/lambda_invoke_payload_quotas.py's copy of it)
    return _GET_PARAM(self, "Qualifier" if param_name == "qualifier" else param_name, if_none)


def _build(rt: Runtime) -> Targets:
    return {(LambdaResponse, "_get_param"): _get_param}


PATCHES = [
    Patch(
        name="lambda-invoke-qualifier",
        kind=Kind.FIX,
        reason="Invoke's Qualifier (a version or an alias) chooses the version that runs, as in "
        "Lambda; moto reads it as 'qualifier' and always ran $LATEST.",
        test="localcloud/tests/test_stack_updates.py::test_a_retained_version_outlives_the_update",
        build=_build,
        upstream="not reported yet (moto awslambda/responses.py LambdaResponse.invoke reads "
        "_get_param('qualifier'))",
    ),
]
