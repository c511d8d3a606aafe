"""Redrive a dead-letter queue: every message goes back where it failed to go, exactly once.

SQS's own redrive (StartMessageMoveTask) only serves queues fed by other queues, and an
EventBridge DLQ holds events whose ``aws.*`` source PutEvents refuses (seed 002). So:

* rule DLQ records (and Lambda on-failure records whose payload is an event) go back on the
  rule's event bus with PutEvents, in batches of up to 10 entries. The reserved source is
  rewritten to the project's redrive source (which the pipeline rule accepts) and the
  provenance (original source, event id, error code, attempts) travels in
  ``detail.redrive`` (``formats.to_put_events_entry``);
* Scheduler DLQ records go back to their target: SQS SendMessage, or StartExecution under the
  same execution name (idempotent), or an asynchronous Lambda invoke;
* queue messages (``ReconcileDLQ``: moved by a source queue's RedrivePolicy, or a reconcile
  run sent straight to the DLQ with no ``DeadLetterQueueSourceArn``) go back to their source
  queue. The DLQ's source queues are listed (ListDeadLetterSourceQueues). With exactly one
  and no filter, SQS's own StartMessageMoveTask moves the whole queue there, with that queue
  as explicit ``DestinationArn`` (without it SQS cannot place a message that has no
  ``DeadLetterQueueSourceArn`` and fails the task). Otherwise message by message:
  SendMessage to ``DeadLetterQueueSourceArn``, else to the only source queue; with none or
  several, a message without a source is refused (ambiguous) and left in place.

The result (``RedriveReport``) counts each outcome (``totals``: moved, refused, unreadable,
left in the queue) and ``exit_status`` is 1 when any message was refused or left in the queue
although the run was asked to move it (filtered-out and dry-run messages do not count).

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

The modules, by concern:

* ``model``: the options, ``DeadLetter`` (a received message with its parsed record), the
  statuses and ``Outcome``;
* ``triage``: what to do with one message (pure: no AWS calls);
* ``routes``: would an enabled rule route a PutEvents entry (TestEventPattern);
* ``senders``: PutEvents, SendMessage, StartExecution, Lambda invoke, ListDeadLetterSourceQueues,
  StartMessageMoveTask;
* ``ledger``: the sent ledger in DynamoDB;
* ``report``: the run's result, its totals and exit status;
* ``runner``: the run loop (``Redriver``).
"""

from __future__ import annotations

from ingest_tools.recovery.redrive.ledger import LEDGER_DAYS
from ingest_tools.recovery.redrive.model import DeadLetter, Outcome, RedriveOptions, Status
from ingest_tools.recovery.redrive.report import RedriveReport
from ingest_tools.recovery.redrive.runner import Redriver
from ingest_tools.recovery.redrive.senders import PUT_EVENTS_MAX_ENTRIES

__all__ = [
    "LEDGER_DAYS",
    "PUT_EVENTS_MAX_ENTRIES",
    "DeadLetter",
    "Outcome",
    "RedriveOptions",
    "RedriveReport",
    "Redriver",
    "Status",
]
