"""S3 access: streaming reads and writes, quarantine copies, and AWS errors mapped to the
pipeline's taxonomy. The only module of the package that talks to S3."""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import unquote_plus

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

from ingest_pipeline.dal.aws import BOTO_CONFIG, error_code, error_message
from ingest_pipeline.dal.aws import aws_errors as _aws_errors
from ingest_pipeline.errors import (
    AccessDeniedError,
    ConfigurationError,
    MissingResourceError,
    ObjectNotFoundError,
    PipelineError,
    StorageUnavailableError,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

READ_BUFFER_BYTES = 256 * 1024
TRANSFER_CONFIG = TransferConfig(
    multipart_threshold=16 * 1024 * 1024,
    multipart_chunksize=16 * 1024 * 1024,
    max_concurrency=4,
)

_NOT_FOUND = {"NoSuchKey", "NoSuchVersion", "404", "NotFound"}
_DENIED = {
    "AccessDenied",
    "403",
    "AllAccessDisabled",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
}
_MISSING = {"NoSuchBucket"}
_TRANSIENT = {
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "InternalError",
    "ServiceUnavailable",
    "500",
    "503",
}


@cache
def s3_client() -> S3Client:
    """One client per process (reused across warm invocations)."""
    return boto3.client("s3", config=BOTO_CONFIG)


def aws_errors(action: str) -> AbstractContextManager[None]:
    """``dal.aws.aws_errors`` with S3's error codes."""
    return _aws_errors(action, map_client_error)


def map_client_error(exc: ClientError, action: str) -> PipelineError:
    code, message = error_code(exc), error_message(exc, action)
    if code in _NOT_FOUND:
        return ObjectNotFoundError(message)
    if code in _DENIED or code.startswith("KMS"):
        return AccessDeniedError(message)
    if code in _MISSING:
        return MissingResourceError(message)
    if code in _TRANSIENT:
        return StorageUnavailableError(message)
    return ConfigurationError(message)


class _RawBody(io.RawIOBase):
    """A raw stream over botocore's StreamingBody, so io.BufferedReader can do readline."""

    def __init__(self, body: Any) -> None:
        self._body = body

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._body.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def close(self) -> None:
        self._body.close()
        super().close()


class _IterStream(io.RawIOBase):
    """A readable stream over an iterator of byte chunks (for streaming uploads)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


@dataclass(frozen=True)
class OpenedObject:
    key: str  # the key that was found (decoded when the event carried an encoded key)
    version_id: str | None
    size: int
    body: IO[bytes]


def open_object(bucket: str, key: str, version_id: str | None) -> OpenedObject:
    """Open one object version for streaming.

    Object keys reach us as S3 put them in the event. Reports disagree on whether S3's
    EventBridge events URL-encode keys (as S3 event notifications do: a space as '+');
    when the key as given does not exist and its decoded form differs, the decoded form
    is tried too, so both encodings work.
    """
    candidates = [key]
    decoded = unquote_plus(key)
    if decoded != key:
        candidates.append(decoded)
    last: PipelineError | None = None
    for candidate in candidates:
        args: dict[str, Any] = {"Bucket": bucket, "Key": candidate}
        if version_id and version_id != "null":
            args["VersionId"] = version_id
        try:
            with aws_errors(f"GetObject s3://{bucket}/{candidate}"):
                response = s3_client().get_object(**args)
        except ObjectNotFoundError as exc:
            last = exc
            continue
        body = io.BufferedReader(_RawBody(response["Body"]), buffer_size=READ_BUFFER_BYTES)
        return OpenedObject(
            key=candidate,
            version_id=response.get("VersionId"),
            size=int(response.get("ContentLength", 0)),
            body=body,
        )
    raise last if last is not None else ObjectNotFoundError(f"s3://{bucket}/{key}")


def upload_stream(
    bucket: str,
    key: str,
    chunks: Iterator[bytes],
    *,
    content_type: str,
    metadata: dict[str, str],
    config: TransferConfig = TRANSFER_CONFIG,
) -> None:
    """Stream chunks to one object; the object appears only when the upload completes.

    An exception raised by ``chunks`` aborts the upload: nothing is written. Output below
    ``config.multipart_threshold`` (nearly every object) is sent as the one PutObject that
    s3transfer would send for it, without starting a transfer manager and its threads for
    each invocation; larger output is streamed with ``upload_fileobj`` (multipart).
    """
    extra: dict[str, Any] = {"ContentType": content_type, "Metadata": ascii_metadata(metadata)}
    with aws_errors(f"PutObject s3://{bucket}/{key}"):  # reading the source can fail too
        head, rest = _read_up_to(chunks, config.multipart_threshold)
        if rest is None:
            s3_client().put_object(Bucket=bucket, Key=key, Body=head, **extra)
            return
        s3_client().upload_fileobj(
            io.BufferedReader(
                _IterStream(itertools.chain([head], rest)), buffer_size=READ_BUFFER_BYTES
            ),
            bucket,
            key,
            ExtraArgs=extra,
            Config=config,
        )


def _read_up_to(chunks: Iterator[bytes], limit: int) -> tuple[bytes, Iterator[bytes] | None]:
    """The first chunks, joined, until more than ``limit`` bytes were read; the iterator
    over the remaining chunks, or None when the chunks ended within the limit."""
    head: list[bytes] = []
    size = 0
    for chunk in chunks:
        head.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(head), chunks
    return b"".join(head), None


def copy_object(
    bucket: str, key: str, version_id: str | None, dest_key: str, metadata: dict[str, str]
) -> None:
    source: dict[str, str] = {"Bucket": bucket, "Key": key}
    if version_id and version_id != "null":
        source["VersionId"] = version_id
    with aws_errors(f"CopyObject s3://{bucket}/{key} -> {dest_key}"):
        s3_client().copy(
            source,  # type: ignore[arg-type]
            bucket,
            dest_key,
            ExtraArgs={"Metadata": ascii_metadata(metadata), "MetadataDirective": "REPLACE"},
            Config=TRANSFER_CONFIG,
        )


def put_json(bucket: str, key: str, body: str) -> None:
    with aws_errors(f"PutObject s3://{bucket}/{key}"):
        s3_client().put_object(
            Bucket=bucket, Key=key, Body=body.encode(), ContentType="application/json"
        )


def ascii_metadata(metadata: dict[str, str], limit: int = 1800) -> dict[str, str]:
    """User metadata travels as HTTP headers: ASCII only, 2 KB in all."""
    out: dict[str, str] = {}
    budget = limit
    for name, value in metadata.items():
        clean = value.encode("ascii", "replace").decode().replace("\n", " ")[:budget]
        budget -= len(name) + len(clean)
        if budget < 0:
            break
        out[name] = clean
    return out


def list_current_versions(
    bucket: str, prefix: str, modified_after: datetime
) -> Iterator[tuple[str, str, datetime]]:
    """(key, version id, last modified) of the current version of every object under
    ``prefix`` modified after ``modified_after`` (delete markers and old versions skipped)."""
    paginator = s3_client().get_paginator("list_object_versions")
    with aws_errors(f"list versions under s3://{bucket}/{prefix}"):
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            for version in page.get("Versions", []):
                if not version.get("IsLatest") or version["LastModified"] <= modified_after:
                    continue
                yield version["Key"], version.get("VersionId") or "null", version["LastModified"]
