"""A function's log in CloudWatch Logs, as Lambda writes it.

Lambda sends what a function writes (stdout, stderr), framed by its own ``START``, ``END`` and
``REPORT`` lines, to the function's log group (``LoggingConfig.LogGroup``, else
``/aws/lambda/<function name>``; created at the first invocation when the template does not
create it), in a log stream of the execution environment that ran the invocation (named as
Lambda names them: ``2026/01/31/[$LATEST]<32 hex digits>``), one event per line. So ``aws logs
tail``, ``filter-log-events``, ``sam logs`` read a function's output here as on AWS.

The events of an invocation are written when it ends, timestamped then. ``LogFormat: JSON``:
the runtime writes its logging records as JSON, filtered by ``ApplicationLogLevel``, and
Lambda's lines are its platform events as JSON (environments/spec.py, ``Done.framed``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from moto.logs.models import logs_backends

__all__ = ["FunctionLogs", "log_group_of", "logging_config"]

LOG = logging.getLogger(__name__)


def logging_config(fn: Any) -> dict[str, str]:
    """The function's LoggingConfig (LogGroup, LogFormat, ApplicationLogLevel, SystemLogLevel)."""
    config = getattr(fn, "logging_config", None)
    if config is None:  # a version published before the deploy applied it: $LATEST's
        from moto.awslambda.utils import get_backend

        functions = get_backend(fn.account_id, fn.region)._lambdas._functions
        latest = functions.get(fn.function_name, {}).get("latest")
        config = getattr(latest, "logging_config", None)
    return dict(config or {})


def log_group_of(fn: Any) -> str:
    return str(logging_config(fn).get("LogGroup") or f"/aws/lambda/{fn.function_name}")


class FunctionLogs:
    """The log groups and streams a cloud's functions write to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def write(self, fn: Any, stream: str, lines: list[str]) -> None:
        """``lines`` as events of ``stream`` in the function's log group."""
        if not lines:
            return
        group = log_group_of(fn)
        backend = logs_backends[fn.account_id][fn.region]
        stamp = int(time.time() * 1000)
        events = [{"timestamp": stamp, "message": line} for line in lines]
        with self._lock:  # moto's log streams are not thread-safe
            try:
                if group not in backend.groups:  # Lambda creates it at the first invocation
                    backend.create_log_group(group, {})
                backend.ensure_log_stream(group, stream)
                backend.put_log_events(group, stream, events)
            except Exception:  # delivered apart from the invocation: it never fails it
                LOG.warning("%s: its log could not be written to %s", fn.function_name, group,
                            exc_info=True)  # fmt: skip
