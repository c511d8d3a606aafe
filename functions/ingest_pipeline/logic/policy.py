"""The tunable policies of failure handling and reconciliation, and their defaults.

Each default has exactly one home, here: ``ingest_pipeline.config`` reads them for the
environment variables it does not find (template.yaml's Parameters repeat them, checked by
``tests/unit/test_config.py``). A module of its own, so that reading the settings does not
load the failure reports or the reconciliation planner (cold start, issue 12).
"""

from __future__ import annotations

from msgspec import Struct


class FailurePolicy(Struct, frozen=True):
    """Backoff before the reconciler may retry a FAILED-retryable object, and record TTL.

    These defaults are the only ones: ``ingest_pipeline.config.Settings`` reads them for the
    environment variables it does not find (template.yaml's Parameters repeat them, checked
    by ``tests/unit/test_config.py``).
    """

    retry_base_seconds: int = 300
    retry_max_seconds: int = 6 * 3600
    record_retention_days: int = 90

    def retry_delay(self, attempt: int) -> int:
        exponent = max(attempt, 1) - 1
        return int(min(self.retry_max_seconds, self.retry_base_seconds * 2 ** min(exponent, 30)))


class ReconcilePolicy(Struct, frozen=True):
    max_attempts: int = 5
    missed_grace_seconds: int = 900
    missed_lookback_hours: int = 72
    max_starts_per_run: int = 500  # the rest waits for the next run (counted as deferred)
