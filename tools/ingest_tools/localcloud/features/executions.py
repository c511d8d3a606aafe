"""Step Functions executions as the local cloud sees them: read from moto's executing backend
directly (no API call)."""

from __future__ import annotations

from typing import Any

from moto.stepfunctions.parser import models as sfn_parser_models

__all__ = ["execution_statuses", "executions", "running_executions"]


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
