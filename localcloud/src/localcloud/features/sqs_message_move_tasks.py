"""SQS message move tasks (the dead-letter queue redrive API), which moto does not have.

StartMessageMoveTask / ListMessageMoveTasks / CancelMessageMoveTask are added: a task moves
the dead-letter queue's messages back to their source queue (``DeadLetterQueueSourceArn``,
see fixes/sqs_dead_letter_source.py) or to ``DestinationArn``, body and attributes
unchanged, in a background thread (SQS Developer Guide, "Configure a dead-letter queue
redrive"; API Reference, StartMessageMoveTask). A source that is no dead-letter queue is
refused (InvalidParameterValue), an unknown queue is ResourceNotFoundException, and a
message with no known source and no ``DestinationArn`` fails the task with
CouldNotDetermineMessageSource, leaving it in the dead-letter queue (SQS Developer Guide,
"Troubleshooting DLQ and DLQ redrive issues"). With ``DestinationArn`` every message goes
there, a message without a source included ("If this field is left blank, the messages will
be redriven back to their respective original source queues", API Reference,
StartMessageMoveTask). Running tasks stop when the cloud stops. ListDeadLetterSourceQueues is
moto's own (the queues whose RedrivePolicy names the queue) and needs no patch
(tests/e2e/test_redrive_queue_sources.py).
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from typing import Any

from moto.core.responses import ActionResult
from moto.sqs.exceptions import InvalidParameterValue, SQSException
from moto.sqs.models import Message, Queue, SQSBackend, sqs_backends
from moto.sqs.responses import SQSResponse

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_tasks: dict[str, dict[str, Any]] = {}  # task handle -> task
_tasks_lock = threading.Lock()
_RATE_LIMITS = (1, 500)  # MaxNumberOfMessagesPerSecond
_RESULT_LIMITS = (1, 10)  # ListMessageMoveTasks MaxResults
_ARN_FORMAT = "arn:<partition>:<service>:<region>:<account-id>:<resource-id>"


class _ResourceNotFound(SQSException):
    def __init__(self, message: str) -> None:
        super().__init__("ResourceNotFoundException", message)


def _queue(arn: object, parameter: str) -> tuple[SQSBackend, Queue]:
    """The queue an ARN names: InvalidParameterValue if it is no ARN, ResourceNotFoundException
    if no such queue exists (the answers AWS gives)."""
    parts = str(arn or "").split(":")
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != "sqs":
        raise InvalidParameterValue(
            f"You must use this format to specify the {parameter}: {_ARN_FORMAT}"
        )
    backend = sqs_backends[parts[4]][parts[3]]
    queue = next((q for q in backend.queues.values() if q.queue_arn == arn), None)
    if queue is None:
        raise _ResourceNotFound(
            f"The resource that you specified for the {parameter} parameter doesn't exist."
        )
    return backend, queue


def _bounded(self: SQSResponse, name: str, limits: tuple[int, int]) -> int | None:
    value = self._get_param(name)
    if value is None:
        return None
    low, high = limits
    if not low <= int(value) <= high:
        raise InvalidParameterValue(
            f"Value {value} for parameter {name} is invalid. "
            f"Reason: Must be between {low} and {high}."
        )
    return int(value)


def _start_message_move_task(self: SQSResponse, sources: dict[str, str]) -> ActionResult:
    source_arn = str(self._get_param("SourceArn") or "")
    backend, source = _queue(source_arn, "SourceArn")
    destination_arn = self._get_param("DestinationArn")
    if destination_arn:
        _queue(destination_arn, "DestinationArn")
    rate = _bounded(self, "MaxNumberOfMessagesPerSecond", _RATE_LIMITS)
    if not any(q.dead_letter_queue is source for q in backend.queues.values()):
        raise InvalidParameterValue("Source queue must be configured as a Dead Letter Queue.")
    with _tasks_lock:
        if any(t["SourceArn"] == source_arn and t["Status"] == "RUNNING" for t in _tasks.values()):
            raise InvalidParameterValue(
                "There is already a task running. Only one active task is allowed for a source "
                "queue arn at a given time."
            )
        handle = base64.b64encode(
            json.dumps({"taskId": str(uuid.uuid4()), "sourceArn": source_arn}).encode()
        ).decode()
        messages = list(source.messages)  # visible ones: what the task's receives would see
        task: dict[str, Any] = {
            "TaskHandle": handle,
            "Status": "RUNNING",
            "SourceArn": source_arn,
            "ApproximateNumberOfMessagesMoved": 0,
            "ApproximateNumberOfMessagesToMove": len(messages),
            "StartedTimestamp": int(time.time() * 1000),
            "_stop": threading.Event(),  # set by CancelMessageMoveTask
        }
        if destination_arn:
            task["DestinationArn"] = destination_arn
        if rate is not None:
            task["MaxNumberOfMessagesPerSecond"] = rate
        _tasks[handle] = task
    threading.Thread(
        target=_move,
        args=(backend, source, messages, task, sources),
        name="sqs-move-task",
        daemon=True,
    ).start()
    return ActionResult({"TaskHandle": handle})


def _move(
    backend: SQSBackend,
    source: Queue,
    messages: list[Message],
    task: dict[str, Any],
    sources: dict[str, str],
) -> None:
    """Send each message (body, attributes) to its destination, then delete it from the DLQ."""
    rate, stop = task.get("MaxNumberOfMessagesPerSecond"), task["_stop"]
    try:
        for message in messages:
            if stop.is_set():
                break
            target_arn = task.get("DestinationArn") or sources.get(message.id)
            if target_arn is None:
                return _finish(task, "FAILED", "CouldNotDetermineMessageSource")
            target = next((q for q in backend.queues.values() if q.queue_arn == target_arn), None)
            if target is None:
                return _finish(task, "FAILED", "AWS.SimpleQueueService.NonExistentQueue")
            with source._messages_lock:
                if message not in source._messages:
                    continue  # deleted by a consumer meanwhile
                source._messages.remove(message)
            backend.send_message(
                target.name,
                message.body,
                message_attributes=message.message_attributes or None,
                group_id=message.group_id,
                deduplication_id=message.deduplication_id,
            )
            sources.pop(message.id, None)
            with _tasks_lock:
                task["ApproximateNumberOfMessagesMoved"] += 1
            if rate:
                stop.wait(1 / rate)
        _finish(task, "CANCELLED" if stop.is_set() else "COMPLETED")
    except Exception as exc:  # reported as AWS reports a failed task
        _finish(task, "FAILED", f"{type(exc).__name__}: {exc}")


def _finish(task: dict[str, Any], status: str, reason: str | None = None) -> None:
    with _tasks_lock:
        task["Status"] = "CANCELLED" if task["Status"] == "CANCELLING" and not reason else status
    if reason is not None:
        task["FailureReason"] = reason


def _list_message_move_tasks(self: SQSResponse) -> ActionResult:
    """The most recent tasks of a source queue (MaxResults 1-10, default 1); TaskHandle only
    while RUNNING, FailureReason only when FAILED."""
    source_arn = str(self._get_param("SourceArn") or "")
    _queue(source_arn, "SourceArn")
    limit = _bounded(self, "MaxResults", _RESULT_LIMITS) or 1
    with _tasks_lock:
        found = [
            {k: v for k, v in t.items() if not k.startswith("_")}
            for t in _tasks.values()
            if t["SourceArn"] == source_arn
        ]
    found.sort(key=lambda t: t["StartedTimestamp"], reverse=True)  # most recent first
    for task in found:
        if task["Status"] != "RUNNING":
            task.pop("TaskHandle", None)
    return ActionResult({"Results": found[:limit]})


def _cancel_message_move_task(self: SQSResponse) -> ActionResult:
    """Cancels a RUNNING task (status CANCELLING, then CANCELLED); messages already moved stay
    moved. ResourceNotFoundException for a task that is not running."""
    handle = str(self._get_param("TaskHandle") or "")
    try:
        source_arn = json.loads(base64.b64decode(handle, validate=True))["sourceArn"]
    except (ValueError, KeyError, TypeError):
        raise InvalidParameterValue("Value for parameter TaskHandle is invalid.") from None
    _queue(source_arn, "SourceArn")
    with _tasks_lock:
        task = _tasks.get(handle)
        if task is None or task["Status"] != "RUNNING":
            raise _ResourceNotFound("Task does not exist.")
        task["Status"] = "CANCELLING"
        task["_stop"].set()
    return ActionResult(
        {"ApproximateNumberOfMessagesMoved": task["ApproximateNumberOfMessagesMoved"]}
    )


def _close() -> None:
    with _tasks_lock:
        for task in _tasks.values():
            if task["Status"] == "RUNNING":
                task["Status"] = "CANCELLING"
                task["_stop"].set()
        _tasks.clear()


def _build(rt: Runtime) -> Targets:
    def start_message_move_task(self: SQSResponse) -> Any:
        return _start_message_move_task(self, rt.dead_letter_sources)

    rt.on_close(_close)
    return {
        (SQSResponse, "start_message_move_task"): start_message_move_task,
        (SQSResponse, "list_message_move_tasks"): _list_message_move_tasks,
        (SQSResponse, "cancel_message_move_task"): _cancel_message_move_task,
    }


PATCHES = [
    Patch(
        name="sqs-message-move-tasks",
        kind=Kind.FEATURE,
        reason="StartMessageMoveTask / ListMessageMoveTasks / CancelMessageMoveTask (moto has "
        "none), with AWS's validation and task states.",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_a_move_task_to_a_destination_and_a_cancelled_one",
        build=_build,
        adds=("start_message_move_task", "list_message_move_tasks", "cancel_message_move_task"),
    ),
]
