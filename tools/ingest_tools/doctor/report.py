"""What ``ingestctl doctor`` reports: one ``Check`` per line, a ``Report`` of them all."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

__all__ = ["Check", "Report", "Status", "duration"]


class Status(StrEnum):
    PASS = "PASS"  # noqa: S105 - a verdict, not a password
    WARN = "WARN"
    FAIL = "FAIL"


@dataclass(frozen=True)
class Check:
    """One check's verdict. ``action`` (what to do) is given for WARN and FAIL only;
    ``data`` holds the figures behind ``detail`` for machines (``--json``)."""

    name: str
    status: Status
    detail: str
    action: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status.value,
            "detail": self.detail,
            "action": self.action or None,
            "data": dict(self.data),
        }


@dataclass(frozen=True)
class Report:
    stack: str | None
    checked_at: datetime
    checks: Sequence[Check]

    def count(self, status: Status) -> int:
        return sum(1 for c in self.checks if c.status is status)

    def exit_code(self, *, strict: bool = False) -> int:
        """0 when nothing FAILs (and, with ``strict``, nothing WARNs); else 1: something needs
        a person. (``ingestctl doctor`` exits 2 itself when it cannot read the stack.)"""
        if self.count(Status.FAIL) or (strict and self.count(Status.WARN)):
            return 1
        return 0

    def to_dict(self, *, strict: bool = False) -> dict[str, Any]:
        code = self.exit_code(strict=strict)
        return {
            "stack": self.stack,
            "checkedAt": self.checked_at.isoformat(),
            "strict": strict,
            "ok": code == 0,
            "exitCode": code,
            "counts": {s.value: self.count(s) for s in Status},
            "checks": [c.to_dict() for c in self.checks],
        }

    def render(self, *, strict: bool = False) -> str:
        """``STATUS  name  detail — action``, one line per check, then a summary line."""
        width = max((len(c.name) for c in self.checks), default=0)
        lines = []
        for check in self.checks:
            text = check.detail
            if check.status is not Status.PASS and check.action:
                text = f"{text} \u2014 {check.action}"
            lines.append(f"{check.status.value:<4}  {check.name.ljust(width)}  {text}")
        counts = ", ".join(f"{self.count(s)} {s.value}" for s in Status)
        verdict = "healthy" if self.exit_code(strict=strict) == 0 else "needs attention"
        where = f"stack {self.stack}" if self.stack else "the stack"
        lines.append(f"{where}: {counts}: {verdict}" + (" (--strict)" if strict else ""))
        return "\n".join(lines)


def duration(value: timedelta | None) -> str:
    """``45 s``, ``12 min``, ``3 h``, ``2 d``: how people say an age."""
    if value is None:
        return "unknown"
    seconds = max(0, int(value.total_seconds()))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 2 * 3600:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"
