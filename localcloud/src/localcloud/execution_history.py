"""An execution's history as its state machine logged it to CloudWatch Logs.

Express executions have no GetExecutionHistory (nor DescribeExecution): on AWS their history
is what Step Functions writes to the state machine's log group (the console reads it there,
filtering by ``execution_arn``). These helpers read it with a CloudWatch Logs client, the
local cloud's or AWS's, and rebuild GetExecutionHistory's event shape (``type``, ``id``,
``previousEventId``, ``timestamp``, ``<camelCase type>EventDetails``) from each record
(``id``, ``type``, ``details``, ``previous_event_id``, ``event_timestamp``, ``execution_arn``,
``redrive_count``; see fixes/sfn_execution_logs.py), so code reading histories (``Execution``,
``cost.measure``) reads both alike. What the log level left out is not there (ERROR logs
failures only), nor is what ``includeExecutionData`` false removes (input and output).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["details_key", "history_event", "log_group_name", "logged_history"]


def details_key(event_type: str) -> str:
    """GetExecutionHistory's field for an event type's details (``TaskStateEntered`` ->
    ``stateEnteredEventDetails``, ``TaskScheduled`` -> ``taskScheduledEventDetails``)."""
    if event_type.endswith("StateEntered"):
        return "stateEnteredEventDetails"
    if event_type.endswith("StateExited"):
        return "stateExitedEventDetails"
    return f"{event_type[:1].lower()}{event_type[1:]}EventDetails"


def history_event(record: Mapping[str, Any]) -> dict[str, Any]:
    """One logged record as GetExecutionHistory's event (ids as ints, a UTC datetime)."""
    millis = int(record["event_timestamp"])
    event: dict[str, Any] = {
        "timestamp": dt.datetime.fromtimestamp(millis / 1000, tz=dt.UTC),
        "type": str(record["type"]),
        "id": int(record["id"]),
        "previousEventId": int(record["previous_event_id"]),
    }
    details = record.get("details")
    if details:
        event[details_key(event["type"])] = dict(details)
    return event


def log_group_name(logging_configuration: Mapping[str, Any] | None) -> str | None:
    """The log group of a state machine's loggingConfiguration (DescribeStateMachine), or
    None when it logs nothing."""
    if not logging_configuration or logging_configuration.get("level", "OFF") == "OFF":
        return None
    for destination in logging_configuration.get("destinations") or []:
        arn = (destination.get("cloudWatchLogsLogGroup") or {}).get("logGroupArn", "")
        if "log-group:" in arn:
            return str(arn.split("log-group:", 1)[1].split(":", 1)[0])
    return None


def logged_history(logs: Any, group: str, execution_arn: str) -> list[dict[str, Any]]:
    """The execution's events in ``group`` (a boto3 CloudWatch Logs client), in id order."""
    records: dict[int, dict[str, Any]] = {}
    pages = logs.get_paginator("filter_log_events").paginate(
        logGroupName=group, filterPattern=f'"{execution_arn}"'
    )
    for page in pages:
        for log_event in page.get("events", []):
            try:
                record = json.loads(log_event["message"])
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("execution_arn") == execution_arn:
                records[int(record["id"])] = record
    return [history_event(records[key]) for key in sorted(records)]
