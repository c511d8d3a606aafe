"""The error taxonomy shared by the Lambdas and the state machine.

Every exception a handler raises on purpose is a subclass of one of three families:

* ``TransientError``: the same input may succeed later (throttling, a service hiccup).
  The state machine retries these with backoff and jitter, then records the object as
  FAILED-retryable.
* ``ConfigurationError``: the deployment is wrong (permissions, missing resources, a
  malformed event from our own wiring). Retrying will not help; operations are paged.
* ``DataError``: the file itself is bad. It is quarantined and the data-quality topic is
  told. Retrying will not help either.

Lambda reports a function error's ``errorType`` as the exception class name, and Step
Functions matches ``ErrorEquals`` against that name exactly (no inheritance), so each
family's class names are listed in ``statemachines/pipeline.asl.json``.
``tests/unit/test_taxonomy_sync.py`` keeps the two in sync.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar


class ErrorClass(StrEnum):
    TRANSIENT = "TRANSIENT"
    CONFIGURATION = "CONFIGURATION"
    PERMANENT = "PERMANENT"


class PipelineError(Exception):
    """Base class: a typed error with a stable code and optional location details."""

    error_class: ClassVar[ErrorClass]
    code: ClassVar[str] = "PIPELINE_ERROR"

    def __init__(self, message: str, *, line: int | None = None, **details: Any) -> None:
        self.message = message
        self.line = line
        self.details = details
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"[{self.code}] {where}{self.message}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "errorClass": str(self.error_class),
            "errorType": type(self).__name__,
            "code": self.code,
            "message": self.message,
        }
        if self.line is not None:
            out["line"] = self.line
        if self.details:
            out["details"] = self.details
        return out


# --- TRANSIENT -------------------------------------------------------------------------


class TransientError(PipelineError):
    """A dependency failed in a way that may clear by itself."""

    error_class = ErrorClass.TRANSIENT
    code = "TRANSIENT"


class StorageUnavailableError(TransientError):
    """S3 or DynamoDB kept throttling or failing after botocore's own retries."""

    code = "STORAGE_UNAVAILABLE"


# --- CONFIGURATION ---------------------------------------------------------------------


class ConfigurationError(PipelineError):
    """The deployment or its wiring is wrong; a person must fix it."""

    error_class = ErrorClass.CONFIGURATION
    code = "CONFIGURATION"


class InvalidEventError(ConfigurationError):
    """A Lambda received an event it cannot parse: the caller's wiring is wrong."""

    code = "INVALID_EVENT"


class AccessDeniedError(ConfigurationError):
    """An AWS call was refused (IAM, bucket policy, KMS key policy)."""

    code = "ACCESS_DENIED"


class ObjectTooLargeError(ConfigurationError):
    """The object cannot be processed in the time the function has (its Timeout): retrying
    cannot help. Details: ``size``, ``limitSeconds``, ``bytesPerSecond``, ``neededSeconds``."""

    code = "OBJECT_TOO_LARGE"


class SplitRequiredError(ConfigurationError):
    """ProcessObject hands the object to the large-object workflow: it is at least
    ``LargeObjectThresholdMiB``, or it could not be converted in the function's time. Not a
    failure there: ProcessObject's first Catch routes it to ``StartLargeObjectWorkflow``
    (nothing was written). Raised anywhere else it is a configuration problem. Details:
    ``size``, ``reason``."""

    code = "SPLIT_REQUIRED"


class MissingResourceError(ConfigurationError):
    """A bucket, table or key the deployment relies on does not exist."""

    code = "MISSING_RESOURCE"


# --- PERMANENT (bad data) --------------------------------------------------------------


class DataError(PipelineError):
    """The object's content (or its name) cannot be processed as it is."""

    error_class = ErrorClass.PERMANENT
    code = "BAD_DATA"


class UnknownDatasetError(DataError):
    code = "UNKNOWN_DATASET"


class EmptyFileError(DataError):
    code = "EMPTY_FILE"


class EncodingError(DataError):
    code = "NOT_UTF8"


class HeaderError(DataError):
    code = "BAD_HEADER"


class ColumnCountError(DataError):
    code = "COLUMN_COUNT"


class ValueTypeError(DataError):
    code = "BAD_VALUE"


class LineTooLongError(DataError):
    code = "LINE_TOO_LONG"


class MalformedCsvError(DataError):
    code = "MALFORMED_CSV"


class MalformedJsonError(DataError):
    """A line of a JSON Lines file is not a JSON object."""

    code = "MALFORMED_JSON"


class CompressionError(DataError):
    """The file is not the gzip stream it is (or its contract says it is): corrupt,
    truncated, or not compressed at all."""

    code = "BAD_COMPRESSION"


class ObjectNotFoundError(DataError):
    """The object (or this version of it) is gone: there is nothing left to process."""

    code = "OBJECT_NOT_FOUND"


def _leaf_names(base: type[PipelineError]) -> list[str]:
    names = [base.__name__]
    for sub in base.__subclasses__():
        names.extend(_leaf_names(sub))
    return names


def error_names(error_class: ErrorClass) -> list[str]:
    """Every exception class name of one family, as Step Functions sees them."""
    families: dict[ErrorClass, type[PipelineError]] = {
        ErrorClass.TRANSIENT: TransientError,
        ErrorClass.CONFIGURATION: ConfigurationError,
        ErrorClass.PERMANENT: DataError,
    }
    return sorted(_leaf_names(families[error_class]))


def class_of_error_name(name: str) -> ErrorClass | None:
    """The family of one of our own exception names, or None for anything else."""
    for error_class in ErrorClass:
        if name in error_names(error_class):
            return error_class
    return None


def error_type_named(name: str) -> type[PipelineError] | None:
    """Our exception class called ``name`` (as Lambda reports it in ``errorType``)."""
    todo: list[type[PipelineError]] = [PipelineError]
    while todo:
        cls = todo.pop()
        if cls.__name__ == name and cls is not PipelineError:
            return cls
        todo.extend(cls.__subclasses__())
    return None
