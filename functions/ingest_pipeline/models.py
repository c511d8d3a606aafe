"""Typed inputs of the Lambdas (msgspec Structs, ``parse_event``), and the state record.

The state record (one item per object version in the state table) is defined once, at the
end of this module: its key format, every attribute name, the status values and the open-state
index. The state machine writes it (``statemachines/pipeline.asl.yaml``), ``dal.state`` reads
it and makes the reconciler's writes; ``tests/unit/test_state_record_sync.py`` checks that the
ASL and template.yaml use exactly these names.
"""

import re
from dataclasses import FrozenInstanceError
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, NoReturn, TypeVar

from msgspec import Meta, Struct
from msgspec.structs import replace

from ingest_pipeline.errors import ErrorClass, InvalidEventError
from ingest_pipeline.parsing import ParseError, parse

M = TypeVar("M")

# The inputs: msgspec Structs checked by ``parse_event`` (``ingest_pipeline.parsing``:
# unknown keys are ignored, a field is read by its wire name, ``rename``).
_EXECUTION_ARN = {"execution_arn": "executionArn", "claimed_at": "claimedAt"}


class ObjectRef(Struct, frozen=True, kw_only=True, rename={"version_id": "versionId"}):
    """The normalized identity of one object version (built by the rule's InputTransformer)."""

    bucket: Annotated[str, Meta(min_length=3, max_length=63)]
    key: Annotated[str, Meta(min_length=1, max_length=1024)]
    version_id: str | None = None
    etag: str | None = None
    size: Annotated[int, Meta(ge=0)] | None = None
    sequencer: str | None = None


class ResolveRequest(Struct, frozen=True, kw_only=True, rename=_EXECUTION_ARN):
    """ResolveObjectVersion's input: the execution state (only its object is read)."""

    object: ObjectRef
    execution_arn: str = "local"


class ProcessRequest(Struct, frozen=True, kw_only=True, rename=_EXECUTION_ARN):
    object: ObjectRef
    attempt: Annotated[int, Meta(ge=1)] = 1
    # When ClaimObject claimed the object (claimedAt): its dataset's contract is the version
    # current then (dal/contracts.py). Without it (a hand-made event), the current one.
    claimed_at: datetime | None = None
    execution_arn: str = "local"


class CaughtErrorModel(Struct, frozen=True, kw_only=True, rename="pascal"):
    error: Annotated[str, Meta(min_length=1)]  # Error
    cause: str = ""  # Cause


class ClaimModel(Struct, frozen=True, kw_only=True):
    attempt: Annotated[int, Meta(ge=1)]


class WorkflowState(Struct, frozen=True, kw_only=True):
    """The state machine's state when an error was caught (``$`` of the failing state)."""

    object: ObjectRef
    error: CaughtErrorModel
    claim: ClaimModel | None = None


class FailureRequest(Struct, frozen=True, kw_only=True, rename="camel"):
    """Input of ClassifyError and QuarantineObject: the workflow state and the caught error.

    ``errorClass`` is set when a Catch already routed the error by its name.
    """

    state: WorkflowState
    execution_arn: str = "local"  # executionArn
    error_class: ErrorClass | None = None  # errorClass

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

    def with_error_class(self, error_class: ErrorClass) -> "FailureRequest":
        return replace(self, error_class=error_class)


def parse_event(event: Any, model: type[M]) -> M:
    """Parse ``event`` or raise InvalidEventError naming every problem."""
    if not isinstance(event, dict):
        raise InvalidEventError(
            f"expected a JSON object for {model.__name__}, got {type(event).__name__}"
        )
    try:
        return parse(model, event)
    except ParseError as exc:
        raise InvalidEventError(f"invalid {model.__name__} event: {exc.summary()}") from exc


# Compiled when a ScheduleRun is first checked (re's cache): only ReconcileFunction reads one.
_SCHEDULE_ARN = r"^arn:aws[a-z-]*:scheduler:"
_SCHEDULED_TIME = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$"


class ScheduleRun(Struct, frozen=True, kw_only=True, rename="camel"):
    """Scheduler's context attributes, substituted into the schedule's input (template.yaml).

    The patterns are checked after the placeholders (``__post_init__``): a misspelled
    placeholder is reported as such, not as a string of the wrong shape."""

    schedule_arn: str  # scheduleArn
    scheduled_time: str  # scheduledTime
    execution_id: Annotated[str, Meta(min_length=1, max_length=200)]  # executionId
    attempt: str | None = None

    def __post_init__(self) -> None:
        for value in (self.schedule_arn, self.scheduled_time, self.execution_id):
            if "<aws.scheduler." in value:
                raise ValueError(
                    f"{value} was not substituted: Scheduler's context attributes are spelled "
                    "with hyphens (<aws.scheduler.execution-id>), and only in the schedule's Input"
                )
        if not re.match(_SCHEDULE_ARN, self.schedule_arn):
            raise ValueError(f"scheduleArn should match {_SCHEDULE_ARN!r}")
        if not re.match(_SCHEDULED_TIME, self.scheduled_time):
            raise ValueError(f"scheduledTime should match {_SCHEDULED_TIME!r}")


class ReconcileRequest(Struct, frozen=True, kw_only=True):
    """The body of one reconcile queue message (one schedule run)."""

    run: ScheduleRun
    task: Annotated[str, Meta(pattern="^reconcile$")] = "reconcile"


# --- the state record -----------------------------------------------------------------------
#
# pk = "s3://<bucket>/<key>", sk = "v#<version id>": a new version of a key is new work, a
# replay of the same version is not. The formats are written with ``{}`` placeholders so that
# they read the same here (str.format) and in the ASL (States.Format).

PK_FORMAT = "s3://{}/{}"
SK_FORMAT = "v#{}"
SK_PREFIX = SK_FORMAT.format("")
RUN_PK_FORMAT = "run#{}"  # the reconciler's run ledger: pk run#<schedule ARN>, sk <time>
OPEN_STATE_INDEX = "OpenStateIndex"


def state_pk(bucket: str, key: str) -> str:
    return PK_FORMAT.format(bucket, key)


def state_sk(version_id: str) -> str:
    return SK_FORMAT.format(version_id)


class Attr(StrEnum):
    """The attributes of an object version's record (written by the state machine unless
    noted)."""

    PK = "pk"
    SK = "sk"
    # identity (ClaimObject)
    BUCKET_NAME = "bucket_name"
    OBJECT_KEY = "object_key"
    VERSION_ID = "version_id"
    TRIGGER_SOURCE = "trigger_source"
    FIRST_SEEN_AT = "first_seen_at"
    # the claim
    STATUS = "status"  # a Status
    OPEN_STATE = "open_state"  # an OpenState; absent once SUCCEEDED (sparse index key)
    ATTEMPT = "attempt"
    EXECUTION_ARN = "execution_arn"
    CLAIMED_AT = "claimed_at"
    UPDATED_AT = "updated_at"
    LEASE_SECONDS = "lease_seconds"
    EXPIRES_AT = "expires_at"  # the table's TTL attribute
    # the per-object execution that handed the claim to the large-object workflow's
    # (TakeOverClaim); EXECUTION_ARN is then the large-object execution
    HANDED_OVER_BY = "handed_over_by"
    # success (RecordSuccess)
    COMPLETED_AT = "completed_at"
    DATASET = "dataset"
    ROW_COUNT = "row_count"
    BYTES_IN = "bytes_in"
    BYTES_OUT = "bytes_out"
    SHA256 = "sha256"
    OUTPUT_KEY = "output_key"
    OUTCOME = "outcome"  # an Outcome
    SUPERSEDED_BY = "superseded_by"  # the newer version that owns the output (SUPERSEDED)
    # the dataset contract's version it was processed with (0: the packaged one; dal/contracts)
    CONTRACT_VERSION = "contract_version"
    # failure (Record*Failure, RecordRejection)
    RETRYABLE = "retryable"
    RETRY_AFTER = "retry_after"
    ERROR_CLASS = "error_class"
    ERROR_NAME = "error_name"
    ERROR_CODE = "error_code"
    ERROR_CAUSE = "error_cause"
    FAILED_AT = "failed_at"
    QUARANTINE_KEY = "quarantine_key"
    # escalation (written by the reconciler: dal.state.escalate)
    ESCALATED_AT = "escalated_at"
    ESCALATION_REASON = "escalation_reason"


class RunAttr(StrEnum):
    """The attributes of a schedule run's item (the reconciler's run ledger)."""

    PK = "pk"
    SK = "sk"
    STATUS = "status"  # a Status
    EXECUTION_ID = "execution_id"
    CLAIMED_AT = "claimed_at"
    FIRST_CLAIMED_AT = "first_claimed_at"
    LEASE_UNTIL = "lease_until"
    UPDATED_AT = "updated_at"
    FINISHED_AT = "finished_at"
    EXPIRES_AT = "expires_at"
    CLAIMS = "claims"
    DUPLICATE_DELIVERIES = "duplicate_deliveries"
    SUMMARY = "summary"
    RUN_ERROR = "run_error"


class Status(StrEnum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class OpenState(StrEnum):
    """``open_state``: why a record still needs attention (the OpenStateIndex's key)."""

    RUNNING = "RUNNING"
    RETRYABLE = "RETRYABLE"  # FAILED, retryable: the reconciler retries it
    FAILED = "FAILED"  # FAILED, not retryable: an operator reprocesses it


class Outcome(StrEnum):
    """``outcome`` of a SUCCEEDED record."""

    PROCESSED = "PROCESSED"
    SUPERSEDED = "SUPERSEDED"


class Route(StrEnum):
    """An ``outcome`` of AssembleOutput that is not recorded: the workflow goes on
    (ChooseAssemblyOutcome). Too big for one function is an error: SplitRequiredError."""

    REALIGN = "REALIGN"  # a chunk started inside a record: plan again


# What the OpenStateIndex projects (template.yaml: NonKeyAttributes): what an OpenRecord reads,
# and escalated_at for the operator tools.
OPEN_INDEX_PROJECTION: tuple[Attr, ...] = (
    Attr.STATUS,
    Attr.RETRYABLE,
    Attr.RETRY_AFTER,
    Attr.ATTEMPT,
    Attr.CLAIMED_AT,
    Attr.LEASE_SECONDS,
    Attr.EXECUTION_ARN,
    Attr.BUCKET_NAME,
    Attr.OBJECT_KEY,
    Attr.VERSION_ID,
    Attr.ERROR_CLASS,
    Attr.ERROR_CODE,
    Attr.ESCALATED_AT,
)


class ObjectVersion:
    """One object version of the state table: what ``@dataclass(frozen=True)`` would make of
    the three fields, written out (a dataclass compiles its methods at every import, about
    1 ms of every function's cold start): init, repr, eq, hash, immutable, ``vars()``."""

    __match_args__ = ("bucket", "key", "version_id")
    bucket: str
    key: str
    version_id: str

    def __init__(self, bucket: str, key: str, version_id: str) -> None:
        object.__setattr__(self, "bucket", bucket)
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "version_id", version_id)

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(bucket={self.bucket!r}, key={self.key!r}, "
            f"version_id={self.version_id!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectVersion) or other.__class__ is not self.__class__:
            return NotImplemented
        return (self.bucket, self.key, self.version_id) == (
            other.bucket,
            other.key,
            other.version_id,
        )

    def __hash__(self) -> int:
        return hash((self.bucket, self.key, self.version_id))

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    @property
    def pk(self) -> str:
        return state_pk(self.bucket, self.key)

    @property
    def sk(self) -> str:
        return state_sk(self.version_id)

    @property
    def key_item(self) -> dict[str, dict[str, str]]:
        """The record's DynamoDB key (attribute-value form)."""
        return {Attr.PK: {"S": self.pk}, Attr.SK: {"S": self.sk}}

    def as_input(self) -> dict[str, str]:
        return {"bucket": self.bucket, "key": self.key, "versionId": self.version_id}


class OpenRecord(Struct, frozen=True):
    """A state record that still needs attention (from the OpenStateIndex)."""

    object: ObjectVersion
    status: str
    retryable: bool
    attempt: int
    updated_at: str
    retry_after: datetime | None = None
    claimed_at: datetime | None = None
    lease_seconds: int = 3600
    execution_arn: str | None = None
    error_class: str | None = None
    error_code: str | None = None


def parse_time(value: Any) -> datetime | None:
    """An ISO-8601 timestamp as Step Functions or we write it, or None."""
    if not value or not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def iso_ms(moment: datetime) -> str:
    """``2026-11-21T09:00:00.123Z``: the format of ``$$.State.EnteredTime``, so that string
    comparison in a DynamoDB condition orders correctly."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
