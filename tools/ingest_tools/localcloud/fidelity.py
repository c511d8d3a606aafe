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
  task moves every message of a dead-letter queue back to its source queue (or to
  ``DestinationArn``), body and attributes unchanged (SQS Developer Guide, "Configure a
  dead-letter queue redrive"; API Reference, StartMessageMoveTask). A message with no
  known source and no ``DestinationArn`` is left where it is.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionResult
from moto.events.models import EventPattern, EventPatternParser
from moto.events.responses import EventsHandler
from moto.s3.exceptions import MissingKey, PreconditionFailed
from moto.s3.models import S3Backend
from moto.s3.responses import S3Response
from moto.sqs.exceptions import InvalidParameterValue
from moto.sqs.models import Message, Queue, SQSBackend, sqs_backends
from moto.sqs.responses import SQSResponse

from ingest_tools.localcloud.patching import Patches

__all__ = ["install", "uninstall"]

# --------------------------------------------------------------------------- S3 multipart
_completing = threading.local()


def _complete_multipart_upload(self: S3Backend, *args: Any, **kwargs: Any) -> Any:
    _completing.active = True
    try:
        return _patches.original(S3Backend, "complete_multipart_upload")(self, *args, **kwargs)
    finally:
        _completing.active = False


def _put_object(self: S3Backend, *args: Any, **kwargs: Any) -> Any:
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
    raw_pattern = self._get_param("EventPattern")
    raw_event = self._get_param("Event")
    pattern = EventPattern(raw_pattern, EventPatternParser(raw_pattern).parse())
    try:
        event = json.loads(raw_event or "")
    except ValueError:
        raise _ValidationException("Parameter Event is not valid.") from None
    if not isinstance(event, dict) or any(f not in event for f in _REQUIRED_EVENT_FIELDS):
        raise _ValidationException("Parameter Event is not valid.")
    return json.dumps({"Result": pattern.matches_event(event)})


# --------------------------------------------------------------------------- SQS
_sources: dict[str, str] = {}  # message id -> the queue its redrive policy moved it from
_tasks: dict[str, dict[str, Any]] = {}  # task handle -> task
_tasks_lock = threading.Lock()


def _receive_message(self: SQSBackend, queue_name: str, *args: Any, **kwargs: Any) -> Any:
    queue = self.get_queue(queue_name)
    dlq = queue.dead_letter_queue
    before = {m.id for m in dlq._messages} if dlq is not None else set()
    result = _patches.original(SQSBackend, "receive_message")(self, queue_name, *args, **kwargs)
    if dlq is not None:
        for message in dlq._messages:
            if message.id not in before:
                _sources[message.id] = queue.queue_arn
    return result


def _receive_message_response(self: SQSResponse) -> Any:
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


def _queue_by_arn(backend: SQSBackend, arn: str) -> Queue | None:
    return next((q for q in backend.queues.values() if q.queue_arn == arn), None)


def _backend_of(arn: str) -> SQSBackend:
    parts = arn.split(":")
    if len(parts) != 6 or parts[2] != "sqs":
        raise InvalidParameterValue(f"Value {arn} for parameter SourceArn is invalid.")
    return sqs_backends[parts[4]][parts[3]]


def _start_message_move_task(self: SQSResponse) -> ActionResult:
    source_arn = str(self._get_param("SourceArn") or "")
    destination_arn = self._get_param("DestinationArn")
    rate = self._get_param("MaxNumberOfMessagesPerSecond")
    backend = _backend_of(source_arn)
    source = _queue_by_arn(backend, source_arn)
    if source is None:
        raise InvalidParameterValue(f"Source queue {source_arn} does not exist.")
    if not any(q.dead_letter_queue is source for q in backend.queues.values()):
        raise InvalidParameterValue(
            f"Source queue {source_arn} is not configured as a dead-letter queue of any queue."
        )
    with _tasks_lock:
        if any(t["SourceArn"] == source_arn and t["Status"] == "RUNNING" for t in _tasks.values()):
            raise InvalidParameterValue("There is already a task running on this queue.")
        handle = uuid.uuid4().hex
        task: dict[str, Any] = {
            "TaskHandle": handle,
            "Status": "RUNNING",
            "SourceArn": source_arn,
            "ApproximateNumberOfMessagesMoved": 0,
            "ApproximateNumberOfMessagesToMove": len(source._messages),
            "StartedTimestamp": int(time.time() * 1000),
        }
        if destination_arn:
            task["DestinationArn"] = destination_arn
        if rate:
            task["MaxNumberOfMessagesPerSecond"] = int(rate)
        _tasks[handle] = task
    threading.Thread(
        target=_move, args=(backend, source, task), name="sqs-move-task", daemon=True
    ).start()
    return ActionResult({"TaskHandle": handle})


def _move(backend: SQSBackend, source: Queue, task: dict[str, Any]) -> None:
    rate = task.get("MaxNumberOfMessagesPerSecond")
    try:
        for message in list(source._messages):
            if task["Status"] != "RUNNING":
                return
            target_arn = task.get("DestinationArn") or _sources.get(message.id)
            target = _queue_by_arn(backend, target_arn) if target_arn else None
            if target is None:
                continue  # no known source: not movable
            _send_copy(backend, target, message)
            source._messages.remove(message)
            _sources.pop(message.id, None)
            task["ApproximateNumberOfMessagesMoved"] += 1
            if rate:
                time.sleep(1 / float(rate))
        task["Status"] = "COMPLETED"
    except Exception as exc:  # reported as AWS reports a failed task
        task["Status"] = "FAILED"
        task["FailureReason"] = f"{type(exc).__name__}: {exc}"


def _send_copy(backend: SQSBackend, target: Queue, message: Message) -> None:
    backend.send_message(
        target.name,
        message.body,
        message_attributes=message.message_attributes or None,
        group_id=message.group_id,
        deduplication_id=message.deduplication_id,
    )


def _list_message_move_tasks(self: SQSResponse) -> ActionResult:
    source_arn = str(self._get_param("SourceArn") or "")
    limit = int(self._get_param("MaxResults") or 1)
    with _tasks_lock:
        found = [dict(t) for t in _tasks.values() if t["SourceArn"] == source_arn]
    found.sort(key=lambda t: t["StartedTimestamp"], reverse=True)  # most recent first
    for task in found:
        if task["Status"] != "RUNNING":
            task.pop("TaskHandle", None)  # AWS returns the handle of a running task only
    return ActionResult({"Results": found[:limit]})


def _cancel_message_move_task(self: SQSResponse) -> ActionResult:
    handle = str(self._get_param("TaskHandle") or "")
    with _tasks_lock:
        task = _tasks.get(handle)
        if task is None or task["Status"] != "RUNNING":
            raise InvalidParameterValue(f"Task {handle} is not running.")
        task["Status"] = "CANCELLING"
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
        _tasks.clear()
    _sources.clear()
