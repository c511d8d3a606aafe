"""The environments of one function: reused while warm, a new one when every one is busy, up to
the function's reserved concurrency (then TooManyRequestsException, as Lambda throttles).
A pool of ``tenant_id`` holds the environments of that tenant of a tenant-isolated function:
their runtime is given the tenant with each invocation (``context.tenant_id``)."""

from __future__ import annotations

import threading

from localcloud.environments.environment import Environment
from localcloud.environments.spec import Result, Spec, TooManyRequests

__all__ = ["EnvironmentPool"]


class EnvironmentPool:
    def __init__(self, spec: Spec, tenant_id: str | None = None) -> None:
        self.spec, self.tenant_id = spec, tenant_id
        self._lock = threading.Lock()
        self._idle: list[Environment] = []  # warm, the most recently used last
        self._busy = 0
        self._closed = False

    @property
    def size(self) -> int:
        """Environments alive (idle or running an invocation)."""
        with self._lock:
            return len(self._idle) + self._busy

    def _take(self) -> Environment | None:
        """A warm environment (None: start a new one). Raises TooManyRequests at the limit."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"the environments of {self.spec.function_name} are closed")
            while self._idle:
                environment = self._idle.pop()
                if not environment.dead:
                    self._busy += 1
                    return environment
            limit = self.spec.reserved_concurrency
            if limit is not None and self._busy >= limit:
                raise TooManyRequests()
            self._busy += 1
            return None

    def invoke(
        self, event: bytes, request_id: str | None = None, deadline_ms: int | None = None
    ) -> Result:
        environment = self._take()
        try:
            if environment is None:
                environment = Environment(self.spec)
                environment.api.tenant_id = self.tenant_id
            return environment.invoke(event, request_id, deadline_ms)
        finally:
            with self._lock:
                self._busy -= 1
                if environment is not None and not environment.dead:
                    if self._closed:
                        environment.stop()
                    else:
                        self._idle.append(environment)

    def close(self) -> None:
        """Stop every idle environment; the busy ones stop when their invocation ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for environment in idle:
            environment.stop()

    def __enter__(self) -> EnvironmentPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
