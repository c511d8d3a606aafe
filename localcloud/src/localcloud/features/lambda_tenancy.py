"""Lambda tenant isolation mode, as Lambda runs it.

AWS (Lambda Developer Guide, "Tenant isolation", "Invoking Lambda functions with tenant
isolation", "Accessing tenant identifier in Lambda function code", "Monitoring Lambda
functions with tenant isolation"; the Lambda API's ``Invoke`` ``TenantId``, header
``X-Amz-Tenant-Id``, 1-256 characters of ``[a-zA-Z0-9._:/=+\\-@ ]``):

* a function created with ``TenancyConfig: {TenantIsolationMode: PER_TENANT}`` (it cannot be
  changed later) runs each invocation in an execution environment dedicated to the
  invocation's tenant: environments, and so the handler module's state, are never shared
  between tenants; invocations of one tenant reuse that tenant's environment;
* every Invoke, synchronous or ``Event``, must give a tenant id: one without is refused;
* the handler reads it as ``context.tenant_id`` (Python runtime);
* event source mappings and the services that invoke functions themselves (S3, SNS,
  EventBridge) give no tenant id, so a tenant-isolated function is invoked by a function of
  one's own that reads the tenant from the event and calls Invoke with it ("Integrating Event
  Source Mappings with AWS Lambda tenant isolation mode", AWS Compute Blog).

Each tenant has a pool of environment processes of its own (features/lambda_processes.py),
whose runtime reads the tenant from the Runtime API. The refusal's wording is the local cloud's
(AWS does not publish it); its code is Lambda's for a bad request parameter.
"""

from __future__ import annotations

import re
from typing import Any

from moto.awslambda.exceptions import LambdaClientError

from localcloud.features.lambda_runtime import TENANT_HEADER, LocalLambdaBackend, request_header
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_TENANT_ID = re.compile(r"[a-zA-Z0-9._:/=+\-@ ]{1,256}")


def _refused(message: str) -> LambdaClientError:
    return LambdaClientError("InvalidParameterValueException", message)


def _build(rt: Runtime) -> Targets:
    def tenant_of(self: LocalLambdaBackend, fn: Any, headers: Any) -> str | None:
        tenant = request_header(headers, TENANT_HEADER)
        # TenancyConfig is set at deploy (stack/properties.py)
        if not (getattr(fn, "tenancy_config", None) or {}).get("TenantIsolationMode"):
            return None
        if tenant is None:
            raise _refused(
                f"The function {fn.function_name} has tenant isolation mode PER_TENANT: "
                "specify a TenantId to invoke it"
            )
        if not _TENANT_ID.fullmatch(tenant):
            raise _refused(
                f"1 validation error detected: Value '{tenant}' at 'tenantId' failed to "
                "satisfy constraint: Member must satisfy regular expression pattern: "
                "[a-zA-Z0-9\\._:\\/=+\\-@ ]+"
            )
        return tenant

    return {(LocalLambdaBackend, "tenant_of"): tenant_of}


PATCHES = [
    Patch(
        name="lambda-tenant-isolation",
        kind=Kind.FEATURE,
        reason="A function with TenancyConfig PER_TENANT runs each tenant's invocations in "
        "environments of that tenant's own, gives the handler "
        "context.tenant_id, and refuses an Invoke without TenantId (moto ignores both).",
        test="localcloud/tests/test_lambda_tenancy.py"
        "::test_each_tenant_has_an_environment_of_its_own",
        build=_build,
    ),
]
