"""Work the local cloud does in the background (EventBridge deliveries, asynchronous Lambda
invocations): items in submission order, run on a thread pool, with the waiting helpers
tests and ``LocalCloud.settle`` use (thread-safe)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["WorkLog", "wait_on"]


class _Item(Protocol):
    finished: float | None


T = TypeVar("T", bound=_Item)


def wait_on(changed: threading.Condition, predicate: Callable[[], Any], timeout: float) -> Any:
    """Block until ``predicate()`` is truthy, re-checked whenever ``changed`` is notified and
    at least every 50 ms; its value, or the falsy value on timeout."""
    deadline = time.monotonic() + timeout
    with changed:
        while True:
            value = predicate()
            remaining = deadline - time.monotonic()
            if value or remaining <= 0:
                return value
            changed.wait(min(remaining, 0.05))


class WorkLog(Generic[T]):
    #: the pool's thread names; its size
    THREADS = "work"
    WORKERS = 8
    #: after shutdown, submitting raises (True) or starts a new pool (False)
    CLOSES = False

    def __init__(self) -> None:
        self._items: list[T] = []
        self._unfinished = 0  # submitted, not finished
        self._changed = threading.Condition()
        self._pool: ThreadPoolExecutor | None = None
        self.closed = False

    def submit(self, item: T, work: Callable[[T], None]) -> None:
        with self._changed:
            if self.closed:
                raise RuntimeError("the local cloud is stopping")
            self._items.append(item)
            self._unfinished += 1
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.WORKERS, thread_name_prefix=self.THREADS)
            pool = self._pool
        pool.submit(self._run, item, work)

    def _run(self, item: T, work: Callable[[T], None]) -> None:
        try:
            self._work(item, work)
        finally:
            item.finished = time.monotonic()
            with self._changed:
                self._unfinished -= 1
                self._changed.notify_all()

    def _work(self, item: T, work: Callable[[T], None]) -> None:
        work(item)

    def all(self) -> list[T]:
        with self._changed:
            return list(self._items)

    def find(self, predicate: Callable[[T], bool]) -> list[T]:
        return [item for item in self.all() if predicate(item)]

    def wait(self, predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
        """``wait_on`` this log: re-checked after every finished item."""
        return wait_on(self._changed, predicate, timeout)

    def drain(self, timeout: float = 30.0) -> None:
        """Wait until every item has finished; TimeoutError otherwise."""
        if not self.wait(lambda: self._unfinished == 0, timeout):
            pending = sum(1 for item in self.all() if item.finished is None)
            raise TimeoutError(f"{pending} {self.THREADS} items still pending after {timeout}s")

    def shutdown(self) -> None:
        with self._changed:
            self.closed = self.CLOSES
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=self.CLOSES)
