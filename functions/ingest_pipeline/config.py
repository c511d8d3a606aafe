"""Settings read from the function's environment (set by template.yaml).

Each settings model is a frozen msgspec Struct whose fields' wire names (``rename``) are the
environment variable names (``ingest_pipeline.parsing``); values are stripped, then converted
in msgspec's lax mode (an int field takes a string of digits). A value is validated (type and
bounds) when a handler first asks for its settings in an execution environment; the result is
reused while the environment stays the same, so a Lambda validates once per cold start. An
invalid or missing variable raises ``ConfigurationError`` naming the variable: a deployment
problem, routed to operations.

Defaults: each has exactly one home. The domain policies (``FailurePolicy``,
``ReconcilePolicy``) hold the tunables' defaults and the fields below read them from there;
settings that belong to no policy hold theirs here. template.yaml's Parameters repeat them
as the deployed values; ``tests/unit/test_config.py`` keeps the two in step.

An empty variable counts as unset (its default applies, or it is reported as missing).
"""

import functools
import os
from collections.abc import Mapping
from typing import Annotated, ClassVar, Self, cast

import msgspec
from msgspec import Meta, Struct

from ingest_pipeline.errors import ConfigurationError
from ingest_pipeline.logic.keys import INCOMING_PREFIX
from ingest_pipeline.logic.policy import FailurePolicy, ReconcilePolicy
from ingest_pipeline.parsing import ParseError, parse

MIB = 1024 * 1024
_FAILURE = FailurePolicy()
_RECONCILE = ReconcilePolicy()
Positive = Annotated[int, Meta(gt=0)]


class EnvSettings(Struct, frozen=True, kw_only=True):
    """Base of the settings models: fields renamed to environment variable names."""

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """The environment variables this model reads."""
        return tuple(f.encode_name for f in msgspec.structs.fields(cls))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """Validated settings from ``environ`` (default ``os.environ``).

        Raises ``ConfigurationError`` naming each invalid or missing variable.
        """
        source = os.environ if environ is None else environ
        values = tuple(
            (name, str(source[name]).strip()) for name in cls.env_names() if source.get(name)
        )
        model: object = cls  # mypy takes the class's __hash__ for its instances' (unbound)
        return cast(Self, _validated(model, values))


@functools.lru_cache(maxsize=16)
def _validated(model: object, values: tuple[tuple[str, str], ...]) -> EnvSettings:
    """Validated once per distinct environment (failures are not cached: they raise)."""
    given = dict(values)
    try:
        settings: EnvSettings = parse(cast(type[EnvSettings], model), given)
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


class Settings(EnvSettings, frozen=True, kw_only=True, rename="upper"):
    """ProcessObject, ClassifyError and Quarantine: the failure report's policy."""

    retry_base_seconds: Positive = _FAILURE.retry_base_seconds  # RETRY_BASE_SECONDS
    retry_max_seconds: Positive = _FAILURE.retry_max_seconds  # RETRY_MAX_SECONDS
    record_retention_days: Positive = _FAILURE.record_retention_days  # RECORD_RETENTION_DAYS

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


class LargeObjectSettings(
    EnvSettings,
    frozen=True,
    kw_only=True,
    rename={
        "threshold_mib": "LARGE_OBJECT_THRESHOLD_MIB",
        "chunk_mib": "CHUNK_MIB",
        "concurrency": "CHUNK_CONCURRENCY",
    },
):
    """The large-file path (Distributed Map): when an object takes it, and its chunk size
    (template.yaml: LargeObjectThresholdMiB, LargeObjectChunkMiB).

    ``LARGE_OBJECT_THRESHOLD_MIB``: ProcessFunction hands objects of at least this size to
    the large-file path (0: never; it then reports ObjectTooLargeError when an object cannot
    finish in its time). ``CHUNK_MIB``: SplitObjectFunction cuts them about this often."""

    threshold_mib: Annotated[int, Meta(ge=0)] = 0
    chunk_mib: Annotated[int, Meta(ge=1)] = 64
    # The Map's MaxConcurrency (MaxConcurrencyPath: DefinitionSubstitutions make strings).
    concurrency: Annotated[int, Meta(ge=1, le=10_000)] = 200

    @property
    def enabled(self) -> bool:
        return self.threshold_mib > 0

    @property
    def threshold_bytes(self) -> int:
        return self.threshold_mib * MIB

    @property
    def chunk_bytes(self) -> int:
        return self.chunk_mib * MIB


class ReconcileSettings(
    EnvSettings,
    frozen=True,
    kw_only=True,
    rename={
        "table": "OBJECT_STATE_TABLE",
        "state_machine_arn": "PIPELINE_STATE_MACHINE_ARN",
        "bucket": "INGEST_BUCKET",
        "operations_topic_arn": "OPERATIONS_TOPIC_ARN",
        "max_attempts": "RECONCILE_MAX_ATTEMPTS",
        "missed_grace_seconds": "MISSED_EVENT_GRACE_SECONDS",
        "missed_lookback_hours": "MISSED_EVENT_LOOKBACK_HOURS",
        "max_starts_per_run": "RECONCILE_MAX_STARTS_PER_RUN",
        "run_lease_seconds": "RUN_LEASE_SECONDS",
        "record_retention_days": "RECORD_RETENTION_DAYS",
    },
):
    """ReconcileFunction: its resources and the reconciliation policy."""

    incoming_prefix: ClassVar[str] = INCOMING_PREFIX

    table: Annotated[str, Meta(min_length=1)]
    state_machine_arn: Annotated[str, Meta(min_length=1)]
    bucket: Annotated[str, Meta(min_length=1)]
    operations_topic_arn: Annotated[str, Meta(min_length=1)]
    max_attempts: Positive = _RECONCILE.max_attempts
    missed_grace_seconds: Positive = _RECONCILE.missed_grace_seconds
    missed_lookback_hours: Positive = _RECONCILE.missed_lookback_hours
    max_starts_per_run: Positive = _RECONCILE.max_starts_per_run
    # The function's Timeout: a RUNNING run older than this died.
    run_lease_seconds: Positive = 120
    record_retention_days: Positive = _FAILURE.record_retention_days

    @property
    def policy(self) -> ReconcilePolicy:
        return ReconcilePolicy(
            max_attempts=self.max_attempts,
            missed_grace_seconds=self.missed_grace_seconds,
            missed_lookback_hours=self.missed_lookback_hours,
            max_starts_per_run=self.max_starts_per_run,
        )
