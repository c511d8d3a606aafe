"""What the local cloud does not run of S3 replication is refused by name at deploy
(stack/properties.py), and a template whose resources name each other in a cycle is refused
with CloudFormation's message (stack/dependencies.py), as s3-s3-replication-sam is on AWS."""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_s3_replication import bucket, role

from localcloud.cloud import LocalCloud
from localcloud.stack.base import StackDeployError

pytestmark = [pytest.mark.e2e]


def deploy_refusal(tmp_path: Any, template: dict[str, Any]) -> str:
    path = tmp_path / "template.json"
    path.write_text(json.dumps(template))
    with pytest.raises(StackDeployError) as refused, LocalCloud(path, stack_name="refused"):
        pass
    return str(refused.value)


def test_what_is_not_run_is_refused_by_name_at_deploy(tmp_path: Any) -> None:
    timed = {
        "Status": "Enabled",
        "Prefix": "",
        "Destination": {
            "Bucket": "arn:aws:s3:::repl-dest-a",
            "ReplicationTime": {"Status": "Enabled", "Time": {"Minutes": 15}},
        },
    }
    resources = {
        "Replicator": role("arn:aws:s3:::*/*"),
        "DestA": bucket("repl-dest-a"),
        "Source": bucket(
            "repl-source", {"Role": {"Fn::GetAtt": ["Replicator", "Arn"]}, "Rules": [timed]}
        ),
    }
    resources["Source"]["DependsOn"] = ["DestA"]
    assert "ReplicationTime" in deploy_refusal(tmp_path, {"Resources": resources})


def test_a_role_and_a_bucket_naming_each_other_are_refused_as_cloudformation_does(
    tmp_path: Any,
) -> None:
    """The shape of s3-s3-replication-sam: the role's policy Subs the source bucket's name,
    the bucket's configuration names the role's ARN."""
    cyclic = role({"Fn::Sub": "arn:aws:s3:::${Source}/*"})
    resources = {
        "Replicator": cyclic,
        "DestA": bucket("repl-dest-a"),
        "Source": bucket(
            "repl-source",
            {
                "Role": {"Fn::GetAtt": ["Replicator", "Arn"]},
                "Rules": [
                    {
                        "Status": "Enabled",
                        "Prefix": "",
                        "Destination": {"Bucket": {"Fn::GetAtt": ["DestA", "Arn"]}},
                    }
                ],
            },
        ),
    }
    resources["Source"]["DependsOn"] = []
    message = deploy_refusal(tmp_path, {"Resources": resources})
    assert message == "Circular dependency between resources: [Replicator, Source]"
