"""Step Functions executions as the local cloud sees them: read from moto's executing backend
directly (no API call), and ``abort``, the test-only lever that stops one there."""

from __future__ import annotations

import datetime as dt
from typing import Any

from moto.stepfunctions.parser import models as sfn_parser_models

__all__ = [
    "abort",
    "ended",
    "execution",
    "execution_statuses",
    "executions",
    "running_executions",
]


def executions() -> list[Any]:
    """Every execution moto's executing backend holds (all accounts and regions)."""
    out = []
    for account in list(sfn_parser_models.stepfunctions_parser_backends.values()):
        for backend in list(account.values()):
            for machine in list(backend.state_machines):
                out.extend(list(getattr(machine, "executions", [])))
    return out


def running_executions() -> list[Any]:
    return [e for e in executions() if getattr(e, "exec_status", None) == "RUNNING"]


def execution_statuses() -> dict[str, str]:
    """Every execution's status straight from the backend (no API call), by ARN."""
    return {
        execution.exec_arn: str(getattr(status, "value", status))
        for execution in executions()
        if (status := execution.exec_status)
    }


def execution(arn: str) -> Any:
    """The backend's execution with this ARN (moto's object), or None."""
    return next((e for e in executions() if e.exec_arn == arn), None)


def ended(arn: str) -> Any:
    """The backend's execution with this ARN once it has ended (moto's object), else None."""
    found = execution(arn)
    status = getattr(found, "exec_status", None)
    return found if status and str(getattr(status, "value", status)) != "RUNNING" else None


def abort(arn: str, *, error: str | None = None, cause: str | None = None) -> None:
    """Stop a running execution through the backend, bypassing the API: it ends ABORTED
    (``ExecutionAborted`` in its history and logs) as StopExecution would end it.

    A test-only lever. For a STANDARD execution, use StopExecution. An EXPRESS execution
    has no StopExecution on AWS (InvalidArn, see fixes/sfn_express_executions.py) and nothing
    stops it from outside; this simulates one that is lost midway (its worker dies, it
    times out): what the workflow did so far stays done, what it would have done next never
    happens."""
    found = execution(arn)
    if found is None:
        raise KeyError(f"no execution {arn}")
    found.stop(stop_date=dt.datetime.now(dt.UTC), error=error, cause=cause)
