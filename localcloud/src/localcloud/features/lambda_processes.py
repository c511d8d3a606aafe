"""Each function runs in environments of its own, processes of the Lambda Python runtime
(localcloud/environments/): nothing of a function is imported into the local cloud, and no
shared ``os.environ`` is set.

An invocation of a function (or of a version: the code it was published with) runs its code
(its zip's directory: ``Processes.code``) in an environment of the function's pool
(``EnvironmentPool``) made for its configuration as it is now (UpdateFunctionConfiguration
reaches the next environment): its variables, the credentials of a session of its execution
role (its calls are judged by the IAM layer from them, iam/credentials.py), ``AWS_ENDPOINT_URL``
the cloud's served endpoint, its layers (on its path, /opt/python), its Timeout (the environment
is stopped), MemorySize and ReservedConcurrentExecutions, and the account's concurrency
(``LOCALCLOUD_ACCOUNT_CONCURRENCY``); past either: ``TooManyRequestsException``. The error
documents and ``Runtime.ImportModuleError`` are the runtime interface client's.

A function fault (``cloud.fail_next``, a gate) answers or holds the invocation before it reaches
an environment. A tenant-isolated function (features/lambda_tenancy.py) has a pool for each
tenant, whose environments are given the tenant (``context.tenant_id``); a durable function
(features/lambda_durable.py) is invoked by its durable execution, and its SDK calls the durable
execution APIs at the served endpoint. Each environment's lines go to the process's stdout and
to the function's log group, a stream per environment (features/lambda_logs.py).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

from moto.awslambda.utils import get_backend
from moto.core.exceptions import JsonRESTError

from localcloud.code import unpacked
from localcloud.environments import EnvironmentPool, Spec, TooManyRequests
from localcloud.environments.host_build import (
    POWERTOOLS_LAYER,
    host_builds,
    powertools_layer,
    requirements_build,
)
from localcloud.environments.runtimes import runtime_python
from localcloud.features.lambda_logs import FunctionLogs, logging_config
from localcloud.runtime import Runtime

__all__ = ["InvalidZipFile", "Processes", "processes_of"]

LOG = logging.getLogger(__name__)


def _layers(fn: Any, python: Path) -> list[Path]:
    """The content of each of the function's layers, in order (a template's own layer: the
    directory its ContentUri names; a layer published as a zip: unpacked; the public
    Powertools layer, which the local cloud stands in for: host_build.powertools_layer)."""
    backend = get_backend(fn.account_id, fn.region)
    found = []
    for layer in fn.layers or []:
        if POWERTOOLS_LAYER.match(layer["Arn"]):
            found.append(powertools_layer(python))
            continue
        body = getattr(backend.layers_versions_by_arn(layer["Arn"]), "code_bytes", b"")
        if body:  # an unbuilt layer's requirements (a layer of their own), then its files
            content = unpacked(body)
            found += [*filter(None, [requirements_build(content, python, layer=True)]), content]
    return found


def _reserved(fn: Any) -> int:
    """The concurrency the account's functions have reserved."""
    functions = get_backend(fn.account_id, fn.region).list_functions()
    return sum(int(f.reserved_concurrency or 0) for f in functions)


class InvalidZipFile(JsonRESTError):
    """Lambda's answer to an invocation whose deployment package it cannot unzip."""

    code = 502

    def __init__(self, message: str) -> None:
        super().__init__("InvalidZipFileException", message)


class Processes:
    """The pools of a cloud's functions, by the configuration they were made for."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.endpoint: str | None = None  # the served endpoint, set once the cloud serves
        #: the account's concurrent executions (AWS's default quota: 1000), settable; the
        #: functions without reserved concurrency share what the reservations leave
        self.account_concurrency = int(os.environ.get("LOCALCLOUD_ACCOUNT_CONCURRENCY", "1000"))
        self._unreserved = 0  # invocations running of functions without a reservation
        self._pools: dict[tuple[Any, ...], EnvironmentPool] = {}
        self.logs = FunctionLogs()
        self._code: dict[str, Path] = {}  # CodeSha256 -> its directory
        self._lock = threading.Lock()
        # one maker per configuration (a pool) or CodeSha256 (its directory)
        self._making: dict[tuple[Any, ...], threading.Lock] = {}

    def code(self, fn: Any) -> Path | None:
        """What an invocation of ``fn`` (moto's model of a version) runs, its LAMBDA_TASK_ROOT:
        the code of its zip (a deployed CodeUri's stand-in names its directory: code.py), None
        without code."""
        body = getattr(fn, "code_bytes", b"")
        if not body:
            return None
        with self._lock:
            if (code := self._code.get(fn.code_sha_256)) is not None:
                return code
            making = self._making.setdefault((fn.code_sha_256,), threading.Lock())
        with making:  # unpacked once (a second at most for a large zip): no other waits
            if (code := self._code.get(fn.code_sha_256)) is None:
                try:
                    code = self._code[fn.code_sha_256] = unpacked(body)
                except ValueError as exc:  # an entry outside the archive's directory
                    raise InvalidZipFile(f"{fn.function_name}: {exc}") from exc
        return code

    def _pool(self, fn: Any, code: Path, tenant: str | None) -> EnvironmentPool:
        variables = dict(fn.environment_vars or {})
        log_config = logging_config(fn)
        key = (fn.function_name, str(fn.version), fn.code_sha_256, json.dumps(variables),
               fn.timeout, fn.memory_size, fn.reserved_concurrency, fn.role,
               json.dumps(fn.layers, default=str), json.dumps(log_config), tenant)  # fmt: skip
        with self._lock:
            pool = self._pools.get(key)
            if pool is not None:
                return pool
            making = self._making.setdefault(key, threading.Lock())
        with making:  # its layers and host builds (minutes, the first time): no other waits
            pool = self._pools.get(key)
            if pool is None:
                credentials = self.runtime.authorizer.credentials.issue(fn.role, fn.function_name)
                python, unlike = runtime_python(fn.run_time)  # its Runtime's, else the nearest
                if unlike:
                    LOG.warning("%s: %s", fn.function_name, unlike)
                layers = _layers(fn, python)
                spec = Spec(
                    function_name=fn.function_name,
                    handler=str(fn.handler),
                    code_dir=code,
                    layers=layers,
                    host_builds=[
                        *host_builds([code, *layers], python),
                        *filter(None, [requirements_build(code, python)]),
                    ],
                    runtime_python=python,
                    variables=variables,
                    credentials={
                        "AWS_ACCESS_KEY_ID": credentials["AccessKeyId"],
                        "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
                        "AWS_SESSION_TOKEN": credentials["SessionToken"],
                    },
                    endpoint_url=self.endpoint,
                    region=fn.region,
                    account=fn.account_id,
                    version=str(fn.version),
                    timeout=float(fn.timeout or 3),
                    memory_mb=int(fn.memory_size or 128),
                    reserved_concurrency=fn.reserved_concurrency,
                    logging=log_config,
                )
                pool = EnvironmentPool(spec, tenant)
                with self._lock:
                    self._pools[key] = pool
            return pool

    def invoke(  # noqa: PLR0917 - lambda_runtime.py's invocation
        self, fn: Any, code: Path, body: Any, request_id: str,
        response_headers: Any, rec: dict[str, Any], tenant: str | None = None,
    ) -> bytes:  # fmt: skip
        """One invocation (``rec``, counted by the caller) in an environment of the function
        (of ``tenant``'s own, for a tenant-isolated function): its response (an error
        document with ``x-amz-function-error`` when it failed)."""
        payload = body if isinstance(body, bytes) else str(body or "").encode()
        pool = self._pool(fn, code, tenant)
        unreserved = int(fn.reserved_concurrency is None)
        with self._lock:
            if unreserved and self._unreserved >= self.account_concurrency - _reserved(fn):
                raise TooManyRequests()  # the account's ConcurrentInvocationLimitExceeded
            self._unreserved += unreserved
        try:
            result = pool.invoke(payload or b"{}", request_id)
        finally:
            with self._lock:
                self._unreserved -= unreserved
        for line in result.logs:  # the function's log: on this process's stdout
            sys.stdout.write(f"{line}\n")
        self.logs.write(fn, result.log_stream, result.logs)  # its log group, the environment's
        rec["outcome"] = result.error_type or "ok"
        # LogType Tail: the last 4 KB of the invocation's log (dropped otherwise: fixes/)
        tail = "".join(f"{line}\n" for line in result.logs).encode()[-4096:]
        response_headers["x-amz-log-result"] = base64.b64encode(tail).decode()
        if result.function_error:
            response_headers["x-amz-function-error"] = result.function_error
        return bytes(result.payload)

    def close(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.close()


def processes_of(runtime: Runtime) -> Processes:
    """The runtime's environment pools, made when first needed (closed with the runtime)."""
    if runtime.processes is None:
        runtime.processes = Processes(runtime)
        runtime.on_close(runtime.processes.close)
    return runtime.processes  # type: ignore[no-any-return]
