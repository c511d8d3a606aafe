"""Where moto 5.2.5 answers differently from AWS on the paths that lose or duplicate events.

One patch per difference, each with a test in ``tests/e2e/test_localcloud_fidelity.py`` that
fails without it:

* **Multipart upload, one event.** moto's ``S3Backend.complete_multipart_upload`` stores the
  object through ``put_object``, which sends an ObjectCreated:Put notification, and then
  sends ObjectCreated:CompleteMultipartUpload: two events (two executions) per upload. AWS
  sends one, "CompleteMultipartUpload" (S3 User Guide, "Event notification types"). The
  inner ``put_object`` runs with notifications off.
* **Conditional CompleteMultipartUpload.** moto honours ``If-None-Match: *`` there but not
  ``If-Match``; AWS completes the upload only while the object's ETag is the one given, and
  answers 412 PreconditionFailed otherwise (S3 User Guide, "Conditional writes").
* **GetBucketNotificationConfiguration reports EventBridge.** moto keeps
  ``EventBridgeConfiguration`` on PUT but leaves it out of GET, so a read-modify-write of the
  notifications (adding a queue) turns EventBridge delivery off. AWS returns the element
  when EventBridge is enabled (S3 API Reference, NotificationConfiguration).
* **EventBridge TestEventPattern.** moto's handler returns nothing
  (``EventsBackend.test_event_pattern`` raises NotImplementedError). It is answered with
  moto's own rule matcher (``EventPattern``: prefix, suffix, anything-but, exists, numeric,
  equals-ignore-case, wildcard, cidr, $or), after the checks AWS documents: the pattern must
  be valid, and the event must carry id, account, source, time, region, resources and
  detail-type (EventBridge API Reference, TestEventPattern).
* **SQS DeadLetterQueueSourceArn and message move tasks.** When a queue's redrive policy
  moves a message to its dead-letter queue, SQS records the source queue
  (``DeadLetterQueueSourceArn``, returned by ReceiveMessage); moto does not. moto has no
  StartMessageMoveTask / ListMessageMoveTasks / CancelMessageMoveTask; they are added: a
  task moves the dead-letter queue's messages back to their source queue (or to
  ``DestinationArn``), body and attributes unchanged, in a background thread (SQS Developer
  Guide, "Configure a dead-letter queue redrive"; API Reference, StartMessageMoveTask). A
  source that is no dead-letter queue is refused (InvalidParameterValue), an unknown queue
  is ResourceNotFoundException, and a message with no known source and no
  ``DestinationArn`` fails the task with CouldNotDetermineMessageSource, leaving it in the
  dead-letter queue (SQS Developer Guide, "Troubleshooting DLQ and DLQ redrive issues").
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionResult
from moto.events.exceptions import InvalidEventPatternException
from moto.events.models import EventPattern, EventPatternParser
from moto.events.responses import EventsHandler
from moto.s3.exceptions import MissingKey, PreconditionFailed
from moto.s3.models import S3Backend
from moto.s3.responses import S3Response
from moto.sqs.exceptions import InvalidParameterValue, SQSException
from moto.sqs.models import Message, Queue, SQSBackend, sqs_backends
from moto.sqs.responses import SQSResponse

from ingest_tools.localcloud.patching import Patches

__all__ = ["install", "uninstall"]

# --------------------------------------------------------------------------- S3 multipart
_completing = threading.local()


def _complete_multipart_upload(self: S3Backend, *args: Any, **kwargs: Any) -> Any:
    """moto stores the completed object through ``put_object`` (an ObjectCreated:Put event)
    and then sends ObjectCreated:CompleteMultipartUpload. AWS sends one Object Created event,
    reason CompleteMultipartUpload (S3 User Guide, "Using EventBridge"): the inner
    ``put_object`` is marked to send nothing."""
    _completing.active = True
    try:
        return _patches.original(S3Backend, "complete_multipart_upload")(self, *args, **kwargs)
    finally:
        _completing.active = False


def _put_object(self: S3Backend, *args: Any, **kwargs: Any) -> Any:
    """moto's ``put_object``, silent while a multipart completion on this thread stores."""
    if getattr(_completing, "active", False):
        kwargs["disable_notification"] = True  # the completion sends the one event
    return _patches.original(S3Backend, "put_object")(self, *args, **kwargs)


def _key_response_post(  # noqa: PLR0917 - moto's signature
    self: S3Response,
    request: Any,
    body: bytes,
    bucket_name: str,
    query: dict[str, Any],
    key_name: str,
) -> Any:
    """moto honours If-None-Match on CompleteMultipartUpload but not If-Match; AWS answers
    412 PreconditionFailed unless the current object's ETag matches (S3 User Guide,
    "Conditional writes")."""
    if_match = self.headers.get("If-Match")
    if query.get("uploadId") and if_match:
        current = self.backend.get_object(bucket_name, key_name)
        if current is None:
            raise MissingKey(key=key_name)
        if current.etag.replace('"', "") != if_match.replace('"', ""):
            raise PreconditionFailed("If-Match")
    original = _patches.original(S3Response, "_key_response_post")
    return original(self, request, body, bucket_name, query, key_name)


# --------------------------------------------------------------------------- S3 notifications
def _get_bucket_notification(self: S3Response) -> Any:
    """moto keeps EventBridgeConfiguration on PUT but leaves it out of GET; AWS returns the
    (empty) element while EventBridge delivery is on (S3 API Reference,
    NotificationConfiguration), so a get-modify-put keeps it on."""
    original = _patches.original(S3Response, "get_bucket_notification")
    config = self.backend.get_bucket_notification_configuration(self.bucket_name)
    if config is None or getattr(config, "event_bridge", None) is None:
        return original(self)
    serialize = self.serialized

    def with_event_bridge(result: Any) -> Any:
        if isinstance(result, ActionResult) and isinstance(result.result, dict):
            result = ActionResult({**result.result, "EventBridgeConfiguration": {}})
        return serialize(result)

    self.serialized = with_event_bridge  # type: ignore[method-assign]
    try:
        return original(self)
    finally:
        del self.serialized


# --------------------------------------------------------------------------- TestEventPattern
_REQUIRED_EVENT_FIELDS = ("id", "account", "source", "time", "region", "resources", "detail-type")


class _ValidationException(JsonRESTError):
    def __init__(self, message: str) -> None:
        super().__init__("ValidationException", message)


def _test_event_pattern(self: EventsHandler) -> str:
    """moto's handler returns nothing (its backend raises NotImplementedError). AWS checks
    the pattern (InvalidEventPatternException) and that the event is a JSON object with id,
    account, source, time, region, resources and detail-type (ValidationException "Parameter
    Event is not valid."), then answers {"Result": bool} (EventBridge API Reference,
    TestEventPattern). The match is moto's ``EventPattern``, the matcher the local rules
    route with, so TestEventPattern and delivery agree."""
    raw_pattern = self._get_param("EventPattern")
    raw_event = self._get_param("Event")
    try:
        parsed = json.loads(raw_pattern or "")
    except ValueError:
        raise InvalidEventPatternException(reason="Invalid JSON") from None
    if not isinstance(parsed, dict):
        raise InvalidEventPatternException(reason="Filter is not an object")
    pattern = EventPattern(raw_pattern, EventPatternParser(raw_pattern).parse())
    try:
        event = json.loads(raw_event or "")
    except ValueError:
        raise _ValidationException("Parameter Event is not valid.") from None
    if not isinstance(event, dict) or any(f not in event for f in _REQUIRED_EVENT_FIELDS):
        raise _ValidationException("Parameter Event is not valid.")
    return json.dumps({"Result": pattern.matches_event(event)})


# --------------------------------------------------------------------------- SQS
# SQS Developer Guide, "Learn how to configure a dead-letter queue redrive"; API Reference,
# StartMessageMoveTask / ListMessageMoveTasks / CancelMessageMoveTask; "Troubleshooting
# dead-letter queue (DLQ) and DLQ redrive issues" (CouldNotDetermineMessageSource).
_sources: dict[str, str] = {}  # message id -> the queue its redrive policy moved it from
_tasks: dict[str, dict[str, Any]] = {}  # task handle -> task
_tasks_lock = threading.Lock()
_receiving = threading.local()  # .queue: the queue this thread's ReceiveMessage reads
_RATE_LIMITS = (1, 500)  # MaxNumberOfMessagesPerSecond
_RESULT_LIMITS = (1, 10)  # ListMessageMoveTasks MaxResults
_ARN_FORMAT = "arn:<partition>:<service>:<region>:<account-id>:<resource-id>"


class _ResourceNotFound(SQSException):
    def __init__(self, message: str) -> None:
        super().__init__("ResourceNotFoundException", message)


def _receive_message(self: SQSBackend, queue_name: str, *args: Any, **kwargs: Any) -> Any:
    """moto moves a message that reached maxReceiveCount to the dead-letter queue inside
    ReceiveMessage (``dead_letter_queue.add_message``) and forgets where it came from. The
    queue being read is noted so that ``_add_message`` can record the source."""
    _receiving.queue = self.get_queue(queue_name)
    try:
        return _patches.original(SQSBackend, "receive_message")(self, queue_name, *args, **kwargs)
    finally:
        _receiving.queue = None


def _add_message(self: Queue, message: Message) -> None:
    """SQS sets DeadLetterQueueSourceArn on a message its redrive policy moves (ReceiveMessage
    returns it; StartMessageMoveTask without DestinationArn sends the message back there)."""
    source = getattr(_receiving, "queue", None)
    if source is not None and source.dead_letter_queue is self:
        _sources[message.id] = source.queue_arn
    _patches.original(Queue, "add_message")(self, message)


def _receive_message_response(self: SQSResponse) -> Any:
    """ReceiveMessage returns DeadLetterQueueSourceArn when asked for it (or for All)."""
    answer = _patches.original(SQSResponse, "receive_message")(self)
    names = set(self._get_param("AttributeNames", []) or []) | set(
        self._get_param("MessageSystemAttributeNames", []) or []
    )
    if not ({"All", "DeadLetterQueueSourceArn"} & names) or not isinstance(answer, ActionResult):
        return answer
    for message in (answer.result or {}).get("Messages", []):  # type: ignore[union-attr]
        source = _sources.get(message["MessageId"])
        if source is not None:
            message.setdefault("Attributes", {})["DeadLetterQueueSourceArn"] = source
    return answer


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


def _start_message_move_task(self: SQSResponse) -> ActionResult:
    """moto has no StartMessageMoveTask. AWS: the source must be a dead-letter queue of some
    queue (InvalidParameterValue otherwise); one active task per source; messages go to
    DestinationArn, else each back to its DeadLetterQueueSourceArn; asynchronous."""
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
        args=(backend, source, messages, task, task["_stop"]),
        name="sqs-move-task",
        daemon=True,
    ).start()
    return ActionResult({"TaskHandle": handle})


def _move(
    backend: SQSBackend,
    source: Queue,
    messages: list[Message],
    task: dict[str, Any],
    stop: threading.Event,
) -> None:
    """Send each message (body, attributes) to its destination, then delete it from the DLQ.
    A message with no known source and no DestinationArn fails the task with
    CouldNotDetermineMessageSource; a destination deleted meanwhile with NonExistentQueue."""
    rate = task.get("MaxNumberOfMessagesPerSecond")
    try:
        for message in messages:
            if stop.is_set():
                break
            target_arn = task.get("DestinationArn") or _sources.get(message.id)
            if target_arn is None:
                return _finish(task, "FAILED", "CouldNotDetermineMessageSource")
            target = next((q for q in backend.queues.values() if q.queue_arn == target_arn), None)
            if target is None:
                return _finish(task, "FAILED", "AWS.SimpleQueueService.NonExistentQueue")
            with source._messages_lock:
                if message not in source._messages:
                    continue  # deleted by a consumer meanwhile
                source._messages.remove(message)
            _send_copy(backend, target, message)
            _sources.pop(message.id, None)
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


def _send_copy(backend: SQSBackend, target: Queue, message: Message) -> None:
    backend.send_message(
        target.name,
        message.body,
        message_attributes=message.message_attributes or None,
        group_id=message.group_id,
        deduplication_id=message.deduplication_id,
    )


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


def _table() -> dict[tuple[Any, str], Any]:
    return {
        (S3Backend, "complete_multipart_upload"): _complete_multipart_upload,
        (S3Backend, "put_object"): _put_object,
        (S3Response, "_key_response_post"): _key_response_post,
        (S3Response, "get_bucket_notification"): _get_bucket_notification,
        (EventsHandler, "test_event_pattern"): _test_event_pattern,
        (SQSBackend, "receive_message"): _receive_message,
        (Queue, "add_message"): _add_message,
        (SQSResponse, "receive_message"): _receive_message_response,
        (SQSResponse, "start_message_move_task"): _start_message_move_task,
        (SQSResponse, "list_message_move_tasks"): _list_message_move_tasks,
        (SQSResponse, "cancel_message_move_task"): _cancel_message_move_task,
    }


_patches = Patches(_table)


def install() -> None:
    _patches.install()


def uninstall() -> None:
    _patches.uninstall()
    with _tasks_lock:
        for task in _tasks.values():
            if task["Status"] == "RUNNING":
                task["Status"] = "CANCELLING"
                task["_stop"].set()
        _tasks.clear()
    _sources.clear()
