"""The result of one redrive run: each message's outcome and the run's counters."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ingest_tools.recovery.redrive.model import LEFT_IN_QUEUE, NOT_MOVED, REFUSED, Outcome, Status

__all__ = ["RedriveReport"]


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
    source_queues: list[str] = field(default_factory=list)  # ListDeadLetterSourceQueues

    def counts(self) -> dict[str, int]:
        counted = Counter(o.status.value for o in self.outcomes.values())
        return {status.value: counted.get(status.value, 0) for status in Status}

    @property
    def moved(self) -> int:
        return self.totals()["moved"]

    def totals(self) -> dict[str, int]:
        """The run's outcome in four numbers a script can act on:

        * ``moved``: back where they failed to go (sent message by message, deleted after an
          earlier run's send, or moved by the SQS move task: ``movedByTask``);
        * ``refused``: not sent because they would fail again, no rule would route them or
          their destination is ambiguous (``refused`` and ``unroutable``);
        * ``unreadable``: in no known format;
        * ``leftInQueue``: every message the run was asked to move and did not (refused,
          unreadable, not replayable, failed); ``skipped`` (filtered out) and ``dry-run``
          messages are left in the queue on purpose and are not counted here.
        """
        counts = self.counts()
        by_task = int((self.move_task or {}).get("ApproximateNumberOfMessagesMoved", 0))
        return {
            "moved": counts[Status.SENT] + counts[Status.ALREADY_SENT] + by_task,
            "sent": counts[Status.SENT],
            "alreadySent": counts[Status.ALREADY_SENT],
            "movedByTask": by_task,
            "refused": sum(counts[status] for status in REFUSED),
            "unreadable": counts[Status.UNREADABLE],
            "leftInQueue": sum(counts[status] for status in NOT_MOVED),
            "skipped": counts[Status.SKIPPED],
        }

    @property
    def move_task_unfinished(self) -> bool:
        """The SQS move task was still running when the run stopped waiting for it."""
        if self.move_task is None:
            return False
        return self.move_task.get("Status") not in {"COMPLETED", "FAILED", "CANCELLED"}

    @property
    def exit_status(self) -> int:
        """1 when any message was refused or left in the queue (or the move task had not
        finished), else 0: the truth for a script (``ingestctl redrive``'s exit status)."""
        left = self.totals()["leftInQueue"]  # refused ones included
        return 1 if left or self.move_task_unfinished else 0

    def to_dict(self, *, details: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "queueUrl": self.queue_url,
            "dryRun": self.dry_run,
            "counts": self.counts(),
            "totals": self.totals(),
            "exitStatus": self.exit_status,
            "messagesPerSecond": round(self.moved / self.elapsed, 1) if self.elapsed else None,
            "elapsedSeconds": round(self.elapsed, 3),
            "putEventsCalls": self.put_events_calls,
            "entryFailures": dict(self.entry_failures),
        }
        if self.move_task is not None:
            out["moveTask"] = self.move_task
        if self.source_queues:
            out["sourceQueues"] = list(self.source_queues)
        if details:
            out["leftInQueue"] = [
                {k: v for k, v in asdict(o).items() if v is not None}
                for o in self.outcomes.values()
                if o.status in LEFT_IN_QUEUE
            ]
        return out
