"""Object versions: what names one, and which version of a key owns its output. Pure (no
AWS SDK: the S3 reads the rule needs come through ``Reads``, the ``dal.s3`` module).

**A version** is S3's version id, or in an unversioned bucket a *content version*,
``null.<Last-Modified, UTC second>.<ETag>``: HeadObject, GetObject and ListObjectVersions
report the same ETag and Last-Modified for one write, so every trigger of it and the
reconciler's listing name it the same way; it is read with If-Match on its ETag.

**Newest version wins.** The output carries the identity it was made from
(``output_metadata``). ``before_write``: a newer version of the key owns the output
(SUPERSEDED), or this one may write it while the output is still the one checked (If-Match /
If-None-Match), so two versions racing cannot both win. ``after_write_lost``: the conditional
write lost to a newer version (SUPERSEDED), or ``TransientError`` (retried). The order
(``newer``): S3 event sequencers when both are known (the greater hexadecimal value is the
later write, compared as numbers), then content versions' Last-Modified, otherwise the
bucket's version listing (``newer_by_listing``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from msgspec import Struct

from ingest_pipeline.errors import TransientError

if TYPE_CHECKING:
    from ingest_pipeline.models import ObjectRef

UNVERSIONED = "null"  # S3's version id of objects written while versioning was off
CONTENT_VERSION_PREFIX = "null."


def known_version(version_id: Any) -> str | None:
    """A version id a trigger carries, or None when it carries none we can key a claim on."""
    if not isinstance(version_id, str) or not version_id or version_id == UNVERSIONED:
        return None
    return version_id


def s3_version_id(version_id: str | None) -> str | None:
    """The VersionId to send to S3 for an identity's version (None: the current object)."""
    if version_id is None or version_id == UNVERSIONED:
        return None
    return None if version_id.startswith(CONTENT_VERSION_PREFIX) else version_id


def content_version(etag: str, last_modified: datetime) -> str:
    """The identity of one write to an unversioned bucket: ``null.<UTC second>.<ETag>``."""
    if last_modified.tzinfo is None:
        last_modified = last_modified.replace(tzinfo=UTC)
    stamp = last_modified.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{CONTENT_VERSION_PREFIX}{stamp}.{etag.strip().strip(chr(34))}"


def content_version_etag(version_id: str | None) -> str | None:
    """The ETag a content version was built from (to read exactly that write: If-Match)."""
    return _content_part(version_id, 2)


def resolved_version(version_id: str | None, etag: str, last_modified: datetime) -> str:
    """The identity's version for what S3 answered about a write (HeadObject, a listing)."""
    return known_version(version_id) or content_version(etag, last_modified)


def _content_part(version_id: str | None, index: int) -> str | None:
    """A content version's stamp (0) or ETag (2); None for any other version id."""
    if version_id is None or not version_id.startswith(CONTENT_VERSION_PREFIX):
        return None
    return version_id[len(CONTENT_VERSION_PREFIX) :].partition(".")[index] or None


# --- the order of two versions of a key -----------------------------------------------------


class SourceVersion(Struct, frozen=True):
    """What is known about the order of one version of a key."""

    version_id: str
    sequencer: str | None = None


def newer(mine: SourceVersion, other: SourceVersion) -> bool | None:
    """Is ``mine`` a later write of the key than ``other``? None when only the bucket's
    version listing can tell (``newer_by_listing``). The same version is not newer."""
    if mine.version_id == other.version_id:
        return False
    if mine.sequencer and other.sequencer:
        try:
            mine_seq, other_seq = int(mine.sequencer, 16), int(other.sequencer, 16)
        except ValueError:
            return None
        if mine_seq != other_seq:  # equal sequencers on two versions: one of them is wrong
            return mine_seq > other_seq
    mine_stamp = _content_part(mine.version_id, 0)
    other_stamp = _content_part(other.version_id, 0)
    if mine_stamp and other_stamp and mine_stamp != other_stamp:
        return mine_stamp > other_stamp
    return None


def newer_by_listing(mine: str, other: str, versions_newest_first: Sequence[str]) -> bool:
    """Decide with ListObjectVersions' order for the key (newest first). A version that is
    no longer listed (deleted, expired) is older than any listed one."""
    rank = {version: i for i, version in enumerate(versions_newest_first)}
    if mine not in rank:
        return False
    if other not in rank:
        return True
    return rank[mine] < rank[other]


# --- who owns the output: the two entries around its write ----------------------------------


class Output(Protocol):
    """The output's HeadObject (``dal.s3.ObjectHead``)."""

    @property
    def etag(self) -> str: ...
    @property
    def metadata(self) -> Mapping[str, str]: ...


class Reads(Protocol):
    """The S3 reads the rule needs: the ``dal.s3`` module; a fake in the unit tests."""

    def head_object(self, bucket: str, key: str) -> Output | None: ...
    def key_versions(self, bucket: str, key: str) -> Sequence[str]: ...  # newest first


class Verdict(Struct, frozen=True):
    """``before_write``'s answer: the newer version that owns the output (do not write), or
    None and the write's ``metadata`` and condition (If-Match / If-None-Match)."""

    superseded_by: str | None
    metadata: dict[str, str]
    if_match: str | None
    if_none_match: bool


def before_write(obj: ObjectRef, out_key: str, execution_arn: str, reads: Reads) -> Verdict:
    """Before writing ``out_key`` from ``obj``: may this version write it, on what condition."""
    current = reads.head_object(obj.bucket, out_key)
    return Verdict(
        superseded_by=_newer_owner(obj, current, reads),
        metadata=output_metadata(obj, execution_arn),
        if_match=current.etag if current is not None else None,
        if_none_match=current is None,
    )


def after_write_lost(obj: ObjectRef, out_key: str, reads: Reads, lost: Exception) -> str:
    """The conditional write lost (``lost``: nothing was written): the newer version that now
    owns the output, or ``TransientError`` when the winner is not newer (retry)."""
    newer_version = _newer_owner(obj, reads.head_object(obj.bucket, out_key), reads)
    if newer_version is None:
        raise TransientError(
            f"{out_key} was written by another execution while this one wrote it; retrying"
        ) from lost
    return newer_version


def output_metadata(obj: ObjectRef, execution_arn: str) -> dict[str, str]:
    """The output's metadata: the identity of the version it was made from."""
    return {
        "source-key": obj.key,  # readable (metadata is ASCII: others become '?')
        "source-key-url": quote(obj.key, safe="/"),  # exact
        "source-version-id": obj.version_id or "",
        "source-sequencer": obj.sequencer or "",
        "execution-arn": execution_arn,
    }


def _newer_owner(obj: ObjectRef, output: Output | None, reads: Reads) -> str | None:
    """The version id of the newer version the output was made from, or None when ``obj``
    may write it (no output yet, the same version, or an older one)."""
    if output is None:
        return None
    theirs = output.metadata.get("source-version-id")
    if not theirs or output.metadata.get("source-key-url") != quote(obj.key, safe="/"):
        # Not written by this pipeline from this key (incoming/x.csv and incoming/x share
        # processed/x.jsonl): versions of different keys have no order; ours replaces it.
        return None
    mine = SourceVersion(obj.version_id or "", obj.sequencer)
    other = SourceVersion(theirs, output.metadata.get("source-sequencer") or None)
    if other.version_id == mine.version_id:
        return None
    mine_is_newer = newer(mine, other)
    if mine_is_newer is None:
        listing = reads.key_versions(obj.bucket, obj.key)
        mine_is_newer = newer_by_listing(mine.version_id, other.version_id, listing)
    return None if mine_is_newer else other.version_id
