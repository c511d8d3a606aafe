"""``LocalCloud(environments="process")``: each function runs in environment processes of its
own (features/lambda_processes.py): its own variables, its role's credentials judged over HTTP,
its configuration as it is now."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from localcloud.cloud import LocalCloud
from localcloud.environments import default_runtime_python

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not default_runtime_python().exists(), reason="no .venv-lambda (make bootstrap)"
    ),
]

CODE = """\
import os
import boto3
def handler(event, context):
    try:
        found = boto3.client("s3").list_objects_v2(Bucket=os.environ["BUCKET"])
        listed = len(found.get("Contents", []))
    except Exception as exc:
        listed = type(exc).__name__ + ": " + str(exc)
    return {"queue": os.environ["QUEUE_URL"], "listed": listed,
            "function": os.environ["AWS_LAMBDA_FUNCTION_NAME"]}
"""
TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Runtime: python3.13
    Handler: index.handler
    CodeUri: src/
Resources:
  Box:
    Type: AWS::S3::Bucket
  Reader:
    Type: AWS::Serverless::Function
    Properties:
      Environment: {Variables: {QUEUE_URL: first, BUCKET: !Ref Box}}
      Policies: [{S3ReadPolicy: {BucketName: !Ref Box}}]
  Other:
    Type: AWS::Serverless::Function
    Properties:
      Environment: {Variables: {QUEUE_URL: second, BUCKET: !Ref Box}}
"""


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    template: Path = tmp_path_factory.mktemp("processes") / "template.yaml"
    template.write_text(TEMPLATE)
    (template.parent / "src").mkdir()
    (template.parent / "src" / "index.py").write_text(CODE)
    with LocalCloud(template, stack_name="processes", environments="process") as running:
        yield running


def call(cloud: LocalCloud, function: str) -> dict[str, object]:
    reply = boto3.client("lambda").invoke(FunctionName=cloud.functions[function])
    assert "FunctionError" not in reply, reply["Payload"].read()
    return dict(json.loads(reply["Payload"].read()))


def test_each_function_has_its_own_variables_and_credentials(cloud: LocalCloud) -> None:
    reader, other = call(cloud, "Reader"), call(cloud, "Other")
    assert (reader["queue"], other["queue"]) == ("first", "second")
    assert reader["listed"] == 0  # its role may list the bucket
    assert "AccessDenied" in str(other["listed"])  # judged by its own role's credentials
    assert "assumed-role" in str(other["listed"])


def test_a_configuration_update_reaches_the_next_environment(cloud: LocalCloud) -> None:
    name = cloud.functions["Other"]
    boto3.client("lambda").update_function_configuration(
        FunctionName=name, Environment={"Variables": {"QUEUE_URL": "third", "BUCKET": "x"}}
    )
    assert call(cloud, "Other")["queue"] == "third"
