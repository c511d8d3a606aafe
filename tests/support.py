"""Shared test helpers: sample events and files, polling (never a bare sleep)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ingest_tools.localcloud.cloud import ROOT, TEMPLATE

EVENTS = ROOT / "events"
T = TypeVar("T")

__all__ = ["AWKWARD_KEYS", "EVENTS", "ROOT", "TEMPLATE", "load_event", "sample_file", "wait_for"]

# Keys whose encoding S3 and EventBridge disagree about in public reports: space, '+', a
# literal '%20', non-ASCII.
AWKWARD_KEYS = [
    "incoming/orders/with space.csv",
    "incoming/orders/plus+sign.csv",
    "incoming/orders/percent%20literal.csv",
    "incoming/orders/d\u00e9j\u00e0-\u6771\u4eac.csv",
]


def load_event(name: str) -> Any:
    """A sample event from events/ (the same files `sam local invoke -e` uses)."""
    return json.loads((EVENTS / name).read_text())


def wait_for(
    probe: Callable[[], T | None], *, timeout: float = 10.0, interval: float = 0.01, what: str = ""
) -> T:
    """Poll ``probe`` until it returns something truthy; TimeoutError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what or probe}")
        time.sleep(interval)


def sample_file(name: str) -> bytes:
    return (EVENTS / "files" / name).read_bytes()
