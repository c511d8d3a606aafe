"""Clients and error mapping for DynamoDB, Step Functions and SNS (S3 lives in ``s3.py``).

Every client uses botocore's "standard" retry mode (exponential backoff with jitter on
throttling and 5xx); what still fails after it is mapped to the pipeline's taxonomy.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from ingest_pipeline.dal.s3 import BOTO_CONFIG
from ingest_pipeline.errors import (
    AccessDeniedError,
    ConfigurationError,
    MissingResourceError,
    PipelineError,
    StorageUnavailableError,
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


def map_client_error(exc: ClientError, action: str) -> PipelineError:
    code = error_code(exc)
    message = f"{action}: {code}: {exc.response.get('Error', {}).get('Message', '')}".rstrip(": ")
    if code in _TRANSIENT:
        return StorageUnavailableError(message)
    if code in _DENIED:
        return AccessDeniedError(message)
    if code in _MISSING:
        return MissingResourceError(message)
    return ConfigurationError(message)


@contextmanager
def aws_errors(action: str) -> Iterator[None]:
    """Translate botocore errors raised inside the block into the pipeline's taxonomy."""
    try:
        yield
    except PipelineError:
        raise
    except ClientError as exc:
        raise map_client_error(exc, action) from exc
    except BotoCoreError as exc:
        raise StorageUnavailableError(f"{action}: {exc}") from exc
