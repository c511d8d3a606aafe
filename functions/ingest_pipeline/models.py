"""Typed inputs of the Lambdas (parsed with the powertools parser)."""

from __future__ import annotations

from typing import Any, TypeVar

from aws_lambda_powertools.utilities.parser import parse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ingest_pipeline.errors import ErrorClass, InvalidEventError

M = TypeVar("M", bound=BaseModel)


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class ObjectRef(_Model):
    """The normalized identity of one object version (built by the rule's InputTransformer)."""

    bucket: str = Field(min_length=3, max_length=63)
    key: str = Field(min_length=1, max_length=1024)
    version_id: str | None = Field(default=None, alias="versionId")
    etag: str | None = None
    size: int | None = Field(default=None, ge=0)
    sequencer: str | None = None


class ResolveRequest(_Model):
    """ResolveObjectVersion's input: the execution state (only its object is read)."""

    object: ObjectRef
    execution_arn: str = Field(default="local", alias="executionArn")


class ProcessRequest(_Model):
    object: ObjectRef
    attempt: int = Field(default=1, ge=1)
    execution_arn: str = Field(default="local", alias="executionArn")


class CaughtErrorModel(_Model):
    error: str = Field(alias="Error", min_length=1)
    cause: str = Field(default="", alias="Cause")


class ClaimModel(_Model):
    attempt: int = Field(ge=1)


class WorkflowState(_Model):
    """The state machine's state when an error was caught (``$`` of the failing state)."""

    object: ObjectRef
    error: CaughtErrorModel
    claim: ClaimModel | None = None


class FailureRequest(_Model):
    """Input of ClassifyError and QuarantineObject: the workflow state and the caught error.

    ``errorClass`` is set when a Catch already routed the error by its name.
    """

    state: WorkflowState
    execution_arn: str = Field(default="local", alias="executionArn")
    error_class: ErrorClass | None = Field(default=None, alias="errorClass")

    @property
    def object(self) -> ObjectRef:
        return self.state.object

    @property
    def error(self) -> CaughtErrorModel:
        return self.state.error

    @property
    def attempt(self) -> int:
        """0 when the claim itself failed (no attempt was started)."""
        return self.state.claim.attempt if self.state.claim else 0


def parse_event(event: Any, model: type[M]) -> M:
    """Parse ``event`` or raise InvalidEventError naming every problem."""
    if not isinstance(event, dict):
        raise InvalidEventError(
            f"expected a JSON object for {model.__name__}, got {type(event).__name__}"
        )
    try:
        return parse(event=event, model=model)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors()
        )
        raise InvalidEventError(f"invalid {model.__name__} event: {problems}") from exc
    except Exception as exc:  # powertools wraps some failures in its own exceptions
        raise InvalidEventError(f"invalid {model.__name__} event: {exc}") from exc


class ScheduleRun(_Model):
    """Scheduler's context attributes, substituted into the schedule's input (template.yaml)."""

    schedule_arn: str = Field(alias="scheduleArn", pattern=r"^arn:aws[a-z-]*:scheduler:")
    scheduled_time: str = Field(
        alias="scheduledTime", pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$"
    )
    execution_id: str = Field(alias="executionId", min_length=1, max_length=200)
    attempt: str | None = None

    @field_validator("execution_id", "schedule_arn", "scheduled_time", mode="before")
    @classmethod
    def _substituted(cls, value: Any) -> Any:
        if isinstance(value, str) and "<aws.scheduler." in value:
            raise ValueError(
                f"{value} was not substituted: Scheduler's context attributes are spelled with "
                "hyphens (<aws.scheduler.execution-id>), and only in the schedule's Input"
            )
        return value


class ReconcileRequest(_Model):
    """The body of one reconcile queue message (one schedule run)."""

    run: ScheduleRun
    task: str = Field(default="reconcile", pattern="^reconcile$")
