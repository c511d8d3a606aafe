"""One object identity for every trigger. Pure.

Every way an object can reach the pipeline becomes the same ``ObjectIdentity`` (bucket, key,
version id), decided once, where the trigger enters:

==============================================  =========================  ===================
Trigger                                         Key as sent                Version id
==============================================  =========================  ===================
S3 -> EventBridge "Object Created" (and the     literal (not URL-encoded)  ``detail.object.
redrive source's copy of it)                                               version-id``
CloudTrail "AWS API Call via CloudTrail" S3     literal                    ``responseElements.
data event (PutObject, CopyObject,                                         x-amz-version-id``
CompleteMultipartUpload, PostObject), in                                   (or ``versionId``
EventBridge's envelope or as a raw log record                              in additionalEvent
                                                                           Data)
S3 event notification ``Records[]`` (S3 ->      URL-encoded, ``+`` for a   ``s3.object.
SQS / SNS / Lambda)                             space: decoded here        versionId``
State machine input (reprocess, reconcile)      literal                    ``object.versionId``
==============================================  =========================  ===================

A version id that is absent, JSON ``null`` or S3's literal ``"null"`` is *unknown*: the
workflow resolves it with HeadObject before it claims anything (``ResolveObjectVersion``), so
a null never reaches a DynamoDB key. What a version is (a version id, or a content version in
an unversioned bucket) and which version of a key wins: ``ingest_pipeline.versions``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from ingest_pipeline.errors import InvalidEventError
from ingest_pipeline.versions import known_version

# CloudTrail eventName / S3 notification eventName suffix / EventBridge reason that create
# an object version.
CREATING_API_CALLS = frozenset({"PutObject", "PostObject", "CopyObject", "CompleteMultipartUpload"})
_NOTIFICATION_REASONS = {
    "Put": "PutObject",
    "Post": "PostObject",
    "Copy": "CopyObject",
    "CompleteMultipartUpload": "CompleteMultipartUpload",
}
MAX_KEY_BYTES = 1024


@dataclass(frozen=True)
class ObjectIdentity:
    """One object version. ``version_id`` is None while unknown (resolve it before use)."""

    bucket: str
    key: str
    version_id: str | None = None
    sequencer: str | None = None
    etag: str | None = None
    size: int | None = None
    reason: str | None = None  # the API call that wrote it, when the trigger says

    @property
    def resolved(self) -> bool:
        return self.version_id is not None

    def as_input(self) -> dict[str, Any]:
        """The state machine's ``object``, as the rule's InputTransformer builds it."""
        out: dict[str, Any] = {"bucket": self.bucket, "key": self.key, "versionId": self.version_id}
        if self.sequencer is not None:
            out["sequencer"] = self.sequencer
        return out


def from_trigger(document: Any) -> ObjectIdentity:
    """The object a trigger is about, in any of the shapes in the module docstring.

    Raises ``InvalidEventError`` (naming what is missing) for anything else, including a
    trigger about something other than a new object version (a delete, a tagging call)."""
    if not isinstance(document, Mapping):
        raise InvalidEventError(f"a trigger must be a JSON object, not {type(document).__name__}")
    if isinstance(document.get("Records"), list):
        return _from_notification(document["Records"])
    if isinstance(document.get("detail"), Mapping) and "detail-type" in document:
        detail = document["detail"]
        if detail.get("eventSource") == "s3.amazonaws.com":
            return _from_cloudtrail(detail)
        if document.get("detail-type") != "Object Created":
            raise InvalidEventError(
                f"an EventBridge event of type {document.get('detail-type')!r} from "
                f"{document.get('source')!r} names no new object version"
            )
        return _from_object_created(detail)
    if document.get("eventSource") == "s3.amazonaws.com":  # a CloudTrail log record
        return _from_cloudtrail(document)
    if isinstance(document.get("object"), Mapping):  # the state machine's input
        obj = document["object"]
        return _identity(
            obj.get("bucket"),
            obj.get("key"),
            obj.get("versionId"),
            sequencer=obj.get("sequencer"),
            where="object",
        )
    raise InvalidEventError(
        "unrecognised trigger: expected an S3 Object Created event, a CloudTrail S3 data "
        "event, an S3 notification (Records) or a pipeline input (object.bucket/key)"
    )


def _from_object_created(detail: Mapping[str, Any]) -> ObjectIdentity:
    bucket, obj = _mapping(detail.get("bucket")), _mapping(detail.get("object"))
    return _identity(
        bucket.get("name"),
        obj.get("key"),
        obj.get("version-id"),
        sequencer=obj.get("sequencer"),
        etag=obj.get("etag"),
        size=obj.get("size"),
        reason=detail.get("reason"),
        where="detail",
    )


def _from_cloudtrail(detail: Mapping[str, Any]) -> ObjectIdentity:
    name = detail.get("eventName")
    if name not in CREATING_API_CALLS:
        raise InvalidEventError(
            f"CloudTrail S3 event {name!r} creates no object version "
            f"(expected one of {sorted(CREATING_API_CALLS)})"
        )
    if detail.get("errorCode"):
        raise InvalidEventError(
            f"CloudTrail S3 event {name} failed ({detail.get('errorCode')}): no object was written"
        )
    request = _mapping(detail.get("requestParameters"))
    response = _mapping(detail.get("responseElements"))
    extra = _mapping(detail.get("additionalEventData"))
    version = (
        response.get("x-amz-version-id")
        or response.get("versionId")
        or extra.get("x-amz-version-id")
        or extra.get("versionId")
    )
    return _identity(
        request.get("bucketName"),
        request.get("key"),
        version,
        reason=str(name),
        where="detail.requestParameters",
    )


def _from_notification(records: Sequence[Any]) -> ObjectIdentity:
    if len(records) != 1:
        raise InvalidEventError(
            f"an S3 notification with {len(records)} records: S3 sends one record per "
            "notification, so this one was built by hand; send one object per trigger"
        )
    record = _mapping(records[0])
    event_name = str(record.get("eventName", ""))
    if not event_name.startswith("ObjectCreated:"):
        raise InvalidEventError(f"S3 notification {event_name!r} names no new object version")
    s3 = _mapping(record.get("s3"))
    bucket, obj = _mapping(s3.get("bucket")), _mapping(s3.get("object"))
    key = obj.get("key")
    return _identity(
        bucket.get("name"),
        # Keys in S3 notifications are URL-encoded as form data ('+' is a space).
        unquote_plus(key) if isinstance(key, str) else key,
        obj.get("versionId"),
        sequencer=obj.get("sequencer"),
        etag=obj.get("eTag"),
        size=obj.get("size"),
        reason=_NOTIFICATION_REASONS.get(event_name.partition(":")[2]),
        where="Records[0].s3",
    )


def _identity(
    bucket: Any,
    key: Any,
    version_id: Any,
    *,
    sequencer: Any = None,
    etag: Any = None,
    size: Any = None,
    reason: Any = None,
    where: str,
) -> ObjectIdentity:
    problems = []
    if not isinstance(bucket, str) or not 3 <= len(bucket) <= 63:
        problems.append(f"{where}: bucket name missing or invalid ({bucket!r})")
    if not isinstance(key, str) or not key:
        problems.append(f"{where}: object key missing ({key!r})")
    elif len(key.encode("utf-8")) > MAX_KEY_BYTES:
        problems.append(f"{where}: object key longer than {MAX_KEY_BYTES} bytes")
    if problems:
        raise InvalidEventError("; ".join(problems))
    return ObjectIdentity(
        bucket=str(bucket),
        key=str(key),
        version_id=known_version(version_id),
        sequencer=sequencer if isinstance(sequencer, str) and sequencer else None,
        etag=etag.strip('"') if isinstance(etag, str) and etag else None,
        size=int(size) if isinstance(size, int | str) and str(size).isdigit() else None,
        reason=reason if isinstance(reason, str) and reason else None,
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
