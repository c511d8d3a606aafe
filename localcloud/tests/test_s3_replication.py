"""S3 live replication as S3 runs it (features/s3_replication.py): each new object version of
a replicated bucket is copied, in the background and as the configuration's role, to the
destination of the rule that applies (prefix, priority, storage class); the source object
reads x-amz-replication-status PENDING then COMPLETED or FAILED, the replica REPLICA; delete
markers follow only where the rule says; what was there before the configuration stays."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

S3_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "s3.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
OBJECT_ACTIONS = [
    "s3:GetObjectVersionForReplication",
    "s3:GetObjectVersionAcl",
    "s3:GetObjectVersionTagging",
    "s3:ReplicateObject",
    "s3:ReplicateDelete",
    "s3:ReplicateTags",
]


def role(resource: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": S3_TRUST,
            "Policies": [
                {
                    "PolicyName": "replication",
                    "PolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {"Effect": "Allow", "Action": OBJECT_ACTIONS, "Resource": resource}
                        ],
                    },
                }
            ],
        },
    }


def bucket(name: str, replication: dict[str, Any] | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {
        "BucketName": name,
        "VersioningConfiguration": {"Status": "Enabled"},
    }
    if replication:
        props["ReplicationConfiguration"] = replication
    depends = ["DestA", "DestB", "DestC"] if replication else []
    return {"Type": "AWS::S3::Bucket", "DependsOn": depends, "Properties": props}


TEMPLATE = {
    "AWSTemplateFormatVersion": "2010-09-09",
    "Resources": {
        # objects of every bucket: what the User Guide's example grants (bucket/*)
        "Replicator": role("arn:aws:s3:::*/*"),
        # the object actions on bucket ARNs only: they grant nothing on objects
        "BucketOnly": role(["arn:aws:s3:::repl-denied", "arn:aws:s3:::repl-dest-c"]),
        "DestA": bucket("repl-dest-a"),
        "DestB": bucket("repl-dest-b"),
        "DestC": bucket("repl-dest-c"),
        "Source": bucket(
            "repl-source",
            {
                "Role": {"Fn::GetAtt": ["Replicator", "Arn"]},
                "Rules": [
                    {
                        "Id": "docs",
                        "Priority": 2,
                        "Status": "Enabled",
                        "Filter": {"Prefix": "docs/"},
                        "DeleteMarkerReplication": {"Status": "Enabled"},
                        "Destination": {"Bucket": "arn:aws:s3:::repl-dest-a"},
                    },
                    {
                        "Id": "logs",
                        "Priority": 1,
                        "Status": "Enabled",
                        "Filter": {"Prefix": "logs/"},
                        "DeleteMarkerReplication": {"Status": "Disabled"},
                        "Destination": {
                            "Bucket": "arn:aws:s3:::repl-dest-b",
                            "StorageClass": "STANDARD_IA",
                        },
                    },
                    {
                        "Id": "paused",
                        "Priority": 3,
                        "Status": "Disabled",
                        "Filter": {"Prefix": "paused/"},
                        "DeleteMarkerReplication": {"Status": "Disabled"},
                        "Destination": {"Bucket": "arn:aws:s3:::repl-dest-b"},
                    },
                ],
            },
        ),
        "Denied": bucket(
            "repl-denied",
            {
                "Role": {"Fn::GetAtt": ["BucketOnly", "Arn"]},
                "Rules": [
                    {
                        "Status": "Enabled",
                        "Prefix": "",
                        "Destination": {"Bucket": "arn:aws:s3:::repl-dest-c"},
                    }
                ],
            },
        ),
    },
    "Outputs": {"Replicator": {"Value": {"Fn::GetAtt": ["Replicator", "Arn"]}}},
}


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    path = tmp_path_factory.mktemp("s3-replication") / "template.json"
    path.write_text(json.dumps(TEMPLATE))
    with LocalCloud(path, stack_name="s3-replication") as running:
        yield running


def head(bucket_name: str, key: str) -> dict[str, Any] | None:
    try:
        return dict(boto3.client("s3").head_object(Bucket=bucket_name, Key=key))
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "404", exc.response
        return None


def test_a_permitted_role_replicates_each_new_version(cloud: LocalCloud) -> None:
    s3 = boto3.client("s3")
    put = s3.put_object(
        Bucket="repl-source",
        Key="docs/report.txt",
        Body=b"quarterly figures",
        ContentType="text/plain",
        Metadata={"author": "ana"},
        Tagging="team=finance",
    )
    cloud.settle()
    source = s3.get_object(Bucket="repl-source", Key="docs/report.txt")
    assert source["ReplicationStatus"] == "COMPLETED"
    replica = s3.get_object(Bucket="repl-dest-a", Key="docs/report.txt")
    assert replica["ReplicationStatus"] == "REPLICA"
    assert replica["Body"].read() == b"quarterly figures"
    assert replica["VersionId"] == put["VersionId"]
    assert replica["ContentType"] == "text/plain"
    assert replica["Metadata"] == {"author": "ana"}
    tags = s3.get_object_tagging(Bucket="repl-dest-a", Key="docs/report.txt")["TagSet"]
    assert tags == [{"Key": "team", "Value": "finance"}]
    # a second version is replicated too: the replica's current version is the new one
    s3.put_object(Bucket="repl-source", Key="docs/report.txt", Body=b"revised")
    cloud.settle()
    assert s3.get_object(Bucket="repl-dest-a", Key="docs/report.txt")["Body"].read() == b"revised"
    versions = s3.list_object_versions(Bucket="repl-dest-a", Prefix="docs/report.txt")
    assert len(versions["Versions"]) == 2


def test_a_role_without_the_object_permissions_fails_the_replication(cloud: LocalCloud) -> None:
    boto3.client("s3").put_object(Bucket="repl-denied", Key="a.txt", Body=b"x")
    cloud.settle()
    assert (head("repl-denied", "a.txt") or {})["ReplicationStatus"] == "FAILED"
    assert head("repl-dest-c", "a.txt") is None


def test_the_rules_prefix_chooses_what_is_replicated_and_where(cloud: LocalCloud) -> None:
    s3 = boto3.client("s3")
    for key in ("logs/1.log", "other/1.txt", "paused/1.txt"):
        s3.put_object(Bucket="repl-source", Key=key, Body=key.encode())
    cloud.settle()
    assert (head("repl-source", "logs/1.log") or {})["ReplicationStatus"] == "COMPLETED"
    replica = head("repl-dest-b", "logs/1.log") or {}
    assert replica["ReplicationStatus"] == "REPLICA"
    assert replica["StorageClass"] == "STANDARD_IA"  # the rule's Destination StorageClass
    assert head("repl-dest-a", "logs/1.log") is None
    for key in ("other/1.txt", "paused/1.txt"):  # no rule, a disabled rule: not eligible
        assert "ReplicationStatus" not in (head("repl-source", key) or {})
        assert head("repl-dest-a", key) is None
        assert head("repl-dest-b", key) is None


def test_delete_markers_are_replicated_only_where_the_rule_says(cloud: LocalCloud) -> None:
    s3 = boto3.client("s3")
    s3.put_object(Bucket="repl-source", Key="docs/gone.txt", Body=b"1")
    s3.put_object(Bucket="repl-source", Key="logs/kept.log", Body=b"2")
    cloud.settle()
    marker = s3.delete_object(Bucket="repl-source", Key="docs/gone.txt")["VersionId"]
    s3.delete_object(Bucket="repl-source", Key="logs/kept.log")
    cloud.settle()
    assert head("repl-dest-a", "docs/gone.txt") is None  # DeleteMarkerReplication Enabled
    markers = s3.list_object_versions(Bucket="repl-dest-a", Prefix="docs/gone.txt")
    assert [m["VersionId"] for m in markers["DeleteMarkers"]] == [marker]
    assert s3.get_object(Bucket="repl-dest-b", Key="logs/kept.log")["Body"].read() == b"2"


def test_objects_written_before_the_configuration_are_not_replicated(cloud: LocalCloud) -> None:
    s3 = boto3.client("s3")
    for name in ("repl-late-source", "repl-late-dest"):
        s3.create_bucket(Bucket=name)
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket="repl-late-source", Key="old.txt", Body=b"old")
    s3.put_bucket_replication(
        Bucket="repl-late-source",
        ReplicationConfiguration={
            "Role": cloud.outputs["Replicator"],
            "Rules": [
                {
                    "ID": "all",
                    "Priority": 1,
                    "Status": "Enabled",
                    "Filter": {"Prefix": ""},
                    "DeleteMarkerReplication": {"Status": "Disabled"},
                    "Destination": {"Bucket": "arn:aws:s3:::repl-late-dest"},
                }
            ],
        },
    )
    s3.put_object(Bucket="repl-late-source", Key="new.txt", Body=b"new")
    cloud.settle()
    assert "ReplicationStatus" not in (head("repl-late-source", "old.txt") or {})
    assert head("repl-late-dest", "old.txt") is None
    assert (head("repl-late-dest", "new.txt") or {})["ReplicationStatus"] == "REPLICA"
