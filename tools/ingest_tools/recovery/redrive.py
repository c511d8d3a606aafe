"""Redrive a dead-letter queue: every message goes back where it failed to go, exactly once.

SQS's own redrive (StartMessageMoveTask) only serves queues fed by other queues, and an
EventBridge DLQ holds events whose ``aws.*`` source PutEvents refuses (seed 002). So:

* rule DLQ records (and Lambda on-failure records whose payload is an event) go back on the
  rule's event bus with PutEvents, in batches of up to 10 entries. The reserved source is
  rewritten to the project's redrive source (which the pipeline rule accepts) and the
  provenance (original source, event id, error code, attempts) travels in
  ``detail.redrive`` (``formats.to_put_events_entry``);
* Scheduler DLQ records go back to their target: SQS SendMessage, or StartExecution under the
  same execution name (idempotent), or an asynchronous Lambda invoke.

Exactly-once per message, entry by entry:

* PutEvents answers per entry. Only the messages whose entries were accepted are deleted
  (seed 002's loop re-sends the whole batch when one entry fails: duplicates). A failed entry
  is made visible again and retried in this run up to ``entry_attempts`` times, then left in
  the queue and reported. Nothing is deleted that was not sent.
* A *sent ledger* closes the gap between sending and deleting: before a message is deleted,
  its id is written to the state table (``redrive#<queue ARN>`` / message id, TTL 15 days).
  If the run dies after sending but before deleting, the message becomes visible again; the
  next run finds it in the ledger and deletes it without sending it twice. Only a message
  that was received before (ApproximateReceiveCount > 1) can be in the ledger, so fresh
  messages cost no lookup.
* Messages that are filtered out, refused, unreadable or not replayable are never deleted:
  they stay hidden while the run lasts (so they are looked at once) and are made visible
  again when it ends.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from botocore.exceptions import ClientError

from ingest_tools.recovery.formats import (
    FailureRecord,
    RecordKind,
    UnreadableMessageError,
    bus_from_rule_arn,
    futile_reason,
    parse_message,
    to_put_events_entry,
)

__all__ = ["Outcome", "RedriveOptions", "RedriveReport", "Redriver", "Status"]

LEDGER_DAYS = 15  # longer than SQS's 14-day maximum retention
PUT_EVENTS_MAX_ENTRIES = 10


class Status(StrEnum):
    SENT = "sent"
    ALREADY_SENT = "already-sent"  # in the ledger from an earlier, interrupted run: deleted
    FAILED = "failed"  # still failing after entry_attempts: left in the queue
    SKIPPED = "skipped"  # filtered out
    REFUSED = "refused"  # would fail again (NO_PERMISSIONS, ...): needs --force
    UNROUTABLE = "unroutable"  # no enabled rule on the bus would route it: needs --force
    NOT_REPLAYABLE = "not-replayable"
    UNREADABLE = "unreadable"
    DRY_RUN = "dry-run"


LEFT_IN_QUEUE = {
    Status.FAILED,
    Status.SKIPPED,
    Status.REFUSED,
    Status.UNROUTABLE,
    Status.NOT_REPLAYABLE,
    Status.UNREADABLE,
    Status.DRY_RUN,
}


@dataclass
class RedriveOptions:
    queue_url: str
    redrive_source: str
    event_bus: str | None = None  # default: the bus of the rule that dead-lettered it
    dry_run: bool = False
    force: bool = False
    error_codes: frozenset[str] = frozenset()
    origins: frozenset[str] = frozenset()  # rule / schedule ARNs or names
    older_than: timedelta | None = None
    newer_than: timedelta | None = None
    max_messages: int | None = None
    rate: float | None = None  # messages per second, all workers together
    concurrency: int = 1
    visibility_timeout: int = 300
    entry_attempts: int = 5
    ledger_table: str | None = None
    progress: bool = False
    move_task_timeout: float = 900.0  # seconds to wait for an SQS message move task

    @property
    def selective(self) -> bool:
        """Only some messages are wanted (filters, --max) or nothing may change (dry run)."""
        return bool(
            self.dry_run
            or self.error_codes
            or self.origins
            or self.older_than
            or self.newer_than
            or self.max_messages is not None
        )


@dataclass(frozen=True)
class Outcome:
    message_id: str
    status: Status
    kind: str | None = None
    origin: str | None = None
    error_code: str | None = None
    object_key: str | None = None
    destination: str | None = None
    reason: str | None = None
    entry: dict[str, Any] | None = None  # dry run: what would be sent

    @classmethod
    def of(cls, record: FailureRecord, status: Status, **details: Any) -> Outcome:
        """An outcome for a parsed record, with what the record says about itself."""
        return cls(
            record.message_id,
            status,
            kind=record.kind.value,
            origin=record.origin,
            error_code=record.error_code,
            object_key=record.object.key if record.object else None,
            **details,
        )


@dataclass
class RedriveReport:
    queue_url: str
    dry_run: bool
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    elapsed: float = 0.0
    put_events_calls: int = 0
    entry_failures: Counter[str] = field(default_factory=Counter)
    move_task: dict[str, Any] | None = None  # SQS StartMessageMoveTask, when one ran

    def counts(self) -> dict[str, int]:
        counted = Counter(o.status.value for o in self.outcomes.values())
        return {status.value: counted.get(status.value, 0) for status in Status}

    @property
    def moved(self) -> int:
        counts = self.counts()
        by_task = int((self.move_task or {}).get("ApproximateNumberOfMessagesMoved", 0))
        return counts[Status.SENT] + counts[Status.ALREADY_SENT] + by_task

    def to_dict(self, *, details: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "queueUrl": self.queue_url,
            "dryRun": self.dry_run,
            "counts": self.counts(),
            "messagesPerSecond": round(self.moved / self.elapsed, 1) if self.elapsed else None,
            "elapsedSeconds": round(self.elapsed, 3),
            "putEventsCalls": self.put_events_calls,
            "entryFailures": dict(self.entry_failures),
        }
        if self.move_task is not None:
            out["moveTask"] = self.move_task
        if details:
            out["leftInQueue"] = [
                {k: v for k, v in asdict(o).items() if v is not None}
                for o in self.outcomes.values()
                if o.status in LEFT_IN_QUEUE
            ]
        return out


class _RateLimiter:
    """A token bucket shared by the workers (messages per second)."""

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self._lock = threading.Lock()
        self._next = time.monotonic()

    def take(self, n: int) -> None:
        if not self.rate:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + n / self.rate
        if start > now:
            time.sleep(start - now)


class Redriver:
    """One redrive run over one queue (see the module docstring)."""

    def __init__(
        self,
        options: RedriveOptions,
        *,
        sqs: Any,
        events: Any,
        dynamodb: Any | None = None,
        stepfunctions: Any | None = None,
        lambda_client: Any | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.o = options
        self.sqs, self.events, self.ddb = sqs, events, dynamodb
        self.sfn, self.lambda_client = stepfunctions, lambda_client
        self.clock = clock
        self.report = RedriveReport(options.queue_url, options.dry_run)
        self._lock = threading.Lock()
        self._held: dict[str, str] = {}  # message id -> receipt handle, released at the end
        self._tries: Counter[str] = Counter()
        self._claimed = 0  # messages taken towards max_messages
        self._limiter = _RateLimiter(options.rate)
        self._queue_arn: str | None = None
        self._stop = threading.Event()
        self._active = 0  # workers handling a batch (their failed entries may come back)
        self._inflight: set[str] = set()  # message ids being handled by some worker
        self._sent_ids: set[str] = set()  # sent in this run (a duplicate receipt is dropped)
        self._routes: dict[str, _Routes] = {}  # event bus -> the rules that could route

    # --- the run ------------------------------------------------------------------------
    def run(self) -> RedriveReport:
        self._queue_arn = self.sqs.get_queue_attributes(
            QueueUrl=self.o.queue_url, AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
        workers = max(1, self.o.concurrency)
        try:
            if not self.o.selective:
                self._move_back_to_source_queues()
            with ThreadPoolExecutor(workers, thread_name_prefix="redrive") as pool:
                for future in [pool.submit(self._worker) for _ in range(workers)]:
                    future.result()
        finally:
            self._release_held()
            self.report.elapsed = time.monotonic() - self.report.started
            if self.o.progress:
                self._progress(final=True)
        return self.report

    def _worker(self) -> None:
        while not self._stop.is_set():
            want = self._reserve(10)
            if want == 0:
                return
            got = self.sqs.receive_message(
                QueueUrl=self.o.queue_url,
                MaxNumberOfMessages=want,
                VisibilityTimeout=self.o.visibility_timeout,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            messages = got.get("Messages", [])
            self._unreserve(want - len(messages))
            if not messages:
                with self._lock:
                    busy = self._active
                if not busy:
                    return  # nothing visible and nobody working: drained (or only held left)
                time.sleep(0.02)  # another worker may make failed entries visible again
                continue
            messages = self._claim(messages)
            self._limiter.take(len(messages))
            try:
                self._handle(messages)
            finally:
                with self._lock:
                    self._active -= 1
                    self._inflight.difference_update(m["MessageId"] for m in messages)
            if self.o.progress:
                self._progress()

    def _claim(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Drop copies of messages another worker is handling or this run already sent (SQS
        standard queues may hand out a message twice)."""
        with self._lock:
            self._active += 1
            mine = [
                m
                for m in messages
                if m["MessageId"] not in self._inflight and m["MessageId"] not in self._sent_ids
            ]
            sent_again = [m for m in messages if m["MessageId"] in self._sent_ids]
            self._inflight.update(m["MessageId"] for m in mine)
        self._delete(sent_again)  # sent already: only this copy's delete is left to do
        return mine

    def _reserve(self, n: int) -> int:
        with self._lock:
            if self.o.max_messages is None:
                return n
            n = min(n, self.o.max_messages - self._claimed)
            self._claimed += max(n, 0)
            return max(n, 0)

    def _unreserve(self, n: int) -> None:
        if self.o.max_messages is not None and n > 0:
            with self._lock:
                self._claimed -= n

    # --- one received batch -----------------------------------------------------------
    def _handle(self, messages: list[dict[str, Any]]) -> None:
        to_send: list[tuple[dict[str, Any], FailureRecord]] = []
        for message in messages:
            outcome, record = self._triage(message)
            if outcome is not None:
                self._finish_held(message, outcome)
            elif record is not None:
                to_send.append((message, record))
        if not to_send:
            return
        if self.ddb is not None and self.o.ledger_table:
            to_send = self._skip_already_sent(to_send)
        events = [(m, r) for m, r in to_send if r.kind not in _DIRECT]
        for start in range(0, len(events), PUT_EVENTS_MAX_ENTRIES):
            self._put_events(events[start : start + PUT_EVENTS_MAX_ENTRIES])
        for message, record in to_send:
            if record.kind is RecordKind.SCHEDULER:
                self._send_to_target(message, record)
            elif record.kind is RecordKind.QUEUE:
                self._send_to_source_queue(message, record)

    def _triage(self, message: dict[str, Any]) -> tuple[Outcome | None, FailureRecord | None]:
        message_id = str(message["MessageId"])
        try:
            record = parse_message(message)
        except UnreadableMessageError as exc:
            return Outcome(message_id, Status.UNREADABLE, reason=exc.reason), None
        skip = self._filtered_out(record)
        if skip:
            return Outcome.of(record, Status.SKIPPED, reason=skip), None
        if not record.replayable:
            reason = record.not_replayable_reason
            return Outcome.of(record, Status.NOT_REPLAYABLE, reason=reason), None
        futile = futile_reason(record)
        if futile and not self.o.force:
            reason = f"{futile} (fix the cause, then use --force)"
            return Outcome.of(record, Status.REFUSED, reason=reason), None
        if self.o.dry_run:
            return self._dry_run(record), None
        return None, record

    def _dry_run(self, record: FailureRecord) -> Outcome:
        """What a real run would do with a record that passed triage (routing included)."""
        try:
            entry, destination = self._preview(record)
        except ValueError as exc:
            return Outcome.of(record, Status.NOT_REPLAYABLE, reason=str(exc))
        unroutable = self._unroutable(record, entry)
        if unroutable and not self.o.force:
            return Outcome.of(record, Status.UNROUTABLE, reason=unroutable, entry=entry)
        return Outcome.of(record, Status.DRY_RUN, destination=destination, entry=entry)

    def _filtered_out(self, record: FailureRecord) -> str | None:
        o = self.o
        if o.error_codes and (record.error_code or "") not in o.error_codes:
            return f"error code {record.error_code} not in {sorted(o.error_codes)}"
        if o.origins and not any(
            record.origin == wanted or record.origin.rsplit("/", 1)[-1] == wanted
            for wanted in o.origins
        ):
            return f"origin {record.origin} not selected"
        if record.sent_at is not None and (o.older_than or o.newer_than):
            age = self.clock() - record.sent_at
            if o.older_than and age < o.older_than:
                return f"dead-lettered {age} ago, newer than --older-than"
            if o.newer_than and age > o.newer_than:
                return f"dead-lettered {age} ago, older than --newer-than"
        return None

    def _preview(self, record: FailureRecord) -> tuple[dict[str, Any], str]:
        if record.kind in _DIRECT:
            return {"target": record.target_arn, "input": record.target_input}, str(
                record.target_arn
            )
        entry = self._entry(record)
        return entry, str(entry["EventBusName"])

    def _entry(self, record: FailureRecord) -> dict[str, Any]:
        bus = self.o.event_bus or bus_from_rule_arn(record.rule_arn)
        return to_put_events_entry(
            record,
            redrive_source=self.o.redrive_source,
            event_bus_name=bus,
            redriven_at=self.clock(),
        )

    # --- sending ------------------------------------------------------------------------
    def _put_events(self, batch: list[tuple[dict[str, Any], FailureRecord]]) -> None:
        entries: list[dict[str, Any]] = []
        sendable: list[tuple[dict[str, Any], FailureRecord]] = []
        for message, record in batch:
            try:
                entry = self._entry(record)
            except ValueError as exc:
                self._finish_held(
                    message,
                    Outcome.of(record, Status.NOT_REPLAYABLE, reason=str(exc)),
                )
                continue
            unroutable = self._unroutable(record, entry)
            if unroutable and not self.o.force:
                # Accepted by PutEvents is not delivered: an event no rule matches is gone.
                self._finish_held(message, Outcome.of(record, Status.UNROUTABLE, reason=unroutable))
                continue
            entries.append(entry)
            sendable.append((message, record))
        if not entries:
            return
        with self._lock:
            self.report.put_events_calls += 1
        try:
            answer = self.events.put_events(Entries=entries)
        except ClientError as exc:  # the whole call failed: nothing was accepted
            code = str(exc.response.get("Error", {}).get("Code", "ClientError"))
            for message, record in sendable:
                self._entry_failed(message, record, code, str(exc))
            return
        accepted: list[tuple[dict[str, Any], FailureRecord, str]] = []
        failed = 0
        for (message, record), result in zip(sendable, answer["Entries"], strict=True):
            if result.get("EventId") and not result.get("ErrorCode"):
                accepted.append((message, record, str(result["EventId"])))
            else:
                failed += 1
                self._entry_failed(
                    message, record, str(result.get("ErrorCode")), str(result.get("ErrorMessage"))
                )
        self._sent(accepted, destination=str(entries[0]["EventBusName"]))
        if failed == len(sendable):  # nothing got through (throttled?): back off a little
            time.sleep(random.uniform(0, 0.2))  # noqa: S311 - jitter

    def _send_to_target(self, message: dict[str, Any], record: FailureRecord) -> None:
        target = str(record.target_arn)
        service = target.split(":")[2] if target.count(":") >= 5 else ""
        body = record.target_input or ""
        try:
            universal = _UNIVERSAL_TARGETS.get(target.split(":::", 1)[-1])
            if target.startswith("arn:aws:scheduler:::aws-sdk:") and universal is not None:
                # A universal target: the body is the API call's parameters as sent.
                client = self.sqs if universal[0] == "sqs" else self.sfn
                if client is None:
                    raise ValueError(f"no {universal[0]} client for {target}")
                params = json.loads(body)
                if universal[0] == "sfn":  # Step Functions' API members are camelCase
                    params = {k[:1].lower() + k[1:]: v for k, v in params.items()}
                answer = getattr(client, universal[1])(**params)
                sent_id = str(answer.get("MessageId") or answer.get("executionArn"))
            elif service == "sqs":
                url = self.sqs.get_queue_url(QueueName=target.rsplit(":", 1)[-1])["QueueUrl"]
                sent_id = self.sqs.send_message(QueueUrl=url, MessageBody=body)["MessageId"]
            elif service == "states" and self.sfn is not None:
                request = json.loads(body)
                try:
                    sent_id = self.sfn.start_execution(
                        stateMachineArn=request.get("StateMachineArn", target),
                        name=request["Name"],
                        input=request.get("Input", "{}"),
                    )["executionArn"]
                except ClientError as exc:
                    if exc.response.get("Error", {}).get("Code") != "ExecutionAlreadyExists":
                        raise
                    sent_id = f"already started: {request['Name']}"
            elif service == "lambda" and self.lambda_client is not None:
                self.lambda_client.invoke(
                    FunctionName=target, InvocationType="Event", Payload=body.encode()
                )
                sent_id = "invoked"
            else:
                self._finish_held(
                    message,
                    Outcome.of(
                        record,
                        Status.NOT_REPLAYABLE,
                        reason=f"schedule target {target} is not one redrive can send to",
                    ),
                )
                return
        except (ClientError, ValueError, KeyError) as exc:
            self._entry_failed(message, record, _error_code(exc), str(exc))
            return
        self._sent([(message, record, str(sent_id))], destination=target)

    def _sent(
        self, accepted: list[tuple[dict[str, Any], FailureRecord, str]], *, destination: str
    ) -> None:
        if not accepted:
            return
        self._ledger_write([m["MessageId"] for m, _, _ in accepted])
        self._delete([m for m, _, _ in accepted])
        with self._lock:
            self._sent_ids.update(m["MessageId"] for m, _, _ in accepted)
            for message, record, _ in accepted:
                self.report.outcomes[message["MessageId"]] = Outcome.of(
                    record, Status.SENT, destination=destination
                )

    def _entry_failed(
        self, message: dict[str, Any], record: FailureRecord, code: str, text: str
    ) -> None:
        message_id = str(message["MessageId"])
        with self._lock:
            self.report.entry_failures[code] += 1
            self._tries[message_id] += 1
            again = self._tries[message_id] < self.o.entry_attempts
        if again:  # visible again at once: this run picks it up again
            with self._lock:
                self._inflight.discard(message_id)
            self.sqs.change_message_visibility(
                QueueUrl=self.o.queue_url,
                ReceiptHandle=message["ReceiptHandle"],
                VisibilityTimeout=0,
            )
            return
        self._finish_held(
            message,
            Outcome.of(record, Status.FAILED, reason=f"{code}: {text}"[:500]),
        )

    def _send_to_source_queue(self, message: dict[str, Any], record: FailureRecord) -> None:
        """A queue's own dead letter goes back to the queue it came from, unchanged."""
        target = str(record.target_arn)
        try:
            _, _, _, _region, account, name = target.split(":", 5)
            url = self.sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
            kwargs: dict[str, Any] = {"QueueUrl": url, "MessageBody": record.target_input or ""}
            if record.message_attributes:
                kwargs["MessageAttributes"] = record.message_attributes
            sent_id = self.sqs.send_message(**kwargs)["MessageId"]
        except (ClientError, ValueError) as exc:
            self._entry_failed(message, record, _error_code(exc), str(exc))
            return
        self._sent([(message, record, str(sent_id))], destination=target)

    # --- routing ------------------------------------------------------------------------
    def _unroutable(self, record: FailureRecord, entry: dict[str, Any]) -> str | None:
        """Why no enabled rule on the entry's bus would route it, or None when one would.

        PutEvents accepts an event whether or not a rule matches it; an event no rule
        matches is dropped. Each entry is tested (TestEventPattern) against the patterns of
        the bus's enabled rules that have targets, read once per run."""
        if record.kind in _DIRECT or "EventBusName" not in entry:
            return None
        bus = str(entry["EventBusName"])
        with self._lock:
            routes = self._routes.get(bus)
        if routes is None:
            loaded = _Routes.load(self.events, bus, record.rule_arn)
            with self._lock:
                routes = self._routes.setdefault(bus, loaded)
        return routes.why_unroutable(self.events, entry, self.clock())

    # --- SQS dead-letter queues ---------------------------------------------------------
    def _move_back_to_source_queues(self) -> None:
        """A dead-letter queue of other SQS queues: SQS's own StartMessageMoveTask moves every
        message back to the queue it came from. Messages it cannot move (no source queue:
        an EventBridge or Scheduler dead letter in the same queue) are handled one by one
        afterwards."""
        sources = self.sqs.list_dead_letter_source_queues(QueueUrl=self.o.queue_url).get(
            "queueUrls", []
        )
        if not sources:
            return
        started = self.sqs.start_message_move_task(SourceArn=self._queue_arn)
        handle = started["TaskHandle"]
        deadline = time.monotonic() + self.o.move_task_timeout
        task: dict[str, Any] = {}
        while time.monotonic() < deadline:
            tasks = self.sqs.list_message_move_tasks(SourceArn=self._queue_arn, MaxResults=10)
            task = next(
                (t for t in tasks.get("Results", []) if t.get("TaskHandle") == handle),
                tasks.get("Results", [{}])[0] if tasks.get("Results") else {},
            )
            if task.get("Status") not in {"RUNNING", "CANCELLING", None}:
                break
            time.sleep(0.05)
        self.report.move_task = {
            k: v
            for k, v in task.items()
            if k
            in {
                "TaskHandle",
                "Status",
                "ApproximateNumberOfMessagesMoved",
                "ApproximateNumberOfMessagesToMove",
                "FailureReason",
            }
        } | {"TaskHandle": handle, "SourceQueues": sources}

    # --- ledger, deletes, held messages -------------------------------------------------
    def _ledger_key(self, message_id: str) -> dict[str, Any]:
        return {"pk": {"S": f"redrive#{self._queue_arn}"}, "sk": {"S": message_id}}

    def _skip_already_sent(
        self, batch: list[tuple[dict[str, Any], FailureRecord]]
    ) -> list[tuple[dict[str, Any], FailureRecord]]:
        seen_before = [m for m, r in batch if r.receive_count > 1]
        if not seen_before:
            return batch
        table = str(self.o.ledger_table)
        got = self.ddb.batch_get_item(  # type: ignore[union-attr]
            RequestItems={
                table: {
                    "Keys": [self._ledger_key(m["MessageId"]) for m in seen_before],
                    "ConsistentRead": True,
                }
            }
        )
        sent = {item["sk"]["S"] for item in got.get("Responses", {}).get(table, [])}
        for key in (got.get("UnprocessedKeys") or {}).get(table, {}).get("Keys", []):
            sent.discard(key["sk"]["S"])  # unknown: treated as not sent (the safe side)
        if not sent:
            return batch
        done = [(m, r) for m, r in batch if m["MessageId"] in sent]
        self._delete([m for m, _ in done])
        with self._lock:
            for message, record in done:
                self.report.outcomes[message["MessageId"]] = Outcome.of(
                    record,
                    Status.ALREADY_SENT,
                    reason="sent by an earlier run that stopped before deleting it",
                )
        return [(m, r) for m, r in batch if m["MessageId"] not in sent]

    def _ledger_write(self, message_ids: Iterable[str]) -> None:
        if self.ddb is None or not self.o.ledger_table:
            return
        expires = str(int((self.clock() + timedelta(days=LEDGER_DAYS)).timestamp()))
        sent_at = self.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        requests = [
            {
                "PutRequest": {
                    "Item": {
                        **self._ledger_key(mid),
                        "sent_at": {"S": sent_at},
                        "expires_at": {"N": expires},
                    }
                }
            }
            for mid in message_ids
        ]
        table = self.o.ledger_table
        while requests:
            chunk, requests = requests[:25], requests[25:]
            pending: dict[str, Any] = {table: chunk}
            for attempt in range(8):
                left = self.ddb.batch_write_item(RequestItems=pending).get("UnprocessedItems")
                if not left:
                    break
                pending = left
                time.sleep(min(1.0, 0.05 * 2**attempt))
            else:
                raise RuntimeError("ledger writes kept being throttled; nothing was deleted")

    def _delete(self, messages: list[dict[str, Any]]) -> None:
        if not messages:
            return
        result = self.sqs.delete_message_batch(
            QueueUrl=self.o.queue_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ],
        )
        if result.get("Failed"):
            # Sent and in the ledger: the next run deletes them without sending them again.
            raise RuntimeError(f"could not delete sent messages: {result['Failed']}")

    def _finish_held(self, message: dict[str, Any], outcome: Outcome) -> None:
        with self._lock:
            self.report.outcomes[outcome.message_id] = outcome
            self._held[outcome.message_id] = message["ReceiptHandle"]

    def _release_held(self) -> None:
        held = list(self._held.items())
        self._held.clear()
        for start in range(0, len(held), 10):
            chunk = held[start : start + 10]
            try:
                self.sqs.change_message_visibility_batch(
                    QueueUrl=self.o.queue_url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": 0}
                        for i, (_, handle) in enumerate(chunk)
                    ],
                )
            except ClientError:  # they become visible when the visibility timeout ends anyway
                continue

    def _progress(self, final: bool = False) -> None:
        counts = self.report.counts()
        elapsed = time.monotonic() - self.report.started
        line = (
            f"\rredrive: {counts['sent']} sent, {counts['already-sent']} already sent, "
            f"{counts['failed']} failed, {counts['refused']} refused, "
            f"{counts['skipped']} skipped, {counts['unreadable']} unreadable "
            f"[{elapsed:.1f}s]"
        )
        sys.stderr.write(line + ("\n" if final else ""))
        sys.stderr.flush()


def _error_code(exc: Exception) -> str:
    """The AWS error code of a failed call, or the exception's type."""
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code"))
    return type(exc).__name__


_DIRECT = frozenset({RecordKind.SCHEDULER, RecordKind.QUEUE})  # not sent through a bus
# Scheduler universal targets (arn:aws:scheduler:::aws-sdk:<service>:<apiAction>) redrive can
# call again: the dead letter's body is the call's parameters.
_UNIVERSAL_TARGETS = {
    "aws-sdk:sqs:sendMessage": ("sqs", "send_message"),
    "aws-sdk:sfn:startExecution": ("sfn", "start_execution"),
}


@dataclass
class _Routes:
    """The enabled rules of one event bus that have targets, and their patterns."""

    bus: str
    account: str
    region: str
    patterns: list[tuple[str, str]]  # (rule name, EventPattern)

    @classmethod
    def load(cls, events: Any, bus: str, rule_arn: str | None) -> _Routes:
        arn = str(events.describe_event_bus(Name=bus)["Arn"])
        _, _, _, region, account, _ = arn.split(":", 5)
        patterns: list[tuple[str, str]] = []
        kwargs: dict[str, Any] = {"EventBusName": bus}
        while True:
            page = events.list_rules(**kwargs)
            for rule in page.get("Rules", []):
                if not str(rule.get("State", "")).startswith("ENABLED"):
                    continue
                if not rule.get("EventPattern"):
                    continue  # a scheduled rule: events never match it
                targets = events.list_targets_by_rule(Rule=rule["Name"], EventBusName=bus)
                if targets.get("Targets"):
                    patterns.append((str(rule["Name"]), str(rule["EventPattern"])))
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = page["NextToken"]
        return cls(bus, account, region, patterns)

    def why_unroutable(self, events: Any, entry: dict[str, Any], now: datetime) -> str | None:
        if not self.patterns:
            return f"no enabled rule with targets on event bus {self.bus}: nothing would receive it"
        when = entry.get("Time") or now
        event = {
            "version": "0",
            "id": "00000000-0000-0000-0000-000000000000",
            "detail-type": entry["DetailType"],
            "source": entry["Source"],
            "account": self.account,
            "time": when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": self.region,
            "resources": entry.get("Resources", []),
            "detail": json.loads(entry["Detail"]),
        }
        document = json.dumps(event)
        for _, pattern in self.patterns:
            if events.test_event_pattern(EventPattern=pattern, Event=document)["Result"]:
                return None
        names = ", ".join(name for name, _ in self.patterns)
        return (
            f"no enabled rule on event bus {self.bus} matches it (source {entry['Source']!r}, "
            f"detail-type {entry['DetailType']!r}; rules: {names}): PutEvents would accept it "
            "and it would be lost. Fix the rule or the event, or use --force"
        )
