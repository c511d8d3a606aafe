"""Clients and error mapping for every AWS adapter (``s3.py`` adds S3's own error codes).

Every client uses botocore's "standard" retry mode (exponential backoff with jitter on
throttling and 5xx); what still fails after it is mapped to the pipeline's taxonomy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from ingest_pipeline.errors import (
    AccessDeniedError,
    ConfigurationError,
    MissingResourceError,
    PipelineError,
    StorageUnavailableError,
)

# botocore's "standard" retry mode: exponential backoff with jitter on throttling and 5xx;
# 5 attempts in all ("max_attempts" would mean 5 *retries*).
BOTO_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 5},
    connect_timeout=5,
    read_timeout=30,
)

_TRANSIENT = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "Throttling",
    "RequestLimitExceeded",
    "InternalServerError",
    "InternalServerErrorException",
    "InternalFailure",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "TransactionConflictException",
    "KMSThrottlingException",
}
_DENIED = {
    "AccessDeniedException",
    "AccessDenied",
    "AuthorizationError",
    "KMSAccessDeniedException",
}
_MISSING = {
    "ResourceNotFoundException",
    "StateMachineDoesNotExist",
    "NotFound",
    "NotFoundException",
}


@cache
def client(service: str) -> Any:
    """One client per service and process (reused across warm invocations)."""
    return boto3.client(service, config=BOTO_CONFIG)  # type: ignore[call-overload]


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "Unknown"))


def error_message(exc: ClientError, action: str) -> str:
    """``"<action>: <code>: <AWS message>"``, the text of every mapped pipeline error."""
    text = exc.response.get("Error", {}).get("Message", "")
    return f"{action}: {error_code(exc)}: {text}".rstrip(": ")


def is_error(exc: BaseException, *codes: str) -> bool:
    """True when ``exc`` is, or was translated by ``aws_errors`` from, a ClientError with one
    of ``codes`` (an expected answer, such as a failed condition, rather than a failure)."""
    cause = exc if isinstance(exc, ClientError) else exc.__cause__
    return isinstance(cause, ClientError) and error_code(cause) in codes


def map_client_error(exc: ClientError, action: str) -> PipelineError:
    code, message = error_code(exc), error_message(exc, action)
    if code in _TRANSIENT:
        return StorageUnavailableError(message)
    if code in _DENIED:
        return AccessDeniedError(message)
    if code in _MISSING:
        return MissingResourceError(message)
    return ConfigurationError(message)


@contextmanager
def aws_errors(
    action: str, mapper: Callable[[ClientError, str], PipelineError] = map_client_error
) -> Iterator[None]:
    """Translate botocore errors raised inside the block into the pipeline's taxonomy
    (``mapper`` turns a service's error codes into our exceptions)."""
    try:
        yield
    except PipelineError:
        raise
    except ClientError as exc:
        raise mapper(exc, action) from exc
    except BotoCoreError as exc:
        # Connection resets, read timeouts, truncated bodies: botocore already retried.
        raise StorageUnavailableError(f"{action}: {exc}") from exc
