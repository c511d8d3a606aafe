"""The result of one redrive run: each message's outcome and the run's counters."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ingest_tools.recovery.redrive.model import LEFT_IN_QUEUE, Outcome, Status

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
