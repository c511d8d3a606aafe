"""Settings read from the function's environment (set by template.yaml).

Each settings model is a frozen dataclass whose field aliases are the environment variable
names (``ingest_pipeline.parsing``). A value is validated (type and bounds) when a handler
first asks for its settings in an execution environment; the result is reused while the
environment stays the same, so a Lambda validates once per cold start. An invalid or missing
variable raises ``ConfigurationError`` naming the variable: a deployment problem, routed to
operations.

Defaults: each has exactly one home. The domain policies (``FailurePolicy``,
``ReconcilePolicy``) hold the tunables' defaults and the fields below read them from there;
settings that belong to no policy hold theirs here. template.yaml's Parameters repeat them
as the deployed values; ``tests/unit/test_config.py`` keeps the two in step.

An empty variable counts as unset (its default applies, or it is reported as missing).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Self, cast

from ingest_pipeline.errors import ConfigurationError
from ingest_pipeline.logic.keys import INCOMING_PREFIX
from ingest_pipeline.logic.policy import FailurePolicy, ReconcilePolicy
from ingest_pipeline.parsing import ParseError, alias_of, parse, rules

MIB = 1024 * 1024
_FAILURE = FailurePolicy()
_RECONCILE = ReconcilePolicy()


@dataclass(frozen=True, kw_only=True)
class EnvSettings:
    """Base of the settings models: fields aliased to environment variable names."""

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """The environment variables this model reads."""
        return tuple(alias_of(f) for f in dataclasses.fields(cls))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """Validated settings from ``environ`` (default ``os.environ``).

        Raises ``ConfigurationError`` naming each invalid or missing variable.
        """
        source = os.environ if environ is None else environ
        values = tuple((name, source[name]) for name in cls.env_names() if source.get(name))
        model: object = cls  # mypy takes the class's __hash__ for its instances' (unbound)
        return cast(Self, _validated(model, values))


@functools.lru_cache(maxsize=16)
def _validated(model: object, values: tuple[tuple[str, str], ...]) -> EnvSettings:
    """Validated once per distinct environment (failures are not cached: they raise)."""
    given = dict(values)
    try:
        settings: EnvSettings = parse(cast(type[EnvSettings], model), given, strip_whitespace=True)
        return settings
    except ParseError as exc:
        raise ConfigurationError(_describe(exc, given), variables=_names(exc)) from exc


def _names(exc: ParseError) -> list[str]:
    return [str(problem.loc[0]) for problem in exc.problems if problem.loc]


def _describe(exc: ParseError, given: Mapping[str, str]) -> str:
    problems = []
    for problem in exc.problems:
        if not problem.loc:  # a check across variables: its message names them
            problems.append(problem.msg)
            continue
        name = str(problem.loc[0])
        if problem.type == "missing":
            problems.append(f"environment variable {name} is not set (see template.yaml)")
        else:
            problems.append(f"environment variable {name}={given.get(name)!r}: {problem.msg}")
    return "; ".join(problems)


@dataclass(frozen=True, kw_only=True)
class Settings(EnvSettings):
    """ProcessObject, ClassifyError and Quarantine: the failure report's policy."""

    retry_base_seconds: int = field(
        default=_FAILURE.retry_base_seconds, metadata=rules(alias="RETRY_BASE_SECONDS", gt=0)
    )
    retry_max_seconds: int = field(
        default=_FAILURE.retry_max_seconds, metadata=rules(alias="RETRY_MAX_SECONDS", gt=0)
    )
    record_retention_days: int = field(
        default=_FAILURE.record_retention_days, metadata=rules(alias="RECORD_RETENTION_DAYS", gt=0)
    )

    def __post_init__(self) -> None:
        if self.retry_max_seconds < self.retry_base_seconds:
            raise ValueError(
                f"environment variable RETRY_MAX_SECONDS={self.retry_max_seconds} is less than "
                f"RETRY_BASE_SECONDS={self.retry_base_seconds}"
            )

    @property
    def failure_policy(self) -> FailurePolicy:
        return FailurePolicy(
            retry_base_seconds=self.retry_base_seconds,
            retry_max_seconds=self.retry_max_seconds,
            record_retention_days=self.record_retention_days,
        )


@dataclass(frozen=True, kw_only=True)
class LargeObjectSettings(EnvSettings):
    """The large-file path (Distributed Map): when an object takes it, and its chunk size
    (template.yaml: LargeObjectThresholdMiB, LargeObjectChunkMiB).

    ``LARGE_OBJECT_THRESHOLD_MIB``: ProcessFunction hands objects of at least this size to
    the large-file path (0: never; it then reports ObjectTooLargeError when an object cannot
    finish in its time). ``CHUNK_MIB``: SplitObjectFunction cuts them about this often."""

    threshold_mib: int = field(default=0, metadata=rules(alias="LARGE_OBJECT_THRESHOLD_MIB", ge=0))
    chunk_mib: int = field(default=64, metadata=rules(alias="CHUNK_MIB", ge=1))
    # The Map's MaxConcurrency (MaxConcurrencyPath: DefinitionSubstitutions make strings).
    concurrency: int = field(
        default=200, metadata=rules(alias="CHUNK_CONCURRENCY", ge=1, le=10_000)
    )

    @property
    def enabled(self) -> bool:
        return self.threshold_mib > 0

    @property
    def threshold_bytes(self) -> int:
        return self.threshold_mib * MIB

    @property
    def chunk_bytes(self) -> int:
        return self.chunk_mib * MIB


@dataclass(frozen=True, kw_only=True)
class ReconcileSettings(EnvSettings):
    """ReconcileFunction: its resources and the reconciliation policy."""

    incoming_prefix: ClassVar[str] = INCOMING_PREFIX

    table: str = field(metadata=rules(alias="OBJECT_STATE_TABLE", min_length=1))
    state_machine_arn: str = field(metadata=rules(alias="PIPELINE_STATE_MACHINE_ARN", min_length=1))
    bucket: str = field(metadata=rules(alias="INGEST_BUCKET", min_length=1))
    operations_topic_arn: str = field(metadata=rules(alias="OPERATIONS_TOPIC_ARN", min_length=1))
    max_attempts: int = field(
        default=_RECONCILE.max_attempts, metadata=rules(alias="RECONCILE_MAX_ATTEMPTS", gt=0)
    )
    missed_grace_seconds: int = field(
        default=_RECONCILE.missed_grace_seconds,
        metadata=rules(alias="MISSED_EVENT_GRACE_SECONDS", gt=0),
    )
    missed_lookback_hours: int = field(
        default=_RECONCILE.missed_lookback_hours,
        metadata=rules(alias="MISSED_EVENT_LOOKBACK_HOURS", gt=0),
    )
    max_starts_per_run: int = field(
        default=_RECONCILE.max_starts_per_run,
        metadata=rules(alias="RECONCILE_MAX_STARTS_PER_RUN", gt=0),
    )
    # The function's Timeout: a RUNNING run older than this died.
    run_lease_seconds: int = field(default=120, metadata=rules(alias="RUN_LEASE_SECONDS", gt=0))
    record_retention_days: int = field(
        default=_FAILURE.record_retention_days, metadata=rules(alias="RECORD_RETENTION_DAYS", gt=0)
    )

    @property
    def policy(self) -> ReconcilePolicy:
        return ReconcilePolicy(
            max_attempts=self.max_attempts,
            missed_grace_seconds=self.missed_grace_seconds,
            missed_lookback_hours=self.missed_lookback_hours,
            max_starts_per_run=self.max_starts_per_run,
        )
