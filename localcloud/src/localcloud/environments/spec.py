"""What an environment is made of (:class:`Spec`), what an invocation returns (:class:`Result`),
and the throttle (:class:`TooManyRequests`)."""

from __future__ import annotations

import json
import math
import os
import secrets
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

__all__ = [
    "RUNTIME",
    "Done",
    "Result",
    "RuntimeMissing",
    "Spec",
    "TooManyRequests",
    "default_runtime_python",
]

#: the Lambda runtime the environments are: its Python and awslambdaric (pyproject.toml's
#: ``lambda-runtime`` group, installed into .venv-lambda by ``make bootstrap``)
RUNTIME = "python3.13"


def default_runtime_python() -> Path:
    """``LOCALCLOUD_RUNTIME_PYTHON`` (a Python with awslambdaric), else ``.venv-lambda/bin/
    python`` of the checkout this package runs from (``make bootstrap`` makes it), or of the
    current directory."""
    chosen = os.environ.get("LOCALCLOUD_RUNTIME_PYTHON")
    if chosen:
        return Path(chosen)
    for root in (*Path(__file__).resolve().parents, Path.cwd()):
        candidate = root / ".venv-lambda" / "bin" / "python"
        if candidate.exists():
            return candidate
    return Path.cwd() / ".venv-lambda" / "bin" / "python"


class RuntimeMissing(RuntimeError):
    """No Lambda Python runtime to run the functions in."""

    def __init__(self, python: Path) -> None:
        self.python = python
        super().__init__(
            f"the functions run in the Lambda Python runtime, and there is none at {python}: "
            "`make bootstrap` makes it (.venv-lambda), or set LOCALCLOUD_RUNTIME_PYTHON to a "
            "Python with awslambdaric and boto3 installed"
        )


@dataclass(frozen=True)
class Spec:
    """One function version's environments: what Lambda gives each of them."""

    function_name: str
    handler: str  # "module.function", as the function's Handler
    code_dir: Path  # LAMBDA_TASK_ROOT: the function's code, first on the Python path
    layers: Sequence[Path] = ()  # each layer's content (its python/ is on the path), in order
    host_builds: Sequence[Path] = ()  # packages of code_dir or layers built for this machine
    variables: Mapping[str, str] = field(default_factory=dict)  # the function's Environment
    credentials: Mapping[str, str] = field(default_factory=dict)  # AWS_ACCESS_KEY_ID, ...
    endpoint_url: str | None = None  # AWS_ENDPOINT_URL: the local cloud
    region: str = "us-east-1"
    account: str = "123456789012"
    version: str = "$LATEST"
    timeout: float = 3.0  # seconds (Timeout)
    memory_mb: int = 128  # MemorySize
    reserved_concurrency: int | None = None  # ReservedConcurrentExecutions (None: unreserved)
    runtime_python: Path = field(default_factory=default_runtime_python)
    #: LoggingConfig: LogFormat (Text, JSON), ApplicationLogLevel, SystemLogLevel
    logging: Mapping[str, str] = field(default_factory=dict)

    @property
    def json_logs(self) -> bool:
        return str(self.logging.get("LogFormat", "Text")).upper() == "JSON"

    @property
    def function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{self.function_name}"

    def python_path(self) -> list[str]:
        """The function's part of sys.path, as Lambda orders it: the task root, then the layers
        (/opt/python/lib/pythonX.Y/site-packages, /opt/python; a later layer's files win, as
        they overwrite an earlier one's in /opt); before them, the host builds (host_build.py)."""
        site = f"python/lib/python{RUNTIME.removeprefix('python')}/site-packages"
        path = [*map(str, self.host_builds), str(self.code_dir)]
        for layer in reversed(self.layers):
            path += [str(layer / site), str(layer / "python")]
        return path

    def lambda_variables(self, *, api: str, tmp: Path, runtime_dir: Path) -> dict[str, str]:
        """Every variable an environment starts with: the reserved ones Lambda defines
        ("Defined runtime environment variables"), the credentials, the endpoint, and the
        function's own (which cannot override the reserved ones)."""
        # a new environment's log stream, as Lambda names it: 2026/01/31/[$LATEST]<32 hex>
        stream = time.strftime(f"%Y/%m/%d/[{self.version}]", time.gmtime()) + secrets.token_hex(16)
        reserved = {
            "_HANDLER": self.handler,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{RUNTIME}",
            "AWS_LAMBDA_FUNCTION_NAME": self.function_name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": self.version,
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{self.function_name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": stream,
            "AWS_LAMBDA_RUNTIME_API": api,
            "LAMBDA_TASK_ROOT": str(self.code_dir),
            "LAMBDA_RUNTIME_DIR": str(runtime_dir),
            "TZ": ":UTC",
        }
        unreserved = {
            "LANG": "en_US.UTF-8",
            "PATH": f"{Path(self.runtime_python).parent}:/usr/local/bin:/usr/bin:/bin",
            "PYTHONPATH": str(runtime_dir),
            "TMPDIR": str(tmp),  # /tmp of this environment (tempfile, mkstemp ...)
        }
        if self.endpoint_url:
            unreserved["AWS_ENDPOINT_URL"] = self.endpoint_url
        if self.json_logs:  # the runtime writes its logging records as JSON, at this level
            reserved["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
            reserved["AWS_LAMBDA_LOG_LEVEL"] = self.logging.get("ApplicationLogLevel", "INFO")
        return {**unreserved, **dict(self.variables), **dict(self.credentials), **reserved}

    def runtime_dir(self) -> Path:
        """LAMBDA_RUNTIME_DIR: the runtime's site-packages (awslambdaric, boto3)."""
        lib = Path(self.runtime_python).parent.parent / "lib" / RUNTIME / "site-packages"
        return lib if lib.is_dir() else Path(sys.prefix)


def timestamp() -> str:
    """Now, as Lambda's events write it: 2026-11-29T09:00:00.123Z."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Done:
    """An invocation's end, as Lambda reports it: its REPORT line, or (JSON logs, the
    Telemetry API) its platform events' records."""

    request_id: str
    version: str
    status: str  # "" (success), "timeout", "error\tError Type: ..." (REPORT's Status)
    error_type: str | None
    produced: int  # the response's bytes
    metrics: dict[str, float]  # durationMs, billedDurationMs, memorySizeMB, maxMemoryUsedMB ...

    @classmethod
    def of(  # noqa: PLR0917 - an invocation's measures
        cls, spec: Spec, request_id: str, status: str, error_type: str | None, produced: int,
        duration: float, memory: int, init_ms: float | None,
    ) -> Done:  # fmt: skip
        metrics = {"durationMs": round(duration, 2), "memorySizeMB": spec.memory_mb,
                   # the INIT phase is billed (since 2025-08)
                   "billedDurationMs": math.ceil(duration + (init_ms or 0)),
                   "maxMemoryUsedMB": memory}  # fmt: skip
        if init_ms is not None:
            metrics["initDurationMs"] = round(init_ms, 2)
        return cls(request_id, spec.version, status, error_type, produced, metrics)

    def report(self) -> str:
        m = self.metrics
        return (
            f"REPORT RequestId: {self.request_id}\tDuration: {m['durationMs']:.2f} ms\t"
            f"Billed Duration: {m['billedDurationMs']:.0f} ms\t"
            f"Memory Size: {m['memorySizeMB']:.0f} MB\t"
            f"Max Memory Used: {m['maxMemoryUsedMB']:.0f} MB"
            + (f"\tInit Duration: {m['initDurationMs']:.2f} ms" if "initDurationMs" in m else "")
            + (f"\tStatus: {self.status}" if self.status else "")
        )

    def records(self) -> dict[str, dict[str, object]]:
        """platform.start, .runtimeDone and .report (the Telemetry API's schema)."""
        done: dict[str, object] = {"requestId": self.request_id, "status": "success"}
        if self.error_type:
            status = self.status.partition("\t")[0] or "failure"
            done |= {"status": status, "errorType": self.error_type}
        runtime = {"durationMs": self.metrics["durationMs"], "producedBytes": self.produced}
        return {
            "platform.start": {"requestId": self.request_id, "version": self.version},
            "platform.runtimeDone": {**done, "metrics": runtime},
            "platform.report": {**done, "metrics": dict(self.metrics)},
        }

    def framed(self, lines: list[str], spec: Spec) -> list[str]:
        """``lines`` between Lambda's START and END / REPORT lines; with the ``spec``'s JSON
        logs, its platform events as JSON objects (none at SystemLogLevel WARN)."""
        if not spec.json_logs:
            start = f"START RequestId: {self.request_id} Version: {self.version}"
            return [start, *lines, f"END RequestId: {self.request_id}", self.report()]
        if str(spec.logging.get("SystemLogLevel", "INFO")).upper() == "WARN":
            return lines
        now = timestamp()
        start, done, report = (
            json.dumps({"time": now, "type": kind, "record": record})
            for kind, record in self.records().items()
        )
        return [start, *lines, done, report]


@dataclass
class Result:
    """One invocation."""

    payload: bytes  # what the function returned, or Lambda's error document
    function_error: str | None  # "Unhandled" (Invoke's X-Amz-Function-Error) or None
    error_type: str | None  # errorType (Runtime.ImportModuleError, Sandbox.Timedout...) or None
    logs: list[str]  # the runtime's output, between Lambda's START and END / REPORT lines
    init_duration_ms: float | None  # the Init Duration, when this invocation started it
    duration_ms: float
    pid: int  # the environment's process (which one ran it)
    log_stream: str = ""  # the environment's log stream (its AWS_LAMBDA_LOG_STREAM_NAME)


class TooManyRequests(Exception):
    """Lambda's TooManyRequestsException (429): the function's reserved concurrency is in use."""

    reason = "ReservedFunctionConcurrentInvocationLimitExceeded"

    def __init__(self, message: str = "Rate Exceeded.") -> None:
        super().__init__(message)
        self.message = message
