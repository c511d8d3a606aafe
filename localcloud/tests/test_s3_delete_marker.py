"""GetObject of a key whose current version is a delete marker: 404 NoSuchKey with
``x-amz-delete-marker: true`` and the marker's version id, as S3 answers it
(fixes/s3_get_delete_marker.py); a key that never existed: a bare 404."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from localcloud import registry
from localcloud.patching import PatchSet
from localcloud.runtime import Runtime

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def s3() -> Iterator[Any]:
    runtime = Runtime()
    patches = PatchSet(p for p in registry.patch_set() if ".s3_" in p.module)
    with mock_aws():
        patches.install(runtime)
        try:
            client = boto3.client("s3", region_name="us-east-1")
            client.create_bucket(Bucket="deleted-keys")
            client.put_bucket_versioning(
                Bucket="deleted-keys", VersioningConfiguration={"Status": "Enabled"}
            )
            yield client
        finally:
            patches.uninstall()
            runtime.close()


def headers_of_get(s3: Any, key: str) -> dict[str, str]:
    with pytest.raises(ClientError) as caught:
        s3.get_object(Bucket="deleted-keys", Key=key)
    assert caught.value.response["Error"]["Code"] == "NoSuchKey"
    return dict(caught.value.response["ResponseMetadata"]["HTTPHeaders"])


def test_get_of_a_deleted_key_says_it_was_deleted(s3: Any) -> None:
    s3.put_object(Bucket="deleted-keys", Key="k", Body=b"1")
    marker = s3.delete_object(Bucket="deleted-keys", Key="k")["VersionId"]
    headers = headers_of_get(s3, "k")
    assert headers.get("x-amz-delete-marker") == "true"
    assert headers.get("x-amz-version-id") == marker
    assert "x-amz-delete-marker" not in headers_of_get(s3, "never-written")
