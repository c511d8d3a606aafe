"""Lambda execution environments as processes, as Lambda runs a Python function.

Each environment is a process of the Lambda Python runtime (``.venv-lambda``: Python 3.13,
awslambdaric 4.2.2, the runtime's boto3; ``make bootstrap`` makes it) running the real
runtime interface client, ``awslambdaric``, against a Runtime API the local cloud serves for
that environment alone (runtime_api.py). So handler loading and the error documents
(errorType, errorMessage, stackTrace; Runtime.ImportModuleError, Runtime.HandlerNotFound) are
Lambda's own. The process gets Lambda's variables and Python path (spec.py: nothing of the
local cloud) and a TMPDIR of its own (removed with it).
A function whose Runtime is another ``python3.x``: runtimes.py.

Use::

    from localcloud.environments import EnvironmentPool, Spec, TooManyRequests

    spec = Spec(
        function_name="Fn",
        handler="app.handler",
        code_dir=Path("src"),
        variables={"TABLE": "t"},
        credentials={"AWS_ACCESS_KEY_ID": "...", "AWS_SECRET_ACCESS_KEY": "..."},
        endpoint_url="http://127.0.0.1:4566",
        timeout=3,
        memory_mb=128,
        reserved_concurrency=None,
    )
    with EnvironmentPool(spec) as pool:
        result = pool.invoke(b'{"a": 1}', request_id, deadline_ms)  # deadline: epoch ms or None
        result.payload, result.function_error, result.error_type, result.logs
        result.init_duration_ms  # a cold start's Init Duration, else None

New environments are forked from a fork server (launcher.py, _forkserver.py): about 20 ms of
wall and 10 ms of CPU to a new environment's first /next on a 2-core machine, against 60 ms
and 50 ms for a new Python (``scripts/bench_lambda_environments.py``). The next environments of
a function configuration (in this cloud, the next one, or the next process: what its first
environment imported is kept in the cache's imports/) are forked from a server of that
configuration that imported those libraries and loaded the SDK data its clients used: their
init runs the function's own modules, and their Init Duration leaves the libraries out.

Not like Lambda: /tmp is TMPDIR (a handler that writes to the literal path "/tmp/x" shares the
machine's /tmp).
"""

from __future__ import annotations

from localcloud.environments.environment import Environment
from localcloud.environments.pool import EnvironmentPool
from localcloud.environments.spec import (
    Result,
    RuntimeMissing,
    Spec,
    TooManyRequests,
    default_runtime_python,
)

__all__ = [
    "Environment",
    "EnvironmentPool",
    "Result",
    "RuntimeMissing",
    "Spec",
    "TooManyRequests",
    "default_runtime_python",
]
