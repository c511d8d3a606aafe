"""``dal.s3.upload_stream`` writes the whole output or nothing, below and above the multipart
threshold (one PutObject below it, a multipart upload above it)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from boto3.s3.transfer import TransferConfig

from ingest_pipeline.dal import s3 as s3_dal
from ingest_pipeline.errors import DataError
from localcloud.cloud import REGION, LocalCloud

pytestmark = pytest.mark.e2e

MiB = 1024 * 1024
# S3's smallest multipart part is 5 MiB, so this is the smallest threshold that can be tested.
SMALL_PARTS = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)


def _chunks(total: int, size: int = 256 * 1024, fail_after: int | None = None) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        if fail_after is not None and sent >= fail_after:
            raise DataError("bad value", line=9)
        chunk = bytes([65 + (sent // size) % 26]) * min(size, total - sent)
        sent += len(chunk)
        yield chunk


@pytest.fixture
def bucket(cloud: LocalCloud) -> str:
    s3_dal.s3_client.cache_clear()  # a client of this cloud, not of an earlier test's
    boto3.client("s3", region_name=REGION).create_bucket(Bucket="upload-test")
    return "upload-test"


@pytest.mark.parametrize(
    "total", [0, 10, 5 * MiB, 12 * MiB + 3], ids=["empty", "small", "threshold", "multipart"]
)
def test_upload_writes_the_whole_stream_with_type_and_metadata(bucket: str, total: int) -> None:
    s3_dal.upload_stream(
        bucket,
        "out/x.jsonl",
        _chunks(total),
        content_type="application/x-ndjson",
        metadata={"source-key": "incoming/orders/d\u00e9j\u00e0.csv"},
        config=SMALL_PARTS,
    )
    got = boto3.client("s3", region_name=REGION).get_object(Bucket=bucket, Key="out/x.jsonl")
    assert got["Body"].read() == b"".join(_chunks(total))
    assert got["ContentType"] == "application/x-ndjson"
    assert got["Metadata"] == {"source-key": "incoming/orders/d?j?.csv"}
    multipart = "-" in got["ETag"]  # a multipart ETag ends in -<number of parts>
    assert multipart == (total > SMALL_PARTS.multipart_threshold)


@pytest.mark.parametrize("fail_after", [MiB, 8 * MiB], ids=["before-threshold", "multipart"])
def test_a_failing_stream_writes_nothing(bucket: str, fail_after: int) -> None:
    with pytest.raises(DataError):
        s3_dal.upload_stream(
            bucket,
            "out/x.jsonl",
            _chunks(12 * MiB, fail_after=fail_after),
            content_type="application/x-ndjson",
            metadata={},
            config=SMALL_PARTS,
        )
    s3 = boto3.client("s3", region_name=REGION)
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
