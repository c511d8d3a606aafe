"""Settings read from the function's environment (set by template.yaml)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ingest_pipeline.errors import ConfigurationError
from ingest_pipeline.logic.failure import FailurePolicy
from ingest_pipeline.logic.transform import DEFAULT_MAX_LINE_BYTES


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ConfigurationError(f"environment variable {name}={raw!r} is not an integer") from exc


@dataclass(frozen=True)
class Settings:
    max_line_bytes: int
    failure_policy: FailurePolicy

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            max_line_bytes=_int("MAX_LINE_BYTES", DEFAULT_MAX_LINE_BYTES),
            failure_policy=FailurePolicy(
                retry_base_seconds=_int("RETRY_BASE_SECONDS", 300),
                retry_max_seconds=_int("RETRY_MAX_SECONDS", 6 * 3600),
                record_retention_days=_int("RECORD_RETENTION_DAYS", 90),
            ),
        )
