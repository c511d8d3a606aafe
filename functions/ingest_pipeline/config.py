"""Settings read from the function's environment (set by template.yaml).

Each settings model is a pydantic model whose field aliases are the environment variable
names. A value is validated (type and bounds) when a handler first asks for its settings in
an execution environment; the result is reused while the environment stays the same, so a
Lambda validates once per cold start. An invalid or missing variable raises
``ConfigurationError`` naming the variable: a deployment problem, routed to operations.

Defaults: each has exactly one home. The domain policies (``FailurePolicy``,
``ReconcilePolicy``) hold the tunables' defaults and the fields below read them from there;
settings that belong to no policy hold theirs here. template.yaml's Parameters repeat them
as the deployed values; ``tests/unit/test_config.py`` keeps the two in step.

An empty variable counts as unset (its default applies, or it is reported as missing).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import ClassVar, Self, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ingest_pipeline.errors import ConfigurationError
from ingest_pipeline.logic.failure import FailurePolicy
from ingest_pipeline.logic.keys import INCOMING_PREFIX
from ingest_pipeline.logic.reconcile import ReconcilePolicy

MIB = 1024 * 1024
_FAILURE = FailurePolicy()
_RECONCILE = ReconcilePolicy()


class EnvSettings(BaseModel):
    """Base of the settings models: fields aliased to environment variable names."""

    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True)

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """The environment variables this model reads."""
        return tuple(field.alias or name for name, field in cls.model_fields.items())

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """Validated settings from ``environ`` (default ``os.environ``).

        Raises ``ConfigurationError`` naming each invalid or missing variable.
        """
        source = os.environ if environ is None else environ
        values = tuple((name, source[name]) for name in cls.env_names() if source.get(name))
        return cast(Self, _validated(cls, values))


@functools.lru_cache(maxsize=16)
def _validated(model: type[EnvSettings], values: tuple[tuple[str, str], ...]) -> EnvSettings:
    """Validated once per distinct environment (failures are not cached: they raise)."""
    given = dict(values)
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        raise ConfigurationError(_describe(exc, given), variables=_names(exc)) from exc


def _names(exc: ValidationError) -> list[str]:
    return [str(error["loc"][0]) for error in exc.errors() if error["loc"]]


def _describe(exc: ValidationError, given: Mapping[str, str]) -> str:
    problems = []
    for error in exc.errors():
        if not error["loc"]:  # a check across variables: its message names them
            problems.append(str(error["msg"]).removeprefix("Value error, "))
            continue
        name = str(error["loc"][0])
        if error["type"] == "missing":
            problems.append(f"environment variable {name} is not set (see template.yaml)")
        else:
            problems.append(f"environment variable {name}={given.get(name)!r}: {error['msg']}")
    return "; ".join(problems)


class Settings(EnvSettings):
    """ProcessObject, ClassifyError and Quarantine: the failure report's policy."""

    retry_base_seconds: int = Field(
        default=_FAILURE.retry_base_seconds, alias="RETRY_BASE_SECONDS", gt=0
    )
    retry_max_seconds: int = Field(
        default=_FAILURE.retry_max_seconds, alias="RETRY_MAX_SECONDS", gt=0
    )
    record_retention_days: int = Field(
        default=_FAILURE.record_retention_days, alias="RECORD_RETENTION_DAYS", gt=0
    )

    @model_validator(mode="after")
    def _max_not_below_base(self) -> Self:
        if self.retry_max_seconds < self.retry_base_seconds:
            raise ValueError(
                f"environment variable RETRY_MAX_SECONDS={self.retry_max_seconds} is less than "
                f"RETRY_BASE_SECONDS={self.retry_base_seconds}"
            )
        return self

    @property
    def failure_policy(self) -> FailurePolicy:
        return FailurePolicy(
            retry_base_seconds=self.retry_base_seconds,
            retry_max_seconds=self.retry_max_seconds,
            record_retention_days=self.record_retention_days,
        )


class LargeObjectSettings(EnvSettings):
    """The large-file path (Distributed Map): when an object takes it, and its chunk size
    (template.yaml: LargeObjectThresholdMiB, LargeObjectChunkMiB).

    ``LARGE_OBJECT_THRESHOLD_MIB``: ProcessFunction hands objects of at least this size to
    the large-file path (0: never; it then reports ObjectTooLargeError when an object cannot
    finish in its time). ``CHUNK_MIB``: SplitObjectFunction cuts them about this often."""

    threshold_mib: int = Field(default=0, alias="LARGE_OBJECT_THRESHOLD_MIB", ge=0)
    chunk_mib: int = Field(default=64, alias="CHUNK_MIB", ge=1)
    # The Map's MaxConcurrency (MaxConcurrencyPath: DefinitionSubstitutions make strings).
    concurrency: int = Field(default=200, alias="CHUNK_CONCURRENCY", ge=1, le=10_000)

    @property
    def enabled(self) -> bool:
        return self.threshold_mib > 0

    @property
    def threshold_bytes(self) -> int:
        return self.threshold_mib * MIB

    @property
    def chunk_bytes(self) -> int:
        return self.chunk_mib * MIB


class ReconcileSettings(EnvSettings):
    """ReconcileFunction: its resources and the reconciliation policy."""

    incoming_prefix: ClassVar[str] = INCOMING_PREFIX

    table: str = Field(alias="OBJECT_STATE_TABLE", min_length=1)
    state_machine_arn: str = Field(alias="PIPELINE_STATE_MACHINE_ARN", min_length=1)
    bucket: str = Field(alias="INGEST_BUCKET", min_length=1)
    operations_topic_arn: str = Field(alias="OPERATIONS_TOPIC_ARN", min_length=1)
    max_attempts: int = Field(default=_RECONCILE.max_attempts, alias="RECONCILE_MAX_ATTEMPTS", gt=0)
    missed_grace_seconds: int = Field(
        default=_RECONCILE.missed_grace_seconds, alias="MISSED_EVENT_GRACE_SECONDS", gt=0
    )
    missed_lookback_hours: int = Field(
        default=_RECONCILE.missed_lookback_hours, alias="MISSED_EVENT_LOOKBACK_HOURS", gt=0
    )
    max_starts_per_run: int = Field(
        default=_RECONCILE.max_starts_per_run, alias="RECONCILE_MAX_STARTS_PER_RUN", gt=0
    )
    # The function's Timeout: a RUNNING run older than this died.
    run_lease_seconds: int = Field(default=120, alias="RUN_LEASE_SECONDS", gt=0)
    record_retention_days: int = Field(
        default=_FAILURE.record_retention_days, alias="RECORD_RETENTION_DAYS", gt=0
    )

    @property
    def policy(self) -> ReconcilePolicy:
        return ReconcilePolicy(
            max_attempts=self.max_attempts,
            missed_grace_seconds=self.missed_grace_seconds,
            missed_lookback_hours=self.missed_lookback_hours,
            max_starts_per_run=self.max_starts_per_run,
        )
