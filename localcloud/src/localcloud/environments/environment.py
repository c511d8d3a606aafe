"""One execution environment: a process running the Lambda runtime interface client
(awslambdaric) against a Runtime API of its own, one invocation at a time.

``Environment(spec)`` starts the process (init); :meth:`Environment.invoke` hands it an event
and waits, until the function's deadline, for the runtime's response or error. Past the
deadline the process group is killed (nothing the handler would do afterwards happens):
Sandbox.Timedout, "Task timed out after N.00 seconds" in the logs. MemorySize is a limit on the
process's resident memory (not the processes a handler starts'), read while an invocation runs:
past it the process is killed, as Lambda's sandbox is (Runtime.OutOfMemory, "Runtime exited with
error: signal: killed"). Either ends the environment; so does an init error (the handler's
module does not import, ...), whose invocation gets the runtime's own error document. The log
lines are the process's output during the invocation, between Lambda's START and END / REPORT.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path

from localcloud.environments.extensions import Extensions, extension_files
from localcloud.environments.host_build import cache_dir
from localcloud.environments.launcher import LEARNED, LogPipe, Process, fork_server
from localcloud.environments.runtime_api import Invocation, RuntimeApi, document
from localcloud.environments.spec import Done, Result, Spec, timestamp

__all__ = ["INIT_TIMEOUT", "Environment"]

#: Lambda's limit on an on-demand environment's init phase (seconds)
INIT_TIMEOUT = 10.0
#: how often a running invocation's resident memory is read against its MemorySize (seconds)
MEMORY_POLL = 0.05
#: a runtime that ended by itself (its fork server reaps it: the exit status is not known here)
_EXITED = "Error: Runtime exited without providing a reason"


def _max_memory_mb(pid: int, field: str = "VmHWM:") -> int | None:
    """The process's peak resident memory in MB (``VmRSS:``: its current)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field):
                return math.ceil(int(line.split()[1]) / 1024)
    except (OSError, ValueError, IndexError):
        pass
    return None


class Environment:
    """One process of the function, reused by invocations while it lives."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.api = RuntimeApi()
        self.tmp = Path(tempfile.mkdtemp(prefix=f"lambda-{spec.function_name[:40]}-"))
        self.dead = False
        self._cold = True
        self._logs = LogPipe()
        runtime_dir = spec.runtime_dir()
        env = spec.lambda_variables(api=self.api.address, tmp=self.tmp, runtime_dir=runtime_dir)
        self.log_stream = env["AWS_LAMBDA_LOG_STREAM_NAME"]
        path = spec.python_path()
        python = Path(spec.runtime_python)
        self._started = time.monotonic()
        #: its path's imports, kept (code and layers are directories named by their content): the
        #: next process's first environments fork from a server that preloaded them
        key = hashlib.sha256(f"{python}\n{json.dumps(path)}".encode()).hexdigest()[:16]
        self._imports = _pruned(cache_dir("imports")) / f"{key}.json"
        self._report: Path | None = None  # where it reports its library imports, if first
        self._function = ""  # its fork server's configuration (_launch)
        #: its layers' extensions, started (and registered) before its runtime, as Lambda does
        self.extensions: Extensions | None = None
        try:
            if files := extension_files(spec.layers):
                self.extensions = Extensions(files, env, path, spec.account)
                self.api.extensions = self.extensions
            failed = self.extensions.begin(INIT_TIMEOUT) if self.extensions else None
            if failed:  # no runtime is started
                self.api.fail_init(document(*failed), failed[0])
            self.process: Process = Process.never() if failed else self._launch(env, path, key)
        except BaseException:
            os.close(self._logs.write_fd)
            os.close(self._logs.read_fd)
            if self.extensions is not None:
                self.extensions.shutdown("failure")
            self.api.stop()
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        self.pid = self.process.pid
        self.api.memory = lambda: _max_memory_mb(self.pid)
        os.close(self._logs.write_fd)  # the process has it
        self._logs.thread.start()
        threading.Thread(target=self._watch_exit, name="environment-exit", daemon=True).start()

    def _launch(self, env: dict[str, str], path: list[str], key: str) -> Process:
        """The runtime's process, forked from its configuration's fork server."""
        spec, python = self.spec, Path(self.spec.runtime_python)
        self._function = _function_server(spec, env, path)
        learned = LEARNED.get(self._function)
        if learned is None:  # the first environment reports what it imports
            self._report = self._imports.with_name(f"{key}.{self.tmp.name}")
            with contextlib.suppress(OSError, ValueError):
                learned = json.loads(self._imports.read_text(encoding="utf-8"))
                os.utime(self._imports)  # used: kept (_pruned)
        origin = None if _own_sdk(path) else RUNTIME_SDK  # it has boto3 imported
        if learned is None:
            server = fork_server(python, origin or "")
        else:
            preload = {**json.loads(self._function), **learned}
            server = fork_server(python, json.dumps(preload), origin)
        return server.launch(
            spec.handler, env, spec.code_dir, path, self._logs.write_fd, self._report
        )

    def _watch_exit(self) -> None:
        self._logs.closed.wait()
        self.api.changed.set()
        self.api.initialized.set()

    def _wait_ready(self) -> float:
        """The Init Duration (ms), once the init has ended (the runtime's first /next, and
        every extension's)."""
        until = time.monotonic() + INIT_TIMEOUT
        self.api.initialized.wait(INIT_TIMEOUT)
        extensions = self.extensions
        if extensions is not None and self.api.init_error is None:
            extensions.wait_idle(max(0.0, until - time.monotonic()))
            if extensions.init_error is not None:  # an extension's init/error
                self.api.fail_init(document(*extensions.init_error), extensions.init_error[0])
        init_ms = ((self.api.init_done_at or time.monotonic()) - self._started) * 1000
        if extensions is not None:
            extensions.initialized(init_ms, self.api.init_error is None)
        return init_ms

    def invoke(
        self, event: bytes, request_id: str | None = None, deadline_ms: int | None = None
    ) -> Result:
        spec = self.spec
        request_id = request_id or str(uuid.uuid4())
        cold, self._cold = self._cold, False
        init_ms = self._wait_ready() if cold else None
        logs = self._logs.take()
        start = time.monotonic()
        if deadline_ms is None:
            deadline_ms = int(time.time() * 1000 + spec.timeout * 1000)
        trace = f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]};Sampled=0"
        invocation = Invocation(request_id, event, deadline_ms, spec.function_arn, trace)
        error_type: str | None = None
        status = ""
        memory: int | None = None  # its peak, when read before it was stopped
        last: list[str] = []  # Lambda's own line after the runtime's
        if self.api.init_error is not None or not self.api.initialized.is_set() or self._exited():
            payload, error_type, status = self._init_failure()
        else:
            self._submit(invocation)
            over_memory = False  # past MemorySize: stopped, as Lambda's sandbox is
            while not invocation.done.is_set() and not self._exited():
                left = deadline_ms / 1000 - time.time()
                over_memory = (_max_memory_mb(self.pid, "VmRSS:") or 0) > spec.memory_mb
                if left <= 0 or over_memory:
                    break
                self.api.changed.wait(min(left, MEMORY_POLL))
                self.api.changed.clear()
            if invocation.done.is_set():
                payload = invocation.payload
                if invocation.error_type is not None:
                    error_type = _error_type(payload) or invocation.error_type
            elif self._exited():
                error_type, status = "Runtime.ExitError", "error\tError Type: Runtime.ExitError"
                payload = document(error_type, f"RequestId: {request_id} {_EXITED}")
            else:
                memory = _max_memory_mb(self.pid)
                self.stop()
                error_type, status, reason = (
                    ("Runtime.OutOfMemory", "error\tError Type: Runtime.OutOfMemory",
                     "Runtime exited with error: signal: killed") if over_memory
                    else ("Sandbox.Timedout", "timeout",
                          f"Task timed out after {spec.timeout:.2f} seconds")
                )  # fmt: skip
                payload = document(error_type, f"RequestId: {request_id} Error: {reason}")
                line = f"RequestId: {request_id} Error: {reason}" if over_memory else reason
                last.append(f"{timestamp()} {request_id} {line}")
        logs += [*self._logs.take(), *last]
        self._learn()
        duration = (time.monotonic() - start) * 1000
        if status == "timeout":
            duration = max(duration, spec.timeout * 1000)
        memory = (  # (init_memory: an init that failed, read before the runtime exited)
            memory or self.api.init_memory or (None if self.dead else _max_memory_mb(self.pid)) or 0
        )
        done = Done.of(spec, request_id, status, error_type, len(payload),
                       duration, memory, init_ms)  # fmt: skip
        extension_logs = self.extensions.invoked(done, logs) if self.extensions else []
        return Result(
            payload=payload,
            function_error="Unhandled" if error_type else None,
            error_type=error_type,
            logs=done.framed([*logs, *extension_logs], spec),
            init_duration_ms=init_ms,
            duration_ms=duration,
            pid=self.pid,
            log_stream=self.log_stream,
        )

    def _submit(self, invocation: Invocation) -> None:
        """The invocation to the runtime (and INVOKE to the extensions, once they wait)."""
        if self.extensions is not None:
            self.extensions.invoke(invocation.request_id, invocation.deadline_ms,
                                   invocation.function_arn, invocation.trace_id,
                                   self.spec.version)  # fmt: skip
        self.api.submit(invocation)

    def _learn(self) -> None:
        """What the first environment of its configuration imported, for the next ones."""
        report, self._report = self._report, None
        if report is not None:
            with contextlib.suppress(OSError, ValueError):
                learned = json.loads(report.read_text(encoding="utf-8"))
                LEARNED[self._function] = learned
                report.replace(self._imports)  # whole, for a reader in another process
            report.unlink(missing_ok=True)

    def _exited(self) -> bool:
        return self._logs.closed.is_set()

    def _init_failure(self) -> tuple[bytes, str, str]:
        """The invocation of an environment whose init failed: the runtime's error document
        (Runtime.ImportModuleError, ...); the environment is ended."""
        if self.api.init_error is not None:
            payload, header_type = self.api.init_error
            error_type = _error_type(payload) or header_type
        elif not self._exited():
            error_type = "Sandbox.Timedout"
            payload = document(error_type, f"Init timed out after {INIT_TIMEOUT:.2f} seconds")
        else:
            error_type = "Runtime.ExitError"
            payload = document(error_type, _EXITED)
        self.stop()
        return payload, error_type, f"error\tError Type: {error_type}"

    def stop(self) -> None:
        """End the environment: kill its process group, close its Runtime API, remove its /tmp."""
        if self.dead:
            return
        self.dead = True
        if self.extensions is not None:
            self.extensions.shutdown()
        self.process.kill()
        self.api.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self._report is not None:  # a first environment that never finished its init
            self._report.unlink(missing_ok=True)


#: variables that differ between two environments of one configuration (not preloaded with)
_PER_ENVIRONMENT = frozenset({
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
    "AWS_LAMBDA_LOG_STREAM_NAME", "AWS_LAMBDA_RUNTIME_API", "TMPDIR",
})  # fmt: skip


#: the fork server of a configuration's first environment: the runtime's SDK imported (boto3
#: reads no variable when imported), unless the function brings a boto3 or botocore of its own
RUNTIME_SDK = json.dumps({"modules": ["boto3"]})


@functools.cache
def _pruned(imports: Path) -> Path:
    """The cache's imports/, made, without the records no environment used for a week (once
    per process: each edit of a function's code is a new path, and a new record)."""
    week_ago = time.time() - 7 * 86400
    with contextlib.suppress(OSError):
        imports.mkdir(parents=True, exist_ok=True)
        for record in imports.iterdir():
            if record.stat().st_mtime < week_ago:
                record.unlink(missing_ok=True)
    return imports


def _own_sdk(path: list[str]) -> bool:
    return any((Path(p) / name).is_dir() for p in path for name in ("boto3", "botocore"))


def _function_server(spec: Spec, env: dict[str, str], path: list[str]) -> str:
    """The fork server of the function's configuration: the library part of its path (all
    but its code) and the variables its environments share (the key of LEARNED too)."""
    shared = {k: v for k, v in env.items() if k not in _PER_ENVIRONMENT}
    libraries = [p for p in path if p != str(spec.code_dir)]
    return json.dumps({"path": libraries, "env": shared}, sort_keys=True)


def _error_type(payload: bytes) -> str | None:
    try:
        document = json.loads(payload)
    except ValueError:
        return None
    value = document.get("errorType") if isinstance(document, dict) else None
    return str(value) if value else None
