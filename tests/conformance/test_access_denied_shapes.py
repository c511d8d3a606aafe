"""The local cloud refuses a call the way AWS does: published access-denied errors, compared.

Every published message of tests/conformance/samples/access-denied-*.json that the local
cloud models (README.md, "Access-denied shapes") is rebuilt with ``enforcement.denial_message``
from a caller (``enforcement.role``/``enforcement.service``), the need ``actions.required`` gives
for the same operation, and a ``Decision`` with the reason the message states. The two must
have the same shape once whitespace is collapsed and every ARN (``arn:...``) and service
principal (``*.amazonaws.com``) is replaced by a placeholder: the same words, the same action
spelling (``SNS:Publish``, ``sqs:sendmessage``), the same quoting (S3 quotes the resource), the
same policy-type clause.

Published messages deliberately left out (the local cloud does not model what refused them):

* IAM UG examples for service control, resource control, VPC endpoint, permissions boundary,
  session and role trust policies, and the "transitively through" example; the later
  "...policy: <policy-arn>" / authorization-ID formats (explicit denies of same-account
  identity policies, "gradually rolling out": not produced here).
* S3 UG examples for SSE-C blocking, RCP, SCP, VPC endpoint, boundaries, sessions and Block
  Public Access (the RestrictPublicBuckets one has the resource-based wording, but its cause is
  not modelled).
* Observed: S3 PutObject refused by KMS (the local cloud does not check SSE-KMS on S3 writes);
  the SQS KMS queue case (not checked either); cross-account SQS (aspire#3333); pre-2021
  messages without a policy-type clause (dynamic-dynamodb#187, FormidableLabs#31,
  Pipe-1Dev#13 and the "older cause wording" task failure), which current AWS no longer sends;
  legacy SQS "Access to the resource ... is denied."; KMS "The ciphertext refers to ..."; the
  CloudWatch alarm-history texts (not a service error).

The error code and HTTP status each service answers with are checked in
test_access_denied_codes.py.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from localcloud.iam import enforcement
from localcloud.iam.actions import Need, required
from localcloud.iam.enforcement import Caller, denial_message
from localcloud.iam.policy import Decision
from tests.conformance.conftest import (
    ACCOUNT,
    MACHINE,
    QUEUE_URL,
    REGION,
    S3_UG,
    TOPIC,
    observed,
    sample_json,
    xml_text,
)

pytestmark = pytest.mark.conformance

WORKER = enforcement.role(f"arn:aws:iam::{ACCOUNT}:role/Worker", "worker-session")

IAM_UG = sample_json("access-denied-iam-ug-message-examples.json")


def ug_example(document: dict[str, Any], *words: str) -> str:
    """The one example whose section heading (and kind) contains all ``words``."""
    found = [
        e["published_text"]
        for e in document["examples"]
        if all(w in f"{e['section']} / {e.get('kind', '')}" for w in words)
    ]
    assert len(found) == 1, f"{words}: {len(found)} examples"
    return str(found[0])


# ------------------------------------------------------------------ normalising
def message_part(published: str) -> str:
    """The service's message inside what a tool printed: from ``User:`` up to an SDK suffix."""
    text = published[published.index("User: ") :]
    for suffix in (" (Service:", "\n\tstatus code:"):
        text = text.split(suffix, 1)[0]
    return text


def shape(message: str) -> str:
    text = " ".join(message.split())
    text = re.sub(r'arn:[^\s"]+', "ARN", text)
    return re.sub(r"\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.amazonaws\.com\b", "SERVICE", text)


def test_shape_keeps_words_quotes_and_action_spelling() -> None:
    a = (
        "User: arn:aws:sts::1:assumed-role/R/s is not authorized to perform: s3:GetObject"
        ' on resource: "arn:aws:s3:::b/k"'
    )
    assert shape(a) == 'User: ARN is not authorized to perform: s3:GetObject on resource: "ARN"'
    assert shape(a) != shape(a.replace('"', ""))
    assert shape(a) != shape(a.replace("s3:GetObject", "S3:GetObject"))
    assert shape("User:  sns.amazonaws.com\n is") == "User: SERVICE is"


# ------------------------------------------------------------------ the messages
def need(service: str, operation: str, **params: Any) -> Need:
    found = required(service, operation, params, REGION, ACCOUNT)
    assert len(found) == 1, found
    return found[0]


_KEY = "1234abcd-12ab-34cd-56ef-1234567890ab"


def _s3_listbucket_body() -> str:
    return xml_text("access-denied-s3-listbucket-error-body.xml", "Message")


def _dynamodb_query_body() -> str:
    return str(sample_json("access-denied-dynamodb-query-error-body.json")["Message"])


def _task_cause(name: str) -> str:
    document = sample_json(name)
    return str(document.get("cause") or document["Cause"])


# (id, published message, caller, need, reason, how to compare)
CASES: list[tuple[str, str, Caller, Need, str, str]] = [
    # --- S3: resource ARN in double quotes
    (
        "s3 GetObject, identity, implicit (terraform-aws-bedrock#41)",
        observed("terraform-aws-bedrock/issues/41")["published_text"],
        WORKER,
        need("s3", "GetObject", Bucket="ingest-bucket", Key="incoming/orders/a.csv"),
        "no-identity-allow",
        "equal",
    ),
    (
        "s3 PutObject, bucket policy, explicit (usdr-gost#4044)",
        observed("usdr-gost/pull/4044")["published_text"],
        WORKER,
        need("s3", "PutObject", Bucket="ingest-bucket", Key="processed/a.json"),
        "explicit-deny-resource",
        "equal",
    ),
    (
        "s3 ListObjectsV2 -> s3:ListBucket, bucket policy, explicit (noobaa#10060)",
        observed("noobaa-core/issues/10060")["published_text"],
        WORKER,
        need("s3", "ListObjectsV2", Bucket="ingest-bucket", Prefix="incoming/"),
        "explicit-deny-resource",
        "equal",
    ),
    (
        "s3 ListObjectVersions -> s3:ListBucketVersions, identity, implicit (CTF write-up)",
        observed("7747057151")["published_text"],
        WORKER,
        need("s3", "ListObjectVersions", Bucket="ingest-bucket", Prefix="incoming/"),
        "no-identity-allow",
        "equal",
    ),
    (
        "s3 ListObjects -> s3:ListBucket, identity, implicit (XML error body)",
        _s3_listbucket_body(),
        WORKER,
        need("s3", "ListObjects", Bucket="ingest-bucket"),
        "no-identity-allow",
        "equal",
    ),
    # --- DynamoDB
    (
        "dynamodb PutItem, identity, implicit (chariot-ui#208)",
        observed("chariot-ui/issues/208")["published_text"],
        WORKER,
        need("dynamodb", "PutItem", TableName="ObjectState", Item={}),
        "no-identity-allow",
        "equal",
    ),
    (
        "dynamodb PutItem, identity, implicit (innovator-island#97)",
        observed("aws-serverless-workshop-innovator-island/issues/97")["published_text"],
        WORKER,
        need("dynamodb", "PutItem", TableName="ObjectState", Item={}),
        "no-identity-allow",
        "equal",
    ),
    (
        "dynamodb Query on an index (2018 body, before the policy-type clause existed)",
        _dynamodb_query_body(),
        WORKER,
        need("dynamodb", "Query", TableName="ObjectState", IndexName="OpenStateIndex"),
        "no-identity-allow",
        "prefix",
    ),
    # --- SNS: SNS:Publish
    (
        "sns Publish, identity, implicit (AFT#151)",
        observed("control_tower_account_factory/issues/151")["published_text"],
        WORKER,
        need("sns", "Publish", TopicArn=TOPIC, Message="x"),
        "no-identity-allow",
        "equal",
    ),
    (
        "sns GetTopicAttributes, identity, implicit (cloud-platform-environments#21094)",
        observed("cloud-platform-environments/pull/21094")["published_text"],
        WORKER,
        need("sns", "GetTopicAttributes", TopicArn=TOPIC),
        "no-identity-allow",
        "equal",
    ),
    # --- SQS: lower-case action
    (
        "sqs SendMessageBatch -> sqs:sendmessage, identity, implicit (SAM#3633)",
        observed("serverless-application-model/issues/3633")["published_text"],
        WORKER,
        need("sqs", "SendMessageBatch", QueueUrl=QUEUE_URL, Entries=[]),
        "no-identity-allow",
        "equal",
    ),
    # --- KMS: a key policy that does not allow is "no resource-based policy"
    (
        "kms GenerateDataKey, key policy, implicit (modernisation-platform#1296)",
        observed("modernisation-platform/pull/1296")["published_text"],
        WORKER,
        need("kms", "GenerateDataKey", KeyId=_KEY),
        "key-policy",
        "equal",
    ),
    # --- Step Functions
    (
        "states StartExecution, identity, implicit (seed 004, rule role)",
        observed("004_12d0f09b55589f6e")["published_text"],
        WORKER,
        need("states", "StartExecution", stateMachineArn=MACHINE),
        "no-identity-allow",
        "equal",
    ),
    # --- Lambda
    (
        "lambda Invoke by sns.amazonaws.com, function policy, implicit (cut off in the issue)",
        observed("aws-automated-incident-response-and-forensics/issues/13")["published_text"],
        enforcement.service("sns.amazonaws.com", TOPIC, ACCOUNT),
        need("lambda", "Invoke", FunctionName="ingest-Resolve"),
        "no-resource-allow",
        "prefix",
    ),
    (
        "lambda Invoke from a Step Functions task, identity, implicit (2022 cause)",
        _task_cause("access-denied-stepfunctions-lambda-task-failed-2022.json"),
        WORKER,
        need("lambda", "Invoke", FunctionName="ingest-Resolve"),
        "no-identity-allow",
        "equal",
    ),
    (
        "lambda Invoke of $LATEST from a Step Functions task, identity, implicit (2024 cause)",
        _task_cause("access-denied-stepfunctions-lambda-task-failed-2024.json"),
        WORKER,
        need("lambda", "Invoke", FunctionName="ingest-Resolve", Qualifier="$LATEST"),
        "no-identity-allow",
        "equal",
    ),
    # --- IAM UG examples of the policy types modelled (the wording is the same for every
    # service; ListRepositories/GetSecretValue have no resource, so no "on resource")
    (
        "IAM UG identity-based, implicit",
        ug_example(IAM_UG, "to identity-based policies", "/ implicit"),
        WORKER,
        need("codecommit", "ListRepositories"),
        "no-identity-allow",
        "equal",
    ),
    (
        "IAM UG identity-based, explicit",
        ug_example(IAM_UG, "to identity-based policies", "/ explicit"),
        WORKER,
        # required() names "*" for an unmapped service: the example names a resource
        Need(
            "codedeploy:ListDeployments", f"arn:aws:codedeploy:{REGION}:{ACCOUNT}:deploymentgroup:*"
        ),
        "explicit-deny-identity",
        "equal",
    ),
    # (the local cloud gives "no-resource-allow" to service principals; the wording is the same)
    (
        "IAM UG resource-based, implicit",
        ug_example(IAM_UG, "to resource-based policies", "/ implicit"),
        WORKER,
        need("secretsmanager", "GetSecretValue", SecretId="s"),
        "no-resource-allow",
        "equal",
    ),
    (
        "IAM UG resource-based, explicit",
        ug_example(IAM_UG, "to resource-based policies", "/ explicit"),
        WORKER,
        Need(
            "secretsmanager:GetSecretValue", f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:*"
        ),
        "explicit-deny-resource",
        "equal",
    ),
    # --- S3 UG examples. Its implicit examples name no resource (observed 2024 messages do,
    # see above): they are compared with a need on "*", which denial_message renders the same way.
    (
        "S3 UG identity-based, implicit",
        ug_example(S3_UG, "to identity-based policies", "implicit denial"),
        WORKER,
        Need("s3:GetObject", "*"),
        "no-identity-allow",
        "equal",
    ),
    (
        "S3 UG identity-based, explicit",
        ug_example(S3_UG, "to identity-based policies", "explicit denial"),
        WORKER,
        need("s3", "GetObject", Bucket="amzn-s3-demo-bucket1", Key="object-name"),
        "explicit-deny-identity",
        "equal",
    ),
    (
        "S3 UG resource-based, implicit",
        ug_example(S3_UG, "to resource-based policies", "implicit denial"),
        WORKER,
        Need("s3:GetObject", "*"),
        "no-resource-allow",
        "equal",
    ),
    (
        "S3 UG resource-based, explicit",
        ug_example(S3_UG, "to resource-based policies", "explicit denial"),
        WORKER,
        need("s3", "GetObject", Bucket="amzn-s3-demo-bucket1", Key="object-name"),
        "explicit-deny-resource",
        "equal",
    ),
]


@pytest.mark.parametrize(
    ("published", "caller", "wanted", "reason", "compare"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_denial_message_has_the_published_shape(
    published: str, caller: Caller, wanted: Need, reason: str, compare: str
) -> None:
    ours = shape(denial_message(caller, wanted, Decision(False, reason)))
    theirs = shape(message_part(published)).rstrip()
    if compare == "equal":
        assert ours == theirs
    else:  # the published text stops early (cut off, or older wording without the clause)
        assert ours.startswith(theirs), (ours, theirs)
        assert len(theirs) > len("User: ARN is not authorized to perform: ")


def test_iam_ug_phrase_templates_match_every_reason() -> None:
    # "explicit": "with an explicit deny in a type policy";
    # "implicit": "because no type policy allows the action action"
    phrases = IAM_UG["phrases"]
    explicit = phrases["explicit"].replace("in a type", "in an? (identity-based|resource-based)")
    implicit = phrases["implicit"].replace("type", "(identity-based|resource-based)", 1)
    implicit = implicit.replace("the action action", r"the dynamodb:Query action")
    wanted = need("dynamodb", "Query", TableName="ObjectState")
    for reason, phrase in [
        ("explicit-deny-identity", explicit),
        ("explicit-deny-resource", explicit),
        ("no-identity-allow", implicit),
        ("no-resource-allow", implicit),
        ("key-policy", implicit),
    ]:
        message = denial_message(WORKER, wanted, Decision(False, reason))
        assert re.search(f" {phrase}$", message), (reason, message)
