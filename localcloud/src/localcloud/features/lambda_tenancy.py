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

On threads of the cloud an environment is a handler module of its own: the function's handler
module is loaded again, under a private name, for each tenant the first time it is invoked for
it, and kept for that tenant (modules it imports are the process's, shared, as for every
function here). The tenant's environment runs one invocation at a time, as every environment
here does. In environment processes (features/lambda_processes.py) each tenant has a pool of
environments of its own, whose runtime reads the tenant from the Runtime API. The
refusal's wording is the local cloud's (AWS does not publish it); its code is Lambda's for a
bad request parameter.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
import threading
from typing import TYPE_CHECKING, Any

from moto.awslambda.exceptions import LambdaClientError

from localcloud.features.lambda_runtime import TENANT_HEADER, InProcessLambdaBackend, request_header
from localcloud.patching import Kind, Patch, Targets

if TYPE_CHECKING:
    from localcloud.runtime import Handler, Runtime

__all__ = ["PATCHES", "isolation_mode"]

_TENANT_ID = re.compile(r"[a-zA-Z0-9._:/=+\-@ ]{1,256}")


def isolation_mode(fn: Any) -> str | None:
    """``PER_TENANT`` for a tenant-isolated function (set at deploy: stack/properties.py)."""
    config = getattr(fn, "tenancy_config", None) or {}
    return str(config.get("TenantIsolationMode") or "") or None


def _refused(message: str) -> LambdaClientError:
    return LambdaClientError("InvalidParameterValueException", message)


def _module_of(handler: Any) -> tuple[str, str] | None:
    """(module name, file) of the handler's module: its environment's code to load again."""
    while hasattr(handler, "__wrapped__"):
        handler = handler.__wrapped__
    module = sys.modules.get(getattr(handler, "__module__", "") or "")
    path = getattr(module, "__file__", None)
    return (module.__name__.split("@", 1)[0], path) if module and path else None


def _checked(found: tuple[str, str], fn: Any) -> tuple[str, str]:
    module_name = str(fn.handler).rpartition(".")[0]
    if found[0] != module_name:
        raise RuntimeError(
            f"{fn.function_name}: its handler in LocalCloud.handlers is not its Handler "
            f"{fn.handler} (a wrapper?): a tenant's environment loads the Handler's module "
            "again, so a wrapper cannot be applied to a tenant-isolated function"
        )
    return found


def _build(rt: Runtime) -> Targets:
    lock = threading.Lock()
    environments: dict[tuple[str, str], Handler] = {}
    modules: list[str] = []

    def tenant_of(self: InProcessLambdaBackend, fn: Any, headers: Any) -> str | None:
        tenant = request_header(headers, TENANT_HEADER)
        if isolation_mode(fn) is None:
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

    def tenant_handler(
        self: InProcessLambdaBackend, fn: Any, handler: Handler, tenant: str
    ) -> Handler:
        key = (fn.function_name, tenant)
        with lock:
            if key not in environments:
                environments[key] = _load(fn, handler, tenant)
            return environments[key]

    def _load(fn: Any, handler: Handler, tenant: str) -> Handler:
        found = _module_of(handler)
        if found is None:  # no module of its own (an import failure): fails as it does
            return handler
        module_name, path = _checked(found, fn)
        digest = hashlib.sha256(f"{path}#{fn.function_name}#{tenant}".encode()).hexdigest()
        name = f"{module_name}@tenant-{digest[:12]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            return handler
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        modules.append(name)
        spec.loader.exec_module(module)  # the tenant environment's init phase
        attribute = str(fn.handler).rpartition(".")[2]
        return getattr(module, attribute)  # type: ignore[no-any-return]

    def forget() -> None:
        with lock:
            environments.clear()
            while modules:
                sys.modules.pop(modules.pop(), None)

    rt.on_close(forget)
    return {
        (InProcessLambdaBackend, "tenant_of"): tenant_of,
        (InProcessLambdaBackend, "tenant_handler"): tenant_handler,
    }


PATCHES = [
    Patch(
        name="lambda-tenant-isolation",
        kind=Kind.FEATURE,
        reason="A function with TenancyConfig PER_TENANT runs each tenant's invocations in "
        "an environment (handler module) of that tenant's own, gives the handler "
        "context.tenant_id, and refuses an Invoke without TenantId (moto ignores both).",
        test="localcloud/tests/test_lambda_tenancy.py"
        "::test_each_tenant_has_an_environment_of_its_own",
        build=_build,
    ),
]
