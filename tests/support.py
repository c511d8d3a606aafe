"""Shared test helpers: sample events and files, polling (never a bare sleep)."""

from __future__ import annotations

from ingest_tools.localcloud.pipeline import EVENTS, ROOT, TEMPLATE, load_event, wait_for

__all__ = ["EVENTS", "ROOT", "TEMPLATE", "load_event", "sample_file", "wait_for"]


def sample_file(name: str) -> bytes:
    return (EVENTS / "files" / name).read_bytes()
