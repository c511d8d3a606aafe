"""The ``dead-letters:<Queue>`` checks: one per dead-letter queue output of the stack.

A message in a dead-letter queue is an object (or a reconcile run) that nothing will retry:
it waits for a person to fix the cause and redrive it. So a queue that holds any message
FAILs, whatever its age, and doctor exits 1: a scheduled doctor pages as the DLQ alarms do.
The line names the queue, how many messages it holds, the oldest one's age, the error codes
seen (the ERROR_CODE attribute of each message) and the ``ingestctl redrive`` command.

The figures are ``ingestctl inspect``'s (``recovery.inspect.inspect_queue``): messages are
received with a short visibility timeout, counted and made visible again at once; nothing is
deleted (each message's receive count goes up by one, as any peek at SQS does).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ingest_tools.doctor.report import Check, Status, duration
from ingest_tools.recovery.formats import RecordKind
from ingest_tools.recovery.inspect import QueueSummary, inspect_queue

if TYPE_CHECKING:
    from ingest_tools.doctor.context import Context

__all__ = ["PEEK_LIMIT", "check", "check_name", "output_keys", "queue_name", "verdict"]

#: How many messages one check peeks at (the count is SQS's approximate total).
PEEK_LIMIT = 100
#: The stack outputs that name dead-letter queues end so (EventDeliveryDLQUrl, ReconcileDLQUrl,
#: ReconcileScheduleDLQUrl in template.yaml).
OUTPUT_SUFFIX = "DLQUrl"


def output_keys(outputs: Mapping[str, str]) -> list[str]:
    """The stack's dead-letter queue outputs, sorted: one check each."""
    return sorted(key for key in outputs if key.endswith(OUTPUT_SUFFIX))


def queue_name(output_key: str) -> str:
    """The queue's logical name, as ``ingestctl inspect`` / ``redrive`` and the alarms name it."""
    return output_key.removesuffix("Url")


def check_name(output_key: str) -> str:
    return f"dead-letters:{queue_name(output_key)}"


def check(context: Context, output_key: str) -> list[Check]:
    """Peek at the queue of ``output_key`` (``ingestctl inspect``'s read) and judge it."""
    summary = inspect_queue(
        context.clients.sqs, context.output(output_key), limit=PEEK_LIMIT, now=context.now
    )
    return [verdict(queue_name(output_key), summary, context.now, context.ingestctl)]


def verdict(
    queue: str, summary: QueueSummary, now: datetime, ingestctl: Callable[[str], str]
) -> Check:
    """PASS when the queue is empty, else FAIL with its count, oldest message, error codes
    and what to run (``ingestctl(command)`` adds doctor's connection options)."""
    name = f"dead-letters:{queue}"
    total = max(summary.approximate_total, summary.inspected)
    if not total:
        return Check(name, Status.PASS, f"{queue} is empty")
    age = now - summary.oldest if summary.oldest else None
    parts = [
        f"{total} message{'s' if total != 1 else ''} in {queue}",
        f"oldest {summary.oldest:%Y-%m-%d %H:%M:%S}Z ({duration(age)} ago)"
        if summary.oldest and age is not None
        else "age unknown",
    ]
    if summary.by_error_code:
        of = f" (of the {summary.inspected} inspected)" if summary.inspected < total else ""
        codes = ", ".join(f"{code} {n}" for code, n in summary.by_error_code.most_common())
        parts.append(f"by error code{of}: {codes}")
    elif not summary.inspected:
        parts.append("none could be inspected (another reader holds them: try again)")
    moved = summary.by_kind.get(RecordKind.QUEUE.value, 0)
    if moved:
        parts.append(
            f"{moved} moved by the source queue's redrive policy after its maxReceiveCount "
            "receives (SQS records no error code: see the consumer's log)"
        )
    if summary.unreadable:
        parts.append(f"{len(summary.unreadable)} unreadable")
    redrive = ingestctl(f"redrive {queue}")
    action = f"{ingestctl(f'inspect {queue}')}, fix the cause, then {redrive}"
    if summary.refused:
        action += (
            f" (redrive refuses {summary.refused} of them until the cause is fixed, or with "
            "--force)"
        )
    data: dict[str, Any] = {
        "queue": queue,
        **summary.to_dict(),
        "oldestAgeSeconds": age.total_seconds() if age is not None else None,
        "redrive": redrive,
    }
    data.pop("samples", None)
    return Check(name, Status.FAIL, "; ".join(parts), action, data)
