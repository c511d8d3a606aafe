"""Fix: a state machine's LoggingConfiguration sends its executions' events to CloudWatch Logs.

AWS (developer guide, "Using CloudWatch Logs to log execution history in Step Functions" and
"Log levels"; CreateStateMachine ``loggingConfiguration``): the executions of a state
machine, Standard or Express, whose ``level`` is not OFF write their history events to the
log group of its one destination (``cloudWatchLogsLogGroup.logGroupArn``); ``ALL`` writes
every event, ``ERROR`` the failures (``ExecutionFailed``/``Aborted``/``TimedOut``,
``FailStateEntered``, ``TaskFailed``, ``LambdaFunctionFailed``, ``MapRunFailed``, ... the
list LocalStack copied from that page, moto's asl/eval/event/logging.py
``_ERROR_LOG_EVENT_TYPES``), ``FATAL`` only ``ExecutionFailed``/``Aborted``/``TimedOut``.
``includeExecutionData`` false leaves out ``input``, ``inputDetails``, ``output`` and
``outputDetails``. Publishing never blocks or fails an execution (logs are best effort: a
deleted log group leaves the execution as it was). Each log event's message is one JSON
object, in this key order::

    {
        "id": "3",
        "type": "PassStateExited",
        "details": {"name": "P", "output": "{...}", "outputDetails": {"truncated": false}},
        "previous_event_id": "2",
        "event_timestamp": "1668095539607",
        "execution_arn": "arn:...",
        "redrive_count": "0",
    }

(ids, previous ids, the epoch-milliseconds timestamp and the redrive count as strings;
``details`` is ``{}`` for an event without details; input and output stay JSON strings, as
in GetExecutionHistory), its timestamp the event's. Verified from responses recorded on AWS:
LocalStack tests/aws/services/stepfunctions/v2/logs/test_logs.snapshot.json (``aws.validated``,
2024-06: every level, with and without execution data, Standard executions) and
express/test_express_async.snapshot.json (Express); the field types and a record as AWS
writes it in DataDog/datadog-serverless-functions' forwarder tests and linz/geostore#2300.
Log streams are named ``states/<state machine name>/<YYYY-MM-DD-HH-MM>/<8 hex digits>``
(the same forwarder tests, a stream AWS created) and hold the events of several executions
(LocalStack's ``test_log_group_with_multiple_runs`` reads three runs from one stream), so a
reader filters by ``execution_arn``, as the console does.

moto 5.2.5 (stepfunctions/parser/models.py ``start_execution``) passes
``cloud_watch_logging_session=None``: nothing is logged, whatever the configuration. The
session it ships (LocalStack's ``CloudWatchLoggingSession``) would not work on moto's logs
backend either: it builds ``LogEvent(...)`` from the record itself (KeyError ``timestamp``),
calls ``.timestamp()`` on the ISO string ``EventManager`` has made of the event's time, and
catches botocore's ClientError where the backend raises its own exception; its records lack
``redrive_count`` (and ``details`` when empty) and its stream is ``states/<state machine ARN>``.

Here each execution of a state machine whose stored ``loggingConfiguration`` (the API's, or the
stack's through fixes/sfn_cloudformation_state_machine.py) has a level other than OFF gets a
session: LocalStack's level filter and ``EventManager``'s record (and its removal of the data),
published in AWS's format to a stream per state machine and minute of the execution's start. Not
emulated: the stream ``log_stream_created_by_aws_to_validate_log_delivery_subscriptions`` AWS
creates when it validates the destination, the refusal of a destination that does not exist
(InvalidLoggingConfiguration), payloads truncated at 248 KB (``truncated`` is always false), and
the events of a Distributed Map's children (moto runs them inside the parent, with an event
manager of their own that logs nothing).
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from moto.logs.exceptions import ResourceNotFoundException
from moto.logs.models import logs_backends
from moto.stepfunctions.parser.asl.eval.event.logging import (
    CloudWatchLoggingConfiguration,
    CloudWatchLoggingSession,
)
from moto.stepfunctions.parser.backend import execution as sfn_execution

from localcloud.fixes.sfn_cloudformation_state_machine import boolean
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "log_record", "logging_configuration", "stream_name"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _moment(value: Any) -> dt.datetime:
    moment = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _text(value: Any) -> str:
    return str(getattr(value, "value", value))


def log_record(history_log: Mapping[str, Any], redrive_count: int = 0) -> dict[str, Any]:
    """One CloudWatch Logs record as Step Functions writes it, from ``EventManager``'s
    history log (id, previous_event_id, event_timestamp, type, execution_arn, details)."""
    millis = (_moment(history_log["event_timestamp"]) - _EPOCH) // dt.timedelta(milliseconds=1)
    return {
        "id": str(history_log["id"]),
        "type": _text(history_log["type"]),
        "details": dict(history_log.get("details") or {}),
        "previous_event_id": str(history_log["previous_event_id"]),
        "event_timestamp": str(millis),
        "execution_arn": str(history_log["execution_arn"]),
        "redrive_count": str(redrive_count),
    }


def stream_name(state_machine_name: str, started: dt.datetime, suffix: str) -> str:
    """``states/<state machine name>/<YYYY-MM-DD-HH-MM>/<suffix>``, as AWS names them."""
    return f"states/{state_machine_name}/{_moment(started):%Y-%m-%d-%H-%M}/{suffix}"


def logging_configuration(state_machine: Any) -> dict[str, Any] | None:
    """The state machine's loggingConfiguration in the API's shape, defaults applied (level
    OFF, includeExecutionData false, as CreateStateMachine stores them); None when OFF."""
    raw = getattr(state_machine, "loggingConfiguration", None) or {}
    config = {
        "level": _text(raw.get("level") or "OFF"),
        "includeExecutionData": boolean(raw.get("includeExecutionData", False)),
        "destinations": list(raw.get("destinations") or []),
    }
    return None if config["level"] == "OFF" else config


class _Session(CloudWatchLoggingSession):
    """LocalStack's session (its level filter), publishing in AWS's format to one stream."""

    stream: str
    lock: threading.Lock

    def publish_history_log(self, history_log: Any) -> None:
        record = log_record(history_log)
        event = {
            "timestamp": int(record["event_timestamp"]),
            "message": json.dumps(record, separators=(",", ":"), ensure_ascii=False),
        }
        config = self.configuration
        backend = logs_backends[config.log_account_id][config.log_region]
        with self.lock:  # moto's log streams are not thread-safe
            try:
                backend.ensure_log_stream(config.log_group_name, self.stream)
                backend.put_log_events(config.log_group_name, self.stream, [event])
            except ResourceNotFoundException:
                return  # no such log group: AWS drops the events, the execution goes on


def _build(rt: Runtime) -> Targets:
    init = sfn_execution.Execution.__init__
    lock = threading.Lock()
    streams: dict[tuple[str, str, str, str], str] = {}  # by account, Region, group, prefix

    def session_for(execution: Any) -> _Session | None:
        machine = execution.state_machine
        config = logging_configuration(machine)
        if config is None:
            return None
        arn = str(getattr(machine, "source_arn", None) or machine.arn)
        cloud_watch = CloudWatchLoggingConfiguration.from_logging_configuration(
            state_machine_arn=arn, logging_configuration=config
        )
        if cloud_watch is None:  # no usable destination: nothing is logged
            return None
        prefix = stream_name(str(machine.name), execution.start_date, "")
        group = (cloud_watch.log_account_id, cloud_watch.log_region, cloud_watch.log_group_name)
        with lock:
            stream = streams.setdefault((*group, prefix), prefix + uuid.uuid4().hex[:8])
        session = _Session(execution_arn=str(execution.exec_arn), configuration=cloud_watch)
        session.stream, session.lock = stream, lock
        return session

    def execution_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if self._cloud_watch_logging_session is None:
            self._cloud_watch_logging_session = session_for(self)

    return {(sfn_execution.Execution, "__init__"): execution_init}


PATCHES = [
    Patch(
        name="sfn-execution-logs",
        kind=Kind.FIX,
        reason="Executions of a state machine with a LoggingConfiguration write their events "
        "to its CloudWatch Logs group (level, includeExecutionData, AWS's record and stream "
        "names), Standard and Express alike; moto logs nothing.",
        test="tests/e2e/test_localcloud_express.py"
        "::test_logging_all_with_data_writes_every_event_to_the_log_group",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto "
        "stepfunctions/parser/models.py start_execution passes "
        "cloud_watch_logging_session=None",
    )
]
