"""The redrive run loop: receive, triage, check routes, send, delete only after a confirmed send.

Workers share one run: each receives up to 10 messages, drops copies another worker holds or
this run already sent, triages them (``triage``), deletes those the sent ledger says an
earlier run sent, sends the rest (``senders``) and settles each answer: a sent message is
written to the ledger and then deleted; a failed one is made visible again and retried up to
``entry_attempts`` times; anything else is held (hidden) until the run ends and then made
visible again.
"""

from __future__ import annotations

import dataclasses
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from ingest_tools.recovery.formats import RecordKind
from ingest_tools.recovery.redrive.ledger import SentLedger
from ingest_tools.recovery.redrive.model import DeadLetter, Outcome, RedriveOptions, Status
from ingest_tools.recovery.redrive.report import RedriveReport
from ingest_tools.recovery.redrive.routes import Routes
from ingest_tools.recovery.redrive.senders import (
    PUT_EVENTS_MAX_ENTRIES,
    BusEntry,
    Failed,
    Refused,
    Senders,
    Sent,
    SourceQueue,
)
from ingest_tools.recovery.redrive.triage import DIRECT_KINDS, dry_run, put_events_entry, triage

__all__ = ["Redriver"]

_RECEIVE_MAX = 10  # ReceiveMessage / ChangeMessageVisibilityBatch / DeleteMessageBatch limit


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
    """One redrive run over one queue (see the package docstring)."""

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
        self.senders = Senders(
            sqs=sqs, events=events, stepfunctions=stepfunctions, lambda_client=lambda_client
        )
        self.routes = Routes(events, clock)
        self.ledger: SentLedger | None = None  # known once the queue's ARN is (run)
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
        self._sources: list[SourceQueue] = []  # queues that name this one as their DLQ

    # --- the run ------------------------------------------------------------------------
    def run(self) -> RedriveReport:
        queue_arn = str(
            self.sqs.get_queue_attributes(QueueUrl=self.o.queue_url, AttributeNames=["QueueArn"])[
                "Attributes"
            ]["QueueArn"]
        )
        self._queue_arn = queue_arn
        if self.ddb is not None and self.o.ledger_table:
            self.ledger = SentLedger(
                self.ddb, self.o.ledger_table, queue_arn=queue_arn, clock=self.clock
            )
        workers = max(1, self.o.concurrency)
        try:
            self._sources = self.senders.source_queues(self.o.queue_url)
            self.report.source_queues = [source.url for source in self._sources]
            if len(self._sources) == 1 and not self.o.selective:
                self.report.move_task = self.senders.move_to_source_queue(
                    queue_arn, self._sources[0], timeout=self.o.move_task_timeout
                )
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
            want = self._reserve(_RECEIVE_MAX)
            if want == 0:
                return
            got = self.sqs.receive_message(
                QueueUrl=self.o.queue_url,
                MaxNumberOfMessages=want,
                VisibilityTimeout=self.o.visibility_timeout,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            messages: list[dict[str, Any]] = got.get("Messages", [])
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
        self._delete(m["ReceiptHandle"] for m in sent_again)  # only this copy's delete is left
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
        to_send: list[DeadLetter] = []
        for message in messages:
            verdict = triage(message, self.o, self.clock())
            if isinstance(verdict, DeadLetter) and verdict.kind is RecordKind.QUEUE:
                verdict = self._to_source_queue(verdict)
            if isinstance(verdict, Outcome):
                self._hold(message, verdict)
            elif self.o.dry_run:
                outcome = dry_run(verdict.record, self.o, self.clock(), self.routes.why_unroutable)
                self._hold(message, outcome)
            else:
                to_send.append(verdict)
        if not to_send:
            return
        if self.ledger is not None:
            to_send = self._skip_already_sent(self.ledger, to_send)
        bus_letters = [letter for letter in to_send if letter.kind not in DIRECT_KINDS]
        for start in range(0, len(bus_letters), PUT_EVENTS_MAX_ENTRIES):
            self._put_events(bus_letters[start : start + PUT_EVENTS_MAX_ENTRIES])
        for letter in to_send:
            if letter.kind is RecordKind.SCHEDULER:
                self._settle([self.senders.to_target(letter)])
            elif letter.kind is RecordKind.QUEUE:
                self._settle([self.senders.to_source_queue(letter)])

    def _to_source_queue(self, letter: DeadLetter) -> DeadLetter | Outcome:
        """A queue message without ``DeadLetterQueueSourceArn`` (sent straight to the
        dead-letter queue) goes to the queue's only source queue; with none or several, where
        it belongs is unknown and it is refused, left in place."""
        record = letter.record
        if record.target_arn is not None:
            return letter
        if len(self._sources) == 1:
            destination = self._sources[0].arn
            return DeadLetter(letter.message, dataclasses.replace(record, target_arn=destination))
        if not self._sources:
            why = "no queue names this queue as its dead-letter queue (ListDeadLetterSourceQueues)"
        else:
            names = ", ".join(source.url for source in self._sources)
            why = f"{len(self._sources)} queues name this queue as their dead-letter queue: {names}"
        reason = (
            "no DeadLetterQueueSourceArn (sent straight to the dead-letter queue) and "
            + why
            + ": where it belongs is ambiguous, so it is left in place. Move it with "
            "`aws sqs start-message-move-task --source-arn <this queue> --destination-arn "
            "<its queue>`, or send it there and delete it"
        )
        return Outcome.of(record, Status.REFUSED, reason=reason)

    def _skip_already_sent(self, ledger: SentLedger, batch: list[DeadLetter]) -> list[DeadLetter]:
        """Delete (without sending) what an earlier, interrupted run sent; the rest to send."""
        seen_before = [letter for letter in batch if letter.record.receive_count > 1]
        if not seen_before:
            return batch
        sent = ledger.already_sent(letter.message_id for letter in seen_before)
        if not sent:
            return batch
        done = [letter for letter in batch if letter.message_id in sent]
        self._delete(letter.receipt_handle for letter in done)
        with self._lock:
            for letter in done:
                self.report.outcomes[letter.message_id] = Outcome.of(
                    letter.record,
                    Status.ALREADY_SENT,
                    reason="sent by an earlier run that stopped before deleting it",
                )
        return [letter for letter in batch if letter.message_id not in sent]

    def _put_events(self, batch: list[DeadLetter]) -> None:
        ready: list[BusEntry] = []
        for letter in batch:
            record = letter.record
            try:
                entry = put_events_entry(record, self.o, self.clock())
            except ValueError as exc:
                self._hold(
                    letter.message, Outcome.of(record, Status.NOT_REPLAYABLE, reason=str(exc))
                )
                continue
            unroutable = self.routes.why_unroutable(record, entry)
            if unroutable and not self.o.force:
                # Accepted by PutEvents is not delivered: an event no rule matches is gone.
                outcome = Outcome.of(record, Status.UNROUTABLE, reason=unroutable)
                self._hold(letter.message, outcome)
                continue
            ready.append(BusEntry(letter, entry))
        if not ready:
            return
        with self._lock:
            self.report.put_events_calls += 1
        answer = self.senders.put_events(ready)
        self._settle(answer.results)
        if answer.throttled:  # nothing got through: back off a little
            time.sleep(random.uniform(0, 0.2))  # noqa: S311 - jitter

    # --- settling what the senders answered ---------------------------------------------
    def _settle(self, results: Iterable[Sent | Failed | Refused]) -> None:
        """Failed entries first (in order), then every sent one in one ledger write and one
        delete."""
        sent: list[Sent] = []
        for result in results:
            if isinstance(result, Sent):
                sent.append(result)
            elif isinstance(result, Failed):
                self._entry_failed(result)
            else:
                outcome = Outcome.of(
                    result.letter.record, Status.NOT_REPLAYABLE, reason=result.reason
                )
                self._hold(result.letter.message, outcome)
        if not sent:
            return
        if self.ledger is not None:
            self.ledger.record(s.letter.message_id for s in sent)
        self._delete(s.letter.receipt_handle for s in sent)
        with self._lock:
            self._sent_ids.update(s.letter.message_id for s in sent)
            for s in sent:
                self.report.outcomes[s.letter.message_id] = Outcome.of(
                    s.letter.record, Status.SENT, destination=s.destination
                )

    def _entry_failed(self, failed: Failed) -> None:
        letter = failed.letter
        message_id = letter.message_id
        with self._lock:
            self.report.entry_failures[failed.code] += 1
            self._tries[message_id] += 1
            again = self._tries[message_id] < self.o.entry_attempts
        if again:  # visible again at once: this run picks it up again
            with self._lock:
                self._inflight.discard(message_id)
            self.sqs.change_message_visibility(
                QueueUrl=self.o.queue_url,
                ReceiptHandle=letter.receipt_handle,
                VisibilityTimeout=0,
            )
            return
        reason = f"{failed.code}: {failed.text}"[:500]
        self._hold(letter.message, Outcome.of(letter.record, Status.FAILED, reason=reason))

    # --- deletes, held messages, progress -----------------------------------------------
    def _delete(self, receipt_handles: Iterable[str]) -> None:
        handles = list(receipt_handles)
        if not handles:
            return
        result = self.sqs.delete_message_batch(
            QueueUrl=self.o.queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": handle} for i, handle in enumerate(handles)],
        )
        if result.get("Failed"):
            # Sent and in the ledger: the next run deletes them without sending them again.
            raise RuntimeError(f"could not delete sent messages: {result['Failed']}")

    def _hold(self, message: Mapping[str, Any], outcome: Outcome) -> None:
        """Leave a message in the queue with this outcome (visible again when the run ends)."""
        with self._lock:
            self.report.outcomes[outcome.message_id] = outcome
            self._held[outcome.message_id] = message["ReceiptHandle"]

    def _release_held(self) -> None:
        held = list(self._held.items())
        self._held.clear()
        for start in range(0, len(held), _RECEIVE_MAX):
            chunk = held[start : start + _RECEIVE_MAX]
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
