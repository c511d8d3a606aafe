"""How ingestctl turns an error into the one line it prints (exit 2): ``explain`` names what
went wrong and what to do for the errors an operator can act on (bad input, credentials, an
unreachable or refusing AWS, throttling), from tables of botocore's exceptions and AWS error
codes, and returns None for anything else (a bug: ``cli.main`` prints the traceback).
``CommandError`` is input ingestctl cannot use.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

__all__ = ["CANNOT_CONNECT", "CONNECT_HINT", "CommandError", "explain"]


class CommandError(ValueError):
    """Input ingestctl cannot use (a missing or malformed file, a missing option): ``main``
    prints the message as one line and exits 2. A ValueError, so the doctor's "cannot read
    the stack" handling still catches it."""


CONNECT_HINT = (
    "check --endpoint-url / --region and the network (the local cloud: is "
    "`ingestctl local up` running?)"
)
# Error names the doctor's "could not check" verdicts carry when nothing could be reached.
CANNOT_CONNECT = {
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ConnectionClosedError",
    "ReadTimeoutError",
    "ProxyConnectionError",
    "SSLError",
    "NoCredentialsError",
    "PartialCredentialsError",
    "CredentialRetrievalError",
    "NoRegionError",
}
_CREDENTIAL_CODES = {
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "SignatureDoesNotMatch",
    "InvalidAccessKeyId",
    "AuthFailure",
    "RequestExpired",
}
_DENIED_CODES = {
    "AccessDenied",
    "AccessDeniedException",
    "AuthorizationError",
    "KMSAccessDeniedException",
    "UnauthorizedOperation",
}
_THROTTLING_CODES = {
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "ProvisionedThroughputExceededException",
    "SlowDown",
}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what caused it (``raise ... from``, or raised while handling)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _explain_client_error(exc: Any) -> str:
    """An AWS answer (botocore ClientError): refused, throttled, not found, ..."""
    error = exc.response.get("Error", {})
    code, text = str(error.get("Code", "Unknown")), str(error.get("Message", ""))
    what = f"{exc.operation_name}: {code}: {text}".rstrip(": ")
    if code in _CREDENTIAL_CODES:
        hint = f"AWS rejected the credentials ({what}): refresh them, or use another profile"
    elif code in _DENIED_CODES:
        hint = (
            f"access denied ({what}): run it with credentials allowed to call "
            f"{exc.operation_name} on this resource"
        )
    elif code in _THROTTLING_CODES:
        hint = f"AWS kept throttling after retries ({what}): try again later"
    elif any(m in code for m in ("NotFound", "NonExistent", "DoesNotExist", "NoSuch")) or (
        code == "ValidationError" and "does not exist" in text
    ):
        hint = f"not found ({what}): check the name, --stack / --outputs and --region"
    else:
        hint = f"AWS refused the request ({what})"
    return hint


def _botocore_explainers() -> list[tuple[tuple[type[BaseException], ...], Any]]:
    from botocore import exceptions as boto

    return [
        (
            (
                boto.NoCredentialsError,
                boto.PartialCredentialsError,
                boto.CredentialRetrievalError,
                boto.ProfileNotFound,
                boto.TokenRetrievalError,
                boto.SSOError,
            ),
            lambda exc: (
                f"no usable AWS credentials ({exc}): set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (after `aws sso login` for an SSO profile)"
            ),
        ),
        (
            (boto.NoRegionError,),
            lambda exc: "no AWS region: pass --region or set AWS_DEFAULT_REGION",
        ),
        (
            (boto.ConnectionError, boto.HTTPClientError),  # connect, timeouts, closed
            lambda exc: f"cannot reach AWS: {exc}; {CONNECT_HINT}",
        ),
        ((boto.ParamValidationError,), lambda exc: f"invalid request: {exc}; check the arguments"),
        ((boto.ClientError,), _explain_client_error),
    ]


def _other_explainers() -> list[tuple[tuple[type[BaseException], ...], Any]]:
    from ingest_pipeline.errors import (
        AccessDeniedError,
        MissingResourceError,
        PipelineError,
        TransientError,
    )
    from localcloud.cli import UsageError
    from localcloud.environments import RuntimeMissing
    from localcloud.stack import StackDeployError

    return [
        ((CommandError, UsageError, StackDeployError, RuntimeMissing), str),
        (
            (TransientError,),
            lambda exc: f"AWS kept failing after retries: {exc.message}; try again later",
        ),
        (
            (AccessDeniedError,),
            lambda exc: f"access denied: {exc.message}; run it with credentials allowed to do this",
        ),
        (
            (MissingResourceError,),
            lambda exc: f"not found: {exc.message}; check --stack / --outputs and --region",
        ),
        ((PipelineError,), lambda exc: f"{exc.message} ({exc.code})"),
        (
            (json.JSONDecodeError,),
            lambda exc: f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
        ),
        ((FileNotFoundError,), lambda exc: f"{exc.filename or exc}: no such file"),
        (
            (IsADirectoryError, PermissionError),
            lambda exc: f"{exc.filename or ''}: cannot read it: {exc.strerror or exc}".lstrip(": "),
        ),
    ]


def explain(exc: BaseException) -> str | None:
    """One line for an error the operator can act on (bad input, credentials, an
    unreachable or refusing AWS); None for anything else, which is a bug."""
    chain = list(_chain(exc))
    # botocore's own error first: a pipeline error raised from it says less.
    for explainers in (_botocore_explainers(), _other_explainers()):
        for cause in chain:
            for types, describe in explainers:
                if isinstance(cause, types):
                    return " ".join(str(describe(cause)).split())  # one line, always
    return None
