"""A request is judged by its credentials, as STS and IAM judge it (features/role_sessions.py,
iam/credentials.py).

* credentials the cloud issues for a role session (``Authorizer.credentials.issue``, what a
  function's environment gets) or STS AssumeRole answers with are that session's: over the
  HTTP endpoint (and in the process) the session reads what its role allows, is refused the
  rest with ``AccessDenied`` naming ``arn:aws:sts::<account>:assumed-role/<role>/<session>``,
  and GetCallerIdentity answers that ARN;
* AssumeRole is judged by the role's trust policy: a principal it does not trust is refused;
* credentials the cloud did not issue act as before (the administrator).

The endpoint's clients here are made as another process's would be: without the in-process
authorization (features/iam.py ``before-call``), so only the HTTP front judges them.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud
from localcloud.features import iam as iam_feature

pytestmark = [pytest.mark.e2e]

ACCOUNT = "123456789012"
READER = f"arn:aws:iam::{ACCOUNT}:role/creds-reader"
LAMBDA_ONLY = f"arn:aws:iam::{ACCOUNT}:role/creds-lambda-only"
TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Resources:
  Allowed:
    Type: AWS::S3::Bucket
    Properties: {BucketName: creds-allowed}
  Other:
    Type: AWS::S3::Bucket
    Properties: {BucketName: creds-other}
  AllowedTlsOnly:
    Type: AWS::S3::BucketPolicy
    Properties:
      Bucket: !Ref Allowed
      PolicyDocument:
        Version: "2012-10-17"
        Statement:
          - Effect: Deny
            Principal: "*"
            Action: s3:*
            Resource: [!GetAtt Allowed.Arn, !Sub "${Allowed.Arn}/*"]
            Condition: {Bool: {aws:SecureTransport: "false"}}
  Reader:
    Type: AWS::IAM::Role
    Properties:
      RoleName: creds-reader
      AssumeRolePolicyDocument:
        Version: "2012-10-17"
        Statement:
          - Effect: Allow
            Principal: {Service: lambda.amazonaws.com}
            Action: sts:AssumeRole
          - Effect: Allow
            Principal: {AWS: !Sub "arn:aws:iam::${AWS::AccountId}:root"}
            Action: sts:AssumeRole
      Policies:
        - PolicyName: read-one-bucket
          PolicyDocument:
            Version: "2012-10-17"
            Statement:
              - Effect: Allow
                Action: s3:GetObject
                Resource: arn:aws:s3:::creds-allowed/*
              - Effect: Allow  # so that only the trust policy can refuse its AssumeRole
                Action: sts:AssumeRole
                Resource: "*"
  LambdaOnly:
    Type: AWS::IAM::Role
    Properties:
      RoleName: creds-lambda-only
      AssumeRolePolicyDocument:
        Version: "2012-10-17"
        Statement:
          - Effect: Allow
            Principal: {Service: lambda.amazonaws.com}
            Action: sts:AssumeRole
"""


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    template = tmp_path_factory.mktemp("credentials") / "template.yaml"
    template.write_text(TEMPLATE)
    with LocalCloud(template, stack_name="iam-credentials") as running:
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.put_object(Bucket="creds-allowed", Key="a.txt", Body=b"allowed")
        s3.put_object(Bucket="creds-other", Key="b.txt", Body=b"other")
        running.serve(port=0)
        yield running


@pytest.fixture(scope="module")
def endpoint(cloud: LocalCloud) -> str:
    return str(cloud.describe()["endpoint"])


def client(
    service: str,
    credentials: dict[str, Any] | None = None,
    *,
    endpoint: str | None = None,
    config: Config | None = None,
) -> Any:
    """A boto3 client, signing with ``credentials`` (else the environment's)."""
    return boto3.client(  # type: ignore[call-overload,misc]
        service,
        region_name="us-east-1",
        endpoint_url=endpoint,
        config=config,
        aws_access_key_id=credentials["AccessKeyId"] if credentials else None,
        aws_secret_access_key=credentials["SecretAccessKey"] if credentials else None,
        aws_session_token=credentials["SessionToken"] if credentials else None,
    )


def remote(service: str, endpoint: str, credentials: dict[str, Any] | None = None) -> Any:
    """A client of the endpoint, as another process has it: only the server judges it."""
    made = client(service, credentials, endpoint=endpoint)
    made.meta.events.unregister("before-call", iam_feature._before_call)
    return made


def refusal(error: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    return error.value.response["Error"]["Code"], error.value.response["Error"]["Message"]


def test_an_issued_session_is_judged_as_its_role_over_http(
    cloud: LocalCloud, endpoint: str
) -> None:
    credentials = cloud.runtime.authorizer.credentials.issue(READER, "creds-fn")
    assert credentials["AccessKeyId"].startswith("ASIA")
    assert len(credentials["AccessKeyId"]) == 20
    assert credentials["AccessKeyId"][4:].isalnum() and credentials["AccessKeyId"].isupper()
    s3 = remote("s3", endpoint, credentials)

    assert s3.get_object(Bucket="creds-allowed", Key="a.txt")["Body"].read() == b"allowed"
    with pytest.raises(ClientError) as refused:
        s3.get_object(Bucket="creds-other", Key="b.txt")
    session = f"arn:aws:sts::{ACCOUNT}:assumed-role/creds-reader/creds-fn"
    assert refusal(refused) == (
        "AccessDenied",
        f"User: {session} is not authorized to perform: s3:GetObject on resource: "
        '"arn:aws:s3:::creds-other/b.txt" because no identity-based policy allows the '
        "s3:GetObject action",
    )
    with pytest.raises(ClientError) as head:
        s3.head_object(Bucket="creds-other", Key="b.txt")
    assert head.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403

    identity = remote("sts", endpoint, credentials).get_caller_identity()
    assert identity["Arn"] == session
    assert identity["Account"] == ACCOUNT
    assert identity["UserId"].startswith("AROA") and identity["UserId"].endswith(":creds-fn")


def test_assume_role_answers_credentials_of_the_session(cloud: LocalCloud, endpoint: str) -> None:
    answer = remote("sts", endpoint).assume_role(RoleArn=READER, RoleSessionName="op")
    credentials = answer["Credentials"]
    session = f"arn:aws:sts::{ACCOUNT}:assumed-role/creds-reader/op"
    assert answer["AssumedRoleUser"]["Arn"] == session
    assert credentials["AccessKeyId"].startswith("ASIA") and len(credentials["AccessKeyId"]) == 20

    s3 = remote("s3", endpoint, credentials)
    assert s3.get_object(Bucket="creds-allowed", Key="a.txt")["Body"].read() == b"allowed"
    with pytest.raises(ClientError) as refused:
        s3.get_object(Bucket="creds-other", Key="b.txt")
    code, message = refusal(refused)
    assert code == "AccessDenied"
    assert message.startswith(f"User: {session} is not authorized to perform: s3:GetObject")
    assert remote("sts", endpoint, credentials).get_caller_identity()["Arn"] == session


@pytest.mark.parametrize("signature", ["s3v4", None])  # SigV4, and boto3's SigV2 default
def test_a_presigned_url_is_judged_by_its_credentials(
    cloud: LocalCloud, endpoint: str, signature: str | None
) -> None:
    credentials = cloud.runtime.authorizer.credentials.issue(READER, "presigned")
    config = Config(signature_version=signature) if signature else None
    s3 = client("s3", credentials, endpoint=endpoint, config=config)

    def fetch(bucket: str, key: str) -> int:
        url = urlsplit(
            s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key})
        )
        connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
        try:
            connection.request("GET", f"{url.path}?{url.query}")
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()

    presigned = s3.generate_presigned_url("get_object", Params={"Bucket": "a", "Key": "b"})
    assert ("X-Amz-Credential" if signature else "AWSAccessKeyId") in presigned
    assert fetch("creds-allowed", "a.txt") == 200
    assert fetch("creds-other", "b.txt") == 403


def test_unknown_credentials_act_as_before(endpoint: str) -> None:
    s3 = remote(
        "s3",
        endpoint,
        {"AccessKeyId": "ASIAUNKNOWNKEY000000", "SecretAccessKey": "x", "SessionToken": "y"},
    )
    assert s3.get_object(Bucket="creds-other", Key="b.txt")["Body"].read() == b"other"
    arn = remote("sts", endpoint).get_caller_identity()["Arn"]
    assert ":assumed-role/" not in arn


def test_an_untrusted_principal_cannot_assume_the_role(cloud: LocalCloud, endpoint: str) -> None:
    credentials = cloud.runtime.authorizer.credentials.issue(READER, "creds-fn")
    with pytest.raises(ClientError) as refused:
        remote("sts", endpoint, credentials).assume_role(
            RoleArn=LAMBDA_ONLY, RoleSessionName="escalate"
        )
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert refusal(refused) == (
        "AccessDenied",
        f"User: arn:aws:sts::{ACCOUNT}:assumed-role/creds-reader/creds-fn is not authorized "
        f"to perform: sts:AssumeRole on resource: {LAMBDA_ONLY}",
    )
    # in the process too, the administrator included: the trust policy names only Lambda
    with pytest.raises(ClientError) as admin:
        client("sts").assume_role(RoleArn=LAMBDA_ONLY, RoleSessionName="admin")
    code, message = refusal(admin)
    assert code == "AccessDenied"
    assert message.endswith(f"sts:AssumeRole on resource: {LAMBDA_ONLY}")


def test_in_process_clients_signed_with_a_session_act_as_it(cloud: LocalCloud) -> None:
    """The mock (no HTTP): a client signing with a session's credentials is that session."""
    credentials = cloud.runtime.authorizer.credentials.issue(READER, "in-process")
    s3 = client("s3", credentials)
    assert s3.get_object(Bucket="creds-allowed", Key="a.txt")["Body"].read() == b"allowed"
    with pytest.raises(ClientError) as refused:
        s3.get_object(Bucket="creds-other", Key="b.txt")
    session = f"arn:aws:sts::{ACCOUNT}:assumed-role/creds-reader/in-process"
    assert refusal(refused)[1].startswith(f"User: {session} is not authorized")
    sts = client("sts", credentials)
    assert sts.get_caller_identity()["Arn"] == session


def test_the_local_endpoint_stands_in_for_https(cloud: LocalCloud, endpoint: str) -> None:
    """A TLS-only bucket (Deny when aws:SecureTransport is false) answers the clients of the
    local cloud's own http:// endpoint, in this process or another, a role session's too, as
    AWS answers its https clients; a plain-http AWS endpoint (``use_ssl=False``) is refused."""
    session = cloud.runtime.authorizer.credentials.issue(READER, "creds-tls")
    for s3 in (client("s3", endpoint=endpoint), remote("s3", endpoint, session)):
        assert s3.get_object(Bucket="creds-allowed", Key="a.txt")["Body"].read() == b"allowed"
    plain = boto3.client("s3", region_name="us-east-1", use_ssl=False)
    with pytest.raises(ClientError) as refused:
        plain.get_object(Bucket="creds-allowed", Key="a.txt")
    assert "explicit deny in a resource-based policy" in refusal(refused)[1]
