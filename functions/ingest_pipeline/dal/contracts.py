"""Contracts registered at run time: ``contracts/<dataset>.json`` in the ingest bucket, one S3
object version per contract version, numbered by its metadata ``contract-version`` (1, 2, ...).

No redeploy: ``ingestctl dataset add`` writes the next version (a conditional write, so two
registrations at once cannot both become version N), and the functions read it.

Which version processes an object: the one that was current when the object was claimed
(``contract_at``): the latest version whose S3 ``LastModified`` is at or before the claim time
(to the second: S3 keeps LastModified in whole seconds). A retry, a redrive or the large-file
path's chunks of one claim all use the same version; a reprocess is a new claim and uses the
version current then. Without a registered version the packaged contract is used (version 0).

Cost: one GetObject per object, made conditional on the ETag the function saw last (an
unchanged contract answers 304 without a body). Only a contract changed after the claim costs
a ListObjectVersions and a GetObject of the older version (cached: a version never changes).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from msgspec import Struct

from ingest_pipeline.dal.aws import error_code
from ingest_pipeline.dal.s3 import aws_errors, map_client_error, s3_client
from ingest_pipeline.errors import StorageUnavailableError, UnknownDatasetError
from ingest_pipeline.logic import keys
from ingest_pipeline.logic.contracts import (
    DATASET_NAME,
    Contract,
    Registered,
    is_packaged,
    load_contract,
    parse_registered,
)
from ingest_pipeline.models import ObjectRef

__all__ = [
    "CONTRACTS_PREFIX",
    "contract_at",
    "contract_for",
    "contract_key",
    "history",
    "latest",
    "register",
]

CONTRACTS_PREFIX = "contracts/"
VERSION_METADATA = "contract-version"
_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}


def contract_key(dataset: str) -> str:
    return f"{CONTRACTS_PREFIX}{dataset}.json"


class _Seen(Struct, frozen=True):
    etag: str
    last_modified: datetime
    registered: Registered


#: the latest version this warm environment saw, per (bucket, dataset)
_latest: dict[tuple[str, str], _Seen] = {}


def _registered(dataset: str, answer: Any) -> Registered:
    text = answer["Body"].read().decode("utf-8")
    number = int(answer.get("Metadata", {}).get(VERSION_METADATA) or 0)
    return parse_registered(text, dataset, number, answer.get("VersionId") or "")


def _get(bucket: str, dataset: str, **params: str) -> Any:
    """GetObject of the dataset's contract; None when there is none, _DELETED when its
    latest version is a delete marker (older versions may still apply to older claims)."""
    key = contract_key(dataset)
    try:
        return s3_client().get_object(Bucket=bucket, Key=key, **params)  # type: ignore[arg-type]
    except ClientError as exc:
        if error_code(exc) in _NOT_FOUND:
            headers = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
            return _DELETED if headers.get("x-amz-delete-marker") == "true" else None
        if error_code(exc) == "304":
            raise _NotModified from None
        raise map_client_error(exc, f"read contract s3://{bucket}/{key}") from exc
    except BotoCoreError as exc:
        raise StorageUnavailableError(f"read contract s3://{bucket}/{key}: {exc}") from exc


_DELETED = object()


class _NotModified(Exception):
    """GetObject with If-None-Match: the contract is the one seen last."""


def contract_for(obj: ObjectRef, claimed_at: datetime | None) -> Registered:
    """The contract an object is processed with: its dataset's (the first folder below
    incoming/), as current when the object was claimed (now, for an event without the claim
    time: ``sam local invoke`` with a hand-made event)."""
    return contract_at(obj.bucket, keys.dataset_of(obj.key), claimed_at or datetime.now(UTC))


def contract_at(bucket: str, dataset: str, claimed_at: datetime) -> Registered:
    """The contract of ``dataset`` that was current at ``claimed_at`` (timezone-aware)."""
    if not DATASET_NAME.match(dataset):
        return Registered(load_contract(dataset), 0)  # UnknownDatasetError, with the reason
    seen = _latest.get((bucket, dataset))
    try:
        answer = _get(bucket, dataset, **({"IfNoneMatch": seen.etag} if seen else {}))
    except _NotModified:  # the version seen last is still the latest
        answer = None
    else:
        if answer is None or answer is _DELETED:
            _latest.pop((bucket, dataset), None)
            if answer is None:  # never registered: no versions to look through
                return _packaged_or_unknown(dataset, claimed_at)
            return _at(bucket, dataset, claimed_at)
        seen = _Seen(answer["ETag"], answer["LastModified"], _registered(dataset, answer))
        _latest[(bucket, dataset)] = seen
    if seen is None:  # pragma: no cover - a 304 answers only an If-None-Match
        raise StorageUnavailableError(f"S3 answered 304 to a read of {contract_key(dataset)}")
    if seen.last_modified <= claimed_at:
        return seen.registered
    return _at(bucket, dataset, claimed_at)  # changed since the claim


def _at(bucket: str, dataset: str, claimed_at: datetime) -> Registered:
    """The version current at ``claimed_at``, from the list of versions: the packaged
    contract when none was (or the dataset was deleted then)."""
    for when, version_id in history(bucket, dataset):
        if when <= claimed_at:
            if version_id is None:
                break  # deleted at that time
            answer = _get(bucket, dataset, VersionId=version_id)
            if answer is not None and answer is not _DELETED:
                return _registered(dataset, answer)
    return _packaged_or_unknown(dataset, claimed_at)


def _packaged_or_unknown(dataset: str, claimed_at: datetime) -> Registered:
    if is_packaged(dataset):
        return Registered(load_contract(dataset), 0)
    raise UnknownDatasetError(
        f"no contract for dataset {dataset!r} was registered when the object was claimed "
        f"({claimed_at.isoformat()}); register one with `ingestctl dataset add`"
    )


def history(bucket: str, dataset: str) -> list[tuple[datetime, str | None]]:
    """When each version of the dataset's contract was written, newest first, with its S3
    version id (None: deleted then)."""
    key = contract_key(dataset)
    entries: list[tuple[datetime, bool, str | None]] = []
    paginator = s3_client().get_paginator("list_object_versions")
    with aws_errors(f"list contract versions s3://{bucket}/{key}"):
        for page in paginator.paginate(Bucket=bucket, Prefix=key):
            for version in page.get("Versions", []):
                if version["Key"] == key:
                    entries.append(
                        (version["LastModified"], version["IsLatest"], version["VersionId"])
                    )
            for marker in page.get("DeleteMarkers", []):
                if marker["Key"] == key:
                    entries.append((marker["LastModified"], marker["IsLatest"], None))
    # LastModified is in whole seconds: of two writes in one second, IsLatest tells the newer
    entries.sort(key=lambda entry: entry[:2], reverse=True)
    return [(when, version_id) for when, _, version_id in entries]


def latest(bucket: str, dataset: str) -> tuple[str, int] | None:
    """The text and number of the dataset's current registered version (None: none)."""
    answer = _get(bucket, dataset)
    if answer is None or answer is _DELETED:
        return None
    text = answer["Body"].read().decode("utf-8")
    return text, int(answer.get("Metadata", {}).get(VERSION_METADATA) or 0)


def register(bucket: str, contract: Contract, text: str) -> int:
    """Store ``contract`` (its file's ``text``) as the dataset's next version; its number.

    The write is conditional on the version read just before (If-Match on its ETag, or
    If-None-Match for the first): a concurrent registration makes it fail with
    PreconditionFailed, and the caller may try again."""
    key = contract_key(contract.dataset)
    condition: dict[str, str] = {"IfNoneMatch": "*"}
    number = 0
    current = _get(bucket, contract.dataset)
    if current is _DELETED:  # registered again after a deletion: numbers go on
        older = next((v for _, v in history(bucket, contract.dataset) if v is not None), None)
        current = None if older is None else _get(bucket, contract.dataset, VersionId=older)
        condition = {"IfNoneMatch": "*"}
        if current is not None:
            current["Body"].close()
            number = int(current.get("Metadata", {}).get(VERSION_METADATA) or 0)
    elif current is not None:
        current["Body"].close()
        condition = {"IfMatch": current["ETag"]}
        number = int(current.get("Metadata", {}).get(VERSION_METADATA) or 0)
    number += 1
    with aws_errors(f"register contract s3://{bucket}/{key}"):
        s3_client().put_object(
            Bucket=bucket,
            Key=key,
            Body=text.encode("utf-8"),
            ContentType="application/json",
            Metadata={VERSION_METADATA: str(number)},
            **condition,  # type: ignore[arg-type]
        )
    return number
