"""The memory figures of scripts/bench_large.py: ``RssPeak``, the peak resident-set growth of
the process while a run lasts and while each function runs (VmHWM, reset through
/proc/self/clear_refs), and ``LambdaMemory``, which wraps the local cloud's Lambda handlers and
samples the live tracemalloc blocks the functions' own code allocated (bench_large.py's
docstring says how to read both).
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from localcloud.cloud import LocalCloud

CODE_MARK = f"{os.sep}ingest_pipeline{os.sep}"
CLOUD_MARKS = (f"{os.sep}moto{os.sep}", f"{os.sep}responses{os.sep}", f"{os.sep}werkzeug{os.sep}")


def _rss_kib(field_name: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class RssPeak:
    """Peak RSS growth of this process while a run lasts, and while each function runs
    (Linux: VmHWM, reset through /proc/self/clear_refs; every reading before a reset is folded
    into the run's peak). An invocation's figure is its peak over the RSS when it started: the
    whole process meanwhile, so approximate when two invocations overlap."""

    def __init__(self) -> None:
        self.growth_mib: float | None = None
        self.how = ""
        self.by_function: dict[str, float] = {}
        self._lock = threading.Lock()
        self._resettable = False
        self._max_kib = 0

    def _reset(self) -> int | None:
        """Fold VmHWM into the run's peak, reset it; the RSS now (KiB)."""
        hwm = _rss_kib("VmHWM")
        if hwm is not None:
            self._max_kib = max(self._max_kib, hwm)
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := the current RSS
        return _rss_kib("VmRSS")

    @contextlib.contextmanager
    def invocation(self, name: str) -> Iterator[None]:
        if not self._resettable:
            yield
            return
        with self._lock:
            start = self._reset()
        try:
            yield
        finally:
            with self._lock:
                hwm = _rss_kib("VmHWM")
                if start is not None and hwm is not None:
                    growth = (hwm - start) / 1024
                    self.by_function[name] = max(self.by_function.get(name, growth), growth)
                self._reset()

    @contextlib.contextmanager
    def measure(self) -> Iterator[None]:
        gc.collect()
        start_rss: int | None = None
        with contextlib.suppress(OSError):
            start_rss = self._reset()
            self._resettable = start_rss is not None
        start_max = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        try:
            yield
        finally:
            with self._lock:
                self._resettable = self._resettable and start_rss is not None
                if self._resettable and start_rss is not None:
                    self._reset()
                    self.growth_mib, self.how = (self._max_kib - start_rss) / 1024, "VmHWM"
                else:  # only shows growth above the process's earlier peak
                    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                    self.growth_mib, self.how = (peak - start_max) / 1024, "ru_maxrss"
                self._resettable = False


def _is_code(frames: Any) -> bool:
    """Frames innermost first (tracemalloc's raw traces): the functions' allocation?"""
    for filename, _ in frames:
        if CODE_MARK in filename:
            return True
        if any(mark in filename for mark in CLOUD_MARKS):
            return False
    return False


class LambdaMemory:
    """tracemalloc while a run lasts: the exact peak of everything traced, and a sampled peak
    of the blocks the functions' code allocated, overall and per function."""

    def __init__(self, cloud: LocalCloud, sample_ms: float, frames: int, rss: RssPeak) -> None:
        self.cloud = cloud
        self.rss = rss
        self.interval = sample_ms / 1000
        self.frames = frames
        self.code_peak = 0
        self.by_function: dict[str, int] = {}
        self.invocations: dict[str, list[float]] = {}
        self.traced_peak = 0
        self.samples = 0
        self.sample_seconds = 0.0
        self._running: list[str] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._originals: dict[str, Any] = {}
        self._files: dict[str, bool] = {}

    def _wrap(self, name: str, handler: Any) -> Any:
        def run(event: Any, context: Any) -> Any:
            started = time.perf_counter()
            with self._lock:
                self._running.append(name)
            try:
                with self.rss.invocation(name):
                    return handler(event, context)
            finally:
                with self._lock:
                    self._running.remove(name)
                    self.invocations.setdefault(name, []).append(time.perf_counter() - started)

        return run

    def _code_bytes(self) -> int:
        """Bytes of the live blocks the functions' code allocated (one pass over the raw
        traces that take_snapshot wraps: (domain, size, frames innermost first, nframe))."""
        traces = tracemalloc._get_traces()  # type: ignore[attr-defined]
        total = 0
        if self.frames == 1:  # the common case, kept cheap: one dict lookup per block
            files = self._files
            for _, size, frames, _ in traces:
                filename = frames[0][0]
                hit = files.get(filename)
                if hit is None:
                    hit = files[filename] = CODE_MARK in filename
                if hit:
                    total += size
        else:
            total = sum(t[1] for t in traces if _is_code(t[2]))
        return total

    def _sample(self) -> None:
        interval = self.interval
        while not self._stop.wait(interval):
            started = time.perf_counter()
            total = self._code_bytes()
            with self._lock:
                running = list(self._running)
            self.code_peak = max(self.code_peak, total)
            for name in running:
                self.by_function[name] = max(self.by_function.get(name, 0), total)
            cost = time.perf_counter() - started
            self.samples += 1
            self.sample_seconds += cost
            # The sampler holds the interpreter lock while it counts: at most a fifth of it.
            interval = max(self.interval, 4 * cost)

    @contextlib.contextmanager
    def measure(self, traced: bool) -> Iterator[None]:
        handlers = self.cloud.handlers
        self._originals = dict(handlers)
        for name, handler in self._originals.items():
            handlers[name] = self._wrap(name, handler)
        sampler = threading.Thread(target=self._sample, name="bench-memory", daemon=True)
        base = 0
        if traced:
            gc.collect()
            tracemalloc.start(self.frames)
            base = tracemalloc.get_traced_memory()[0]
            sampler.start()
        try:
            yield
        finally:
            if traced:
                self._stop.set()
                sampler.join()
                self.traced_peak = tracemalloc.get_traced_memory()[1] - base
                tracemalloc.stop()
            handlers.update(self._originals)
