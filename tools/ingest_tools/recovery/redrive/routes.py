"""Would any rule route it? PutEvents accepts an event whether or not a rule matches it, and
an event no rule matches is dropped: so before a bus entry is sent it is tested
(TestEventPattern) against the patterns of the bus's enabled rules that have targets, read
once per run and bus."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ingest_tools.recovery.formats import FailureRecord
from ingest_tools.recovery.redrive.triage import DIRECT_KINDS

__all__ = ["BusRoutes", "Routes"]


class Routes:
    """The route check of one run: the rules of each bus it meets, loaded once (thread-safe)."""

    def __init__(self, events: Any, clock: Callable[[], datetime]) -> None:
        self.events = events
        self.clock = clock
        self._lock = threading.Lock()
        self._buses: dict[str, BusRoutes] = {}

    def why_unroutable(self, record: FailureRecord, entry: dict[str, Any]) -> str | None:
        """Why no enabled rule on the entry's bus would route it, or None when one would."""
        if record.kind in DIRECT_KINDS or "EventBusName" not in entry:
            return None
        bus = str(entry["EventBusName"])
        with self._lock:
            routes = self._buses.get(bus)
        if routes is None:
            loaded = BusRoutes.load(self.events, bus)
            with self._lock:
                routes = self._buses.setdefault(bus, loaded)
        return routes.why_unroutable(self.events, entry, self.clock())


@dataclass
class BusRoutes:
    """The enabled rules of one event bus that have targets, and their patterns."""

    bus: str
    account: str
    region: str
    patterns: list[tuple[str, str]]  # (rule name, EventPattern)

    @classmethod
    def load(cls, events: Any, bus: str) -> BusRoutes:
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
        when: datetime = entry.get("Time") or now
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
