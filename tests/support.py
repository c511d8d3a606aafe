"""Shared test helpers: sample events and polling (never a bare sleep)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
EVENTS = ROOT / "events"
TEMPLATE = ROOT / "template.yaml"
T = TypeVar("T")


def load_event(name: str) -> Any:
    """A sample event from events/ (the same files `sam local invoke -e` uses)."""
    return json.loads((EVENTS / name).read_text())


def sample_file(name: str) -> bytes:
    return (EVENTS / "files" / name).read_bytes()


def wait_for(
    probe: Callable[[], T | None], *, timeout: float = 10.0, interval: float = 0.01, what: str = ""
) -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what or probe}")
        time.sleep(interval)
