"""A role's ManagedPolicyArns naming the template's own AWS::IAM::ManagedPolicy (``!Ref`` or
``!GetAtt X.PolicyArn``) grants what that policy allows, as on AWS: moto's CloudFormation
drops ManagedPolicyArns, and the local cloud read only AWS managed policies from them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Box:
    Type: AWS::S3::Bucket
  ListBox:
    Type: AWS::IAM::ManagedPolicy
    Properties:
      PolicyDocument:
        Version: "2012-10-17"
        Statement:
          - {Effect: Allow, Action: s3:ListBucket, Resource: !GetAtt Box.Arn}
  ByRef:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument: &trust
        Version: "2012-10-17"
        Statement:
          - {Effect: Allow, Principal: {Service: lambda.amazonaws.com}, Action: sts:AssumeRole}
      ManagedPolicyArns: [!Ref ListBox]
  ByAttribute:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument: *trust
      ManagedPolicyArns: [!GetAtt ListBox.PolicyArn]
  Without:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument: *trust
  Lister:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.13
      Handler: index.handler
      InlineCode: &lists |
        import os, boto3
        def handler(event, context):
            try:
                boto3.client("s3").list_objects_v2(Bucket=os.environ["BUCKET"])
                return "allowed"
            except Exception as exc:
                return type(exc).__name__
      Role: !GetAtt ByRef.Arn
      Environment: {Variables: {BUCKET: !Ref Box}}
  AttributeLister:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.13
      Handler: index.handler
      InlineCode: *lists
      Role: !GetAtt ByAttribute.Arn
      Environment: {Variables: {BUCKET: !Ref Box}}
  Refused:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.13
      Handler: index.handler
      InlineCode: *lists
      Role: !GetAtt Without.Arn
      Environment: {Variables: {BUCKET: !Ref Box}}
"""


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    template: Path = tmp_path_factory.mktemp("managed") / "template.yaml"
    template.write_text(TEMPLATE)
    with LocalCloud(template, stack_name="managed") as running:
        yield running


@pytest.mark.parametrize(
    ("function", "outcome"),
    [("Lister", "allowed"), ("AttributeLister", "allowed"), ("Refused", "AccessDenied")],
)
def test_the_templates_own_managed_policy_grants_its_statements(
    cloud: LocalCloud, function: str, outcome: str
) -> None:
    reply = boto3.client("lambda").invoke(FunctionName=cloud.functions[function])
    assert json.loads(reply["Payload"].read()) == outcome
