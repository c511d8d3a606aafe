"""Fix: a first burst of concurrent calls to a service.

AWS answers every call of a burst. moto routes a REST request with the service's router,
made on first use: ``get_service_router`` (moto/core/routing.py:552), a ``functools.cache``,
and in it a werkzeug ``Map`` per protocol (``ServiceOperationRouter._get_router``), neither
under a lock. Every thread that asks before the first one is done makes its own: each loads
the service's botocore model (50 ms of CPU: 100 loads of Lambda's at the first burst of
executions of one test, a third of its CPU), and werkzeug compiles each rule with ``ast``,
which on Python 3.11 failed a call of the burst now and then with ``SystemError: AST
constructor recursion depth mismatch``. Here both are made by one thread, under a lock; the
others wait, then use it. (The served path, features/role_sessions.py, reads the function
from moto.core.routing: replaced there too.)
"""

from __future__ import annotations

import threading
from typing import Any

import moto.core.responses as moto_responses
from moto.core import routing
from moto.core.routing import ServiceOperationRouter

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_LOCK = threading.RLock()
_GET_SERVICE_ROUTER = moto_responses.get_service_router
_GET_ROUTER = ServiceOperationRouter._get_router


def _service_router(service_name: str) -> Any:
    with _LOCK:
        return _GET_SERVICE_ROUTER(service_name)


def _protocol_router(self: ServiceOperationRouter, protocol: str) -> Any:
    if protocol in self._routers:
        return self._routers[protocol]
    with _LOCK:
        return _GET_ROUTER(self, protocol)


def _build(rt: Runtime) -> Targets:
    return {
        (moto_responses, "get_service_router"): _service_router,
        (routing, "get_service_router"): _service_router,  # the served path's (role_sessions)
        (ServiceOperationRouter, "_get_router"): _protocol_router,
    }


PATCHES = [
    Patch(
        name="service-routers-once",
        kind=Kind.FIX,
        reason="A service's request router is made by one thread, not by every call of a first "
        "burst at once (moto: each loaded the model, and werkzeug's concurrent rule compiles "
        "failed calls with SystemError on Python 3.11).",
        test="localcloud/tests/test_service_routers.py"
        "::test_a_first_burst_of_calls_is_answered_from_one_model_load",
        build=_build,
        upstream="not reported yet (moto core/routing.py get_service_router, _get_router)",
    )
]
