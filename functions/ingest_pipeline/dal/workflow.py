"""Step Functions and SNS calls of the reconciler and the operator tools."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ingest_pipeline.dal.aws import aws_errors, client, is_error
from ingest_pipeline.errors import PipelineError


@dataclass(frozen=True)
class Started:
    execution_arn: str
    already: bool  # an execution of this name existed (idempotent start, or it already ran)


def execution_arn(state_machine_arn: str, name: str) -> str:
    """arn:...:stateMachine:NAME + execution name -> arn:...:execution:NAME:EXECUTION."""
    return state_machine_arn.replace(":stateMachine:", ":execution:", 1) + ":" + name


def start_execution(state_machine_arn: str, name: str, execution_input: dict[str, Any]) -> Started:
    """StartExecution with a deterministic name: a second start of the same name is not an
    error but ``already=True`` (same input while running: AWS returns the same execution;
    otherwise ExecutionAlreadyExists)."""
    try:
        with aws_errors(f"start execution {name}"):
            got = client("stepfunctions").start_execution(
                stateMachineArn=state_machine_arn,
                name=name,
                input=json.dumps(execution_input, separators=(",", ":")),
            )
    except PipelineError as exc:
        if is_error(exc, "ExecutionAlreadyExists"):
            return Started(execution_arn(state_machine_arn, name), already=True)
        raise
    return Started(str(got["executionArn"]), already=False)


@dataclass(frozen=True)
class ExecutionStatus:
    arn: str
    status: str  # RUNNING | SUCCEEDED | FAILED | TIMED_OUT | ABORTED | PENDING_REDRIVE
    stop_date: datetime | None
    redrive_status: str | None  # REDRIVABLE | NOT_REDRIVABLE | ... (None: not reported)
    redrive_reason: str | None


def describe_execution(arn: str) -> ExecutionStatus | None:
    try:
        with aws_errors(f"describe execution {arn}"):
            got = client("stepfunctions").describe_execution(executionArn=arn)
    except PipelineError as exc:
        if is_error(exc, "ExecutionDoesNotExist"):
            return None
        raise
    return ExecutionStatus(
        arn=arn,
        status=str(got["status"]),
        stop_date=got.get("stopDate"),
        redrive_status=got.get("redriveStatus"),
        redrive_reason=got.get("redriveStatusReason"),
    )


def redrive_execution(arn: str) -> None:
    with aws_errors(f"redrive execution {arn}"):
        client("stepfunctions").redrive_execution(executionArn=arn)


def publish(topic_arn: str, subject: str, message: dict[str, Any]) -> str:
    with aws_errors(f"publish to {topic_arn}"):
        got = client("sns").publish(
            TopicArn=topic_arn,
            Subject=subject,
            Message=json.dumps(message, indent=2, ensure_ascii=False, default=str),
        )
    return str(got["MessageId"])
