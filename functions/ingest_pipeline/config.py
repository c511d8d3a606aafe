"""Settings read from the function's environment (set by template.yaml)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ingest_pipeline.errors import ConfigurationError
from ingest_pipeline.logic.failure import FailurePolicy
from ingest_pipeline.logic.reconcile import ReconcilePolicy
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


def _required(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise ConfigurationError(f"environment variable {name} is not set (see template.yaml)")
    return value


@dataclass(frozen=True)
class ReconcileSettings:
    table: str
    state_machine_arn: str
    bucket: str
    operations_topic_arn: str
    policy: ReconcilePolicy
    run_lease_seconds: int
    record_retention_days: int
    incoming_prefix: str = "incoming/"

    @classmethod
    def from_env(cls) -> ReconcileSettings:
        return cls(
            table=_required("OBJECT_STATE_TABLE"),
            state_machine_arn=_required("PIPELINE_STATE_MACHINE_ARN"),
            bucket=_required("INGEST_BUCKET"),
            operations_topic_arn=_required("OPERATIONS_TOPIC_ARN"),
            policy=ReconcilePolicy(
                max_attempts=_int("RECONCILE_MAX_ATTEMPTS", 5),
                missed_grace_seconds=_int("MISSED_EVENT_GRACE_SECONDS", 900),
                missed_lookback_hours=_int("MISSED_EVENT_LOOKBACK_HOURS", 72),
                max_starts_per_run=_int("RECONCILE_MAX_STARTS_PER_RUN", 500),
            ),
            run_lease_seconds=_int("RUN_LEASE_SECONDS", 120),
            record_retention_days=_int("RECORD_RETENTION_DAYS", 90),
        )
