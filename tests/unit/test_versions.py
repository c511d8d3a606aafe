"""What names an object version, and which version of a key owns its output
(``ingest_pipeline.versions``): pure, the bucket is a dictionary."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest_pipeline import versions
from ingest_pipeline.errors import TransientError
from ingest_pipeline.models import ObjectRef
from ingest_pipeline.versions import SourceVersion

pytestmark = pytest.mark.unit

BUCKET, KEY, OUT = "bucket-1", "incoming/orders/a b+%é.csv", "processed/orders/a b+%é.jsonl"


@dataclass(frozen=True)
class Head:
    etag: str
    metadata: dict[str, str]


@dataclass
class Bucket:
    """The reads the rule makes (``versions.Reads``), on a dictionary."""

    outputs: dict[str, Head] = field(default_factory=dict)
    listing: list[str] = field(default_factory=list)  # newest first
    listed: int = 0

    def head_object(self, bucket: str, key: str) -> Head | None:
        return self.outputs.get(key)

    def key_versions(self, bucket: str, key: str) -> list[str]:
        self.listed += 1
        return self.listing

    def written_by(self, obj: ObjectRef, key: str = KEY) -> Bucket:
        source = ObjectRef(
            bucket=BUCKET, key=key, version_id=obj.version_id, sequencer=obj.sequencer
        )
        metadata = versions.output_metadata(source, "arn")
        self.outputs[OUT] = Head(etag=f"etag-{obj.version_id}", metadata=metadata)
        return self


def version(version_id: str, sequencer: str | None = None) -> ObjectRef:
    return ObjectRef(bucket=BUCKET, key=KEY, version_id=version_id, sequencer=sequencer)


@given(
    st.from_regex(r"\A[0-9a-f]{32}(-[0-9]{1,4})?\Z"),
    st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ),
)
def test_content_version_is_stable_and_names_its_etag(etag: str, modified: datetime) -> None:
    # HeadObject quotes the ETag, ListObjectVersions too; the listing has milliseconds.
    from_head = versions.resolved_version(None, f'"{etag}"', modified.replace(microsecond=0))
    from_listing = versions.resolved_version("null", f'"{etag}"', modified)
    assert from_head == from_listing
    assert versions.content_version_etag(from_head) == etag
    assert versions.s3_version_id(from_head) is None
    assert versions.known_version(from_head) == from_head  # usable as a claim key
    assert versions.resolved_version("v1", etag, modified) == "v1"
    assert versions.content_version_etag("v1") is None and versions.s3_version_id("v1") == "v1"


@given(st.integers(0, 2**80), st.integers(0, 2**80), st.integers(0, 6), st.integers(0, 6))
def test_sequencers_compare_as_left_padded_hex(a: int, b: int, pad_a: int, pad_b: int) -> None:
    seq_a, seq_b = "0" * pad_a + f"{a:X}", "0" * pad_b + f"{b:X}"
    verdict = versions.newer(SourceVersion("va", seq_a), SourceVersion("vb", seq_b))
    assert verdict == (a > b if a != b else None)


def test_version_order_falls_back_to_content_stamps_then_the_listing() -> None:
    assert versions.newer(SourceVersion("v2"), SourceVersion("v1")) is None
    assert versions.newer(SourceVersion("v1", "00A"), SourceVersion("v1", "00B")) is False
    assert versions.newer(SourceVersion("v2", "zz"), SourceVersion("v1", "01")) is None
    later = versions.content_version("e2", datetime(2026, 1, 2, tzinfo=UTC))
    earlier = versions.content_version("e1", datetime(2026, 1, 1, tzinfo=UTC))
    assert versions.newer(SourceVersion(later), SourceVersion(earlier)) is True
    listing = ["v3", "v2", "v1"]  # ListObjectVersions: newest first
    assert versions.newer_by_listing("v2", "v1", listing) is True
    assert versions.newer_by_listing("v1", "v2", listing) is False
    assert versions.newer_by_listing("v2", "gone", listing) is True  # expired: older
    assert versions.newer_by_listing("gone", "v2", listing) is False


def test_the_first_version_writes_if_there_is_still_no_output() -> None:
    verdict = versions.before_write(version("v1", "01"), OUT, "arn:x", Bucket())
    assert verdict.superseded_by is None
    assert (verdict.if_match, verdict.if_none_match) == (None, True)
    assert verdict.metadata == {
        "source-key": KEY,
        "source-key-url": "incoming/orders/a%20b%2B%25%C3%A9.csv",
        "source-version-id": "v1",
        "source-sequencer": "01",
        "execution-arn": "arn:x",
    }


@pytest.mark.parametrize(
    ("mine", "theirs", "listing", "superseded_by", "listed"),
    [
        (version("v1", "01"), version("v2", "02"), [], "v2", 0),  # sequencers decide
        (version("v2", "02"), version("v1", "01"), [], None, 0),
        (version("v1", "01"), version("v1", "01"), [], None, 0),  # the same version again
        (version("v1"), version("v2", "02"), ["v2", "v1"], "v2", 1),  # the listing decides
        (version("v2"), version("v1"), ["v2", "v1"], None, 1),
        (version("v2"), version("gone"), ["v2"], None, 1),  # theirs expired: older
    ],
)
def test_before_the_write_the_newest_version_owns_the_output(
    mine: ObjectRef, theirs: ObjectRef, listing: list[str], superseded_by: str | None, listed: int
) -> None:
    bucket = Bucket(listing=listing).written_by(theirs)
    verdict = versions.before_write(mine, OUT, "arn", bucket)
    assert (verdict.superseded_by, bucket.listed) == (superseded_by, listed)
    assert (verdict.if_match, verdict.if_none_match) == (f"etag-{theirs.version_id}", False)


def test_an_output_of_another_key_or_not_ours_has_no_order() -> None:
    # incoming/x.csv and incoming/x share processed/x.jsonl: ours replaces the other's.
    other_key = Bucket().written_by(version("v9", "09"), key=KEY.removesuffix(".csv"))
    assert versions.before_write(version("v1", "01"), OUT, "arn", other_key).superseded_by is None
    foreign = Bucket(outputs={OUT: Head(etag="e", metadata={})})
    verdict = versions.before_write(version("v1", "01"), OUT, "arn", foreign)
    assert (verdict.superseded_by, verdict.if_match) == (None, "e")


@given(st.integers(0, 2**64), st.integers(0, 2**64))
def test_of_two_versions_racing_exactly_the_newer_one_writes(a: int, b: int) -> None:
    first, second = version("va", f"{a:X}"), version("vb", f"{b:X}")
    may_write = [
        versions.before_write(mine, OUT, "arn", Bucket().written_by(theirs)).superseded_by is None
        for mine, theirs in ((first, second), (second, first))
    ]
    assert may_write == ([a > b, b > a] if a != b else [False, False])


def test_after_a_lost_write_the_newer_winner_supersedes_else_retry() -> None:
    lost = RuntimeError("412 PreconditionFailed")
    won_by_newer = Bucket().written_by(version("v2", "02"))
    assert versions.after_write_lost(version("v1", "01"), OUT, won_by_newer, lost) == "v2"
    won_by_older = Bucket().written_by(version("v0", "00"))
    with pytest.raises(TransientError, match="written by another execution") as caught:
        versions.after_write_lost(version("v1", "01"), OUT, won_by_older, lost)
    assert caught.value.__cause__ is lost
    with pytest.raises(TransientError):  # deleted in between: nothing owns it, retry
        versions.after_write_lost(version("v1", "01"), OUT, Bucket(), lost)
