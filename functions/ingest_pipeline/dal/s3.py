"""S3 access: streaming reads and writes, quarantine copies, and AWS errors mapped to the
pipeline's taxonomy. The only module of the package that talks to S3."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from datetime import datetime
from functools import cache
from typing import IO, TYPE_CHECKING, Any

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import BotoCoreError, ClientError
from msgspec import Struct

from ingest_pipeline import versions
from ingest_pipeline.dal.aws import BOTO_CONFIG, error_code, error_message, is_error
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
    from mypy_boto3_s3.type_defs import GetObjectOutputTypeDef, ObjectVersionTypeDef

    from ingest_pipeline.logic.chunks import CopyPart, UploadPart

READ_BUFFER_BYTES = 256 * 1024
PARTS_AT_ONCE = 16  # part copies in flight while joining the large-file path's chunks
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
        self.bytes_read = 0  # progress, for the time budget (logic/deadline.py)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._body.read(len(buffer))
        buffer[: len(chunk)] = chunk
        self.bytes_read += len(chunk)
        return len(chunk)

    def close(self) -> None:
        self._body.close()
        super().close()


class OpenedObject(Struct, frozen=True):  # Structs: a dataclass compiles at every import
    key: str
    version_id: str | None  # as S3 reports it ("null" or absent for an unversioned write)
    size: int
    etag: str
    last_modified: datetime
    body: IO[bytes]
    bytes_read: Callable[[], int]  # how much of the body has been read from S3 so far


class ObjectReplacedError(Exception):
    """The write an identity names is gone: an unversioned object was overwritten since.
    Not part of the taxonomy: the process step records the object as superseded."""


def _get_version(
    bucket: str, key: str, version_id: str | None, action: str, **args: Any
) -> GetObjectOutputTypeDef:
    """GetObject of exactly the write an identity names: by VersionId, or a content version by
    If-Match on its ETag (``ObjectReplacedError`` once that write was overwritten)."""
    if (s3_version := versions.s3_version_id(version_id)) is not None:
        args["VersionId"] = s3_version
    if (etag := versions.content_version_etag(version_id)) is not None:
        args["IfMatch"] = f'"{etag}"'
    try:
        with aws_errors(action):
            return s3_client().get_object(Bucket=bucket, Key=key, **args)
    except PipelineError as exc:
        if is_error(exc, "PreconditionFailed"):
            raise ObjectReplacedError(
                f"s3://{bucket}/{key} was overwritten after the write {version_id}"
            ) from exc
        raise


def open_object(
    bucket: str, key: str, version_id: str | None, *, first_byte: int = 0
) -> OpenedObject:
    """Open exactly the object version an identity names, for streaming.

    The key is used as given: the identity decided once, where the trigger entered, whether
    its key was URL-encoded (``logic.identity``). A real version id is read by VersionId; a
    content version (unversioned bucket) reads the current object only while its ETag is
    still the one the identity was built from (If-Match).
    """
    ranged = {"Range": f"bytes={first_byte}-"} if first_byte else {}
    response = _get_version(bucket, key, version_id, f"GetObject s3://{bucket}/{key}", **ranged)
    raw = _RawBody(response["Body"])
    body = io.BufferedReader(raw, buffer_size=READ_BUFFER_BYTES)
    size = int(response.get("ContentLength", 0))
    if first_byte:  # ContentRange: "bytes <first>-<last>/<size>"
        size = int(str(response.get("ContentRange", "")).rpartition("/")[2] or size)
    return OpenedObject(
        key=key,
        version_id=response.get("VersionId"),
        size=size,
        etag=str(response.get("ETag", "")).strip('"'),
        last_modified=response["LastModified"],
        body=body,
        bytes_read=lambda: raw.bytes_read,
    )


class ObjectHead(Struct, frozen=True):
    version_id: str | None  # as S3 reports it
    etag: str
    last_modified: datetime
    size: int
    metadata: dict[str, str]


def head_object(bucket: str, key: str) -> ObjectHead | None:
    """HeadObject of the current object, or None when there is none (404)."""
    try:
        with aws_errors(f"HeadObject s3://{bucket}/{key}"):
            response = s3_client().head_object(Bucket=bucket, Key=key)
    except ObjectNotFoundError:
        return None
    return ObjectHead(
        version_id=response.get("VersionId"),
        etag=str(response.get("ETag", "")).strip('"'),
        last_modified=response["LastModified"],
        size=int(response.get("ContentLength", 0)),
        metadata=dict(response.get("Metadata") or {}),
    )


def key_versions(bucket: str, key: str) -> list[str]:
    """The identity versions of ``key``'s object versions, newest first (ListObjectVersions
    lists a key's versions newest first; delete markers are not versions). With
    ``head_object``, the reads ``versions.before_write`` needs (``versions.Reads``)."""
    paginator = s3_client().get_paginator("list_object_versions")
    with aws_errors(f"list versions of s3://{bucket}/{key}"):
        return [
            _listed_version(version)
            for page in paginator.paginate(Bucket=bucket, Prefix=key)
            for version in page.get("Versions", [])
            if version["Key"] == key
        ]


def _listed_version(version: ObjectVersionTypeDef) -> str:
    """A listed version's identity version: an unversioned write ("null") gets its content
    version, as ResolveObjectVersion computes it (``ingest_pipeline.versions``)."""
    etag = str(version.get("ETag", ""))
    return versions.resolved_version(version.get("VersionId"), etag, version["LastModified"])


class OutputChangedError(Exception):
    """A conditional write lost: the output changed after it was checked (HTTP 412, or 409
    when two conditional writes of one key raced). Nothing was written."""


def upload_stream(
    bucket: str,
    key: str,
    chunks: Iterator[bytes],
    *,
    content_type: str,
    metadata: dict[str, str],
    config: TransferConfig = TRANSFER_CONFIG,
    if_match: str | None = None,
    if_none_match: bool = False,
) -> str:
    """Stream chunks to one object; the object appears only when the upload completes.
    Returns the object's ETag (unquoted).

    An exception raised by ``chunks`` aborts the upload: nothing is written. Output below
    ``config.multipart_threshold`` (nearly every object) is one PutObject; larger output is
    a multipart upload of ``config.multipart_chunksize`` parts.

    ``if_match`` (an ETag) / ``if_none_match`` make the write conditional (S3 conditional
    writes, on PutObject and CompleteMultipartUpload): it happens only while the object is
    still that version / still absent, else ``OutputChangedError`` and nothing is written.
    """
    extra: dict[str, Any] = {"ContentType": content_type, "Metadata": ascii_metadata(metadata)}
    condition = _condition(if_match, if_none_match)
    with _conditional_write(f"PutObject s3://{bucket}/{key}"):  # reading the source can fail too
        head, rest = _read_up_to(chunks, config.multipart_threshold)
        if rest is None:
            put = s3_client().put_object(Bucket=bucket, Key=key, Body=head, **extra, **condition)
            return str(put.get("ETag", "")).strip('"')
        client = s3_client()
        parts = _parts(itertools.chain([head], rest), config.multipart_chunksize)

        def write_parts(upload_id: str) -> list[dict[str, Any]]:
            written: list[dict[str, Any]] = []
            for number, body in enumerate(parts, start=1):
                etag = client.upload_part(
                    Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body
                )["ETag"]
                written.append({"PartNumber": number, "ETag": etag})
            return written

        return _completed_upload(bucket, key, write_parts, extra=extra, condition=condition)


def _condition(if_match: str | None, if_none_match: bool) -> dict[str, Any]:
    """S3 conditional-write arguments: only while the object is still that ETag / absent."""
    if if_match is not None:
        return {"IfMatch": f'"{if_match.strip(chr(34))}"'}
    return {"IfNoneMatch": "*"} if if_none_match else {}


@contextlib.contextmanager
def _conditional_write(action: str) -> Iterator[None]:
    """AWS errors mapped to the taxonomy; a lost condition is ``OutputChangedError``."""
    try:
        with aws_errors(action):
            yield
    except PipelineError as exc:
        if is_error(exc, "PreconditionFailed", "ConditionalRequestConflict"):
            raise OutputChangedError(f"{action}: {exc.__cause__}") from exc
        raise


def _completed_upload(
    bucket: str,
    key: str,
    write_parts: Callable[[str], list[dict[str, Any]]],
    *,
    extra: dict[str, Any],
    condition: dict[str, Any],
) -> str:
    """One multipart upload: ``write_parts(upload_id)`` writes the parts and returns them
    ({PartNumber, ETag}); the completion is conditional; anything failing aborts it
    (s3transfer's upload_fileobj cannot make the completion conditional)."""
    client = s3_client()
    upload_id = client.create_multipart_upload(Bucket=bucket, Key=key, **extra)["UploadId"]
    try:
        parts = write_parts(upload_id)
        done = client.complete_multipart_upload(
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            MultipartUpload={"Parts": parts},  # type: ignore[typeddict-item]
            **condition,
        )
    except BaseException:
        with contextlib.suppress(ClientError, BotoCoreError):
            client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
        raise
    return str(done.get("ETag", "")).strip('"')


def _parts(chunks: Iterator[bytes], size: int) -> Iterator[bytes]:
    """Re-cut chunks into parts of exactly ``size`` bytes (the last may be smaller)."""
    pending = bytearray()
    for chunk in chunks:
        pending += chunk
        while len(pending) >= size:
            yield bytes(pending[:size])
            del pending[:size]
    if pending:
        yield bytes(pending)


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
    if (s3_version := versions.s3_version_id(version_id)) is not None:
        source["VersionId"] = s3_version
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


def put_bytes(
    bucket: str, key: str, body: bytes, content_type: str = "application/octet-stream"
) -> None:
    """One unconditional PutObject (the large-file path's working files)."""
    with aws_errors(f"PutObject s3://{bucket}/{key}"):
        s3_client().put_object(Bucket=bucket, Key=key, Body=body, ContentType=content_type)


def list_etags(bucket: str, prefix: str) -> dict[str, str]:
    """The current objects under ``prefix``: key -> ETag (unquoted)."""
    paginator = s3_client().get_paginator("list_objects_v2")
    found: dict[str, str] = {}
    with aws_errors(f"list s3://{bucket}/{prefix}*"):
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                found[item["Key"]] = str(item.get("ETag", "")).strip('"')
    return found


def delete_keys(bucket: str, keys: list[str]) -> None:
    """Delete these objects (current versions: the bucket keeps the older ones)."""
    client = s3_client()
    with aws_errors(f"delete {len(keys)} object(s) of s3://{bucket}"):
        for first in range(0, len(keys), 1000):
            batch = [{"Key": key} for key in keys[first : first + 1000]]
            response = client.delete_objects(
                Bucket=bucket,
                Delete={"Objects": batch, "Quiet": True},  # type: ignore[typeddict-item]
            )
            for failed in response.get("Errors", [])[:1]:  # refused per key, not raised
                code = str(failed.get("Code", ""))
                message = f"DeleteObject s3://{bucket}/{failed.get('Key')}: {code}"
                if code in _DENIED:
                    raise AccessDeniedError(message)
                if code in _TRANSIENT:
                    raise StorageUnavailableError(message)
                raise ConfigurationError(message)


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
    """(key, identity version, last modified) of the current version of every object under
    ``prefix`` modified after ``modified_after`` (delete markers and old versions skipped)."""
    paginator = s3_client().get_paginator("list_object_versions")
    with aws_errors(f"list versions under s3://{bucket}/{prefix}"):
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            for version in page.get("Versions", []):
                if not version.get("IsLatest") or version["LastModified"] <= modified_after:
                    continue
                yield version["Key"], _listed_version(version), version["LastModified"]


def read_range(bucket: str, key: str, version_id: str | None, first: int, last: int) -> bytes:
    """Bytes ``[first, last]`` of exactly the version an identity names (fewer at its end)."""
    action = f"GetObject s3://{bucket}/{key} bytes {first}-{last}"
    try:
        response = _get_version(bucket, key, version_id, action, Range=f"bytes={first}-{last}")
        with aws_errors(action):
            return bytes(response["Body"].read())
    except PipelineError as exc:
        if is_error(exc, "InvalidRange"):  # past the end (an empty object)
            return b""
        raise


def get_json(bucket: str, key: str) -> Any:
    with aws_errors(f"GetObject s3://{bucket}/{key}"):
        body = s3_client().get_object(Bucket=bucket, Key=key)["Body"].read()
    return json.loads(body)


def delete_prefix(bucket: str, prefix: str) -> int:
    """Delete every object under ``prefix`` (current versions; the lifecycle expires the
    rest); how many were deleted."""
    client = s3_client()
    deleted = 0
    paginator = client.get_paginator("list_objects_v2")
    with aws_errors(f"delete s3://{bucket}/{prefix}*"):
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
            if keys:
                client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})  # type: ignore[typeddict-item]
                deleted += len(keys)
    return deleted


def join_objects(
    bucket: str,
    key: str,
    steps: list[CopyPart | UploadPart],
    *,
    content_type: str,
    metadata: dict[str, str],
    if_match: str | None = None,
    if_none_match: bool = False,
) -> str:
    """Write ``key`` as the parts ``steps`` (``logic.chunks.assembly_steps``): S3 copies the
    big ones (UploadPartCopy), small ones are read and uploaded. Conditional as
    ``upload_stream``; nothing is written unless it completes."""
    from ingest_pipeline.logic.chunks import CopyPart  # the large-file path only

    extra: dict[str, Any] = {"ContentType": content_type, "Metadata": ascii_metadata(metadata)}
    condition = _condition(if_match, if_none_match)
    client = s3_client()

    def write_parts(upload_id: str) -> list[dict[str, Any]]:
        def write(number: int, step: CopyPart | UploadPart) -> dict[str, Any]:
            if isinstance(step, CopyPart):
                piece = step.piece
                etag = client.upload_part_copy(
                    Bucket=bucket,
                    Key=key,
                    UploadId=upload_id,
                    PartNumber=number,
                    CopySource={"Bucket": bucket, "Key": piece.key},
                    CopySourceRange=f"bytes={piece.first}-{piece.last}",
                )["CopyPartResult"]["ETag"]
            else:
                body = b"".join(
                    read_range(bucket, p.key, None, p.first, p.last) for p in step.pieces
                )
                etag = client.upload_part(
                    Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body
                )["ETag"]
            return {"PartNumber": number, "ETag": etag}

        # S3 copies the parts; several at once (at most PARTS_AT_ONCE small parts are in
        # memory, each below 5 MiB + one piece).
        with ThreadPoolExecutor(max_workers=PARTS_AT_ONCE) as pool:
            return list(pool.map(write, range(1, len(steps) + 1), steps))

    action = f"assemble s3://{bucket}/{key}"
    with _conditional_write(action):
        if not steps:
            put = client.put_object(Bucket=bucket, Key=key, Body=b"", **extra, **condition)
            return str(put.get("ETag", "")).strip('"')
        return _completed_upload(bucket, key, write_parts, extra=extra, condition=condition)
