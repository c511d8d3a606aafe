"""Shared test helpers: sample events and files, polling (never a bare sleep)."""

from __future__ import annotations

from ingest_tools.localcloud.pipeline import EVENTS, ROOT, TEMPLATE, load_event, wait_for

__all__ = ["AWKWARD_KEYS", "EVENTS", "ROOT", "TEMPLATE", "load_event", "sample_file", "wait_for"]

# Keys whose encoding S3 and EventBridge disagree about in public reports: space, '+', a
# literal '%20', non-ASCII.
AWKWARD_KEYS = [
    "incoming/orders/with space.csv",
    "incoming/orders/plus+sign.csv",
    "incoming/orders/percent%20literal.csv",
    "incoming/orders/d\u00e9j\u00e0-\u6771\u4eac.csv",
]


def sample_file(name: str) -> bytes:
    return (EVENTS / "files" / name).read_bytes()
