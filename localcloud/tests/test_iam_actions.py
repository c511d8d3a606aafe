"""What each SDK call of the pipeline asks IAM for (iam/actions.py ``required``).

Checked against AWS's own tables, cited per section:

* [SAR-S3] Service Authorization Reference, Amazon S3,
  https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html, and
  the "Permissions" paragraph of each S3 API page (CopyObject, UploadPartCopy, HeadObject,
  ListObjectVersions, DeleteObjects) in https://docs.aws.amazon.com/AmazonS3/latest/API/.
* [SAR-DDB] Service Authorization Reference, Amazon DynamoDB, "API operations" table,
  https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazondynamodb.html
  ("BatchGetItem -> dynamodb:BatchGetItem", "BatchWriteItem -> dynamodb:BatchWriteItem"), and
  "Using IAM with DynamoDB transactions",
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html
  ("Permissions for Put, Update, Delete, and Get actions are governed by the permissions used
  for the underlying PutItem, UpdateItem, DeleteItem, and GetItem operations. For the
  ConditionCheck action, you can use the dynamodb:ConditionCheckItem permission").
* [SQS] "Amazon SQS batch actions",
  https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-batch-api.html:
  "You cannot set permissions explicitly for SendMessageBatch, DeleteMessageBatch, or
  ChangeMessageVisibilityBatch"; the SendMessage etc. permissions cover them.
* [LAMBDA] "Resources and conditions for Lambda actions",
  https://docs.aws.amazon.com/lambda/latest/dg/lambda-api-permissions-ref.html (function,
  version and alias ARNs; ``lambda:InvokeFunction`` for ``Invoke``), the Invoke API's
  FunctionName ("Partial ARN - 123456789012:function:my-function. You can append a version
  number or alias to any of the formats"), and AddPermission's Qualifier ("If the qualifier is
  not specified, the permission is valid only when requests is made using unqualified function
  ARN"). Observed: the Step Functions sample
  tests/conformance/samples/access-denied-stepfunctions-lambda-task-failed-2024.json names
  ``function:<name>:$LATEST`` as the resource of a qualified invoke.
* [KMS] "Specifying KMS keys in IAM policy statements",
  https://docs.aws.amazon.com/kms/latest/developerguide/cmks-in-iam-policies.html: "To specify
  a KMS key in an IAM policy statement, you must use its key ARN. You cannot use a key id,
  alias name, or alias ARN"; alias ARNs are resources only of CreateAlias/UpdateAlias/DeleteAlias.
* Observed messages (tests/conformance/samples/access-denied-observed-messages.json):
  ListObjectVersions -> ``s3:ListBucketVersions`` on the bucket; SendMessageBatch ->
  ``sqs:sendmessage``; DynamoDB Query on an index -> ``table/T/index/I``
  (access-denied-dynamodb-query-error-body.json).
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.handlers import handle_copy_source_param

from localcloud.iam.actions import Need, arn_of_queue_url, required

pytestmark = pytest.mark.unit

ACCOUNT = "111122223333"
REGION = "us-east-1"
BUCKET = "ingest-bucket"
TABLE = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/ObjectState"
QUEUE_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/ingest-ReconcileQueue"
QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:ingest-ReconcileQueue"
FUNCTION = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:ingest-Resolve"
KEY_ID = "1234abcd-12ab-34cd-56ef-1234567890ab"


def needs(service: str, operation: str, **params: Any) -> list[tuple[str, str]]:
    return [(n.action, n.resource) for n in required(service, operation, params, REGION, ACCOUNT)]


def only(service: str, operation: str, **params: Any) -> Need:
    found = required(service, operation, params, REGION, ACCOUNT)
    assert len(found) == 1, found
    return found[0]


def obj(key: str, bucket: str = BUCKET) -> str:
    return f"arn:aws:s3:::{bucket}/{key}"


# ------------------------------------------------------------------ S3 objects
@pytest.mark.parametrize("operation", ["GetObject", "HeadObject"])
def test_reading_an_object_needs_get_object(operation: str) -> None:
    # [SAR-S3] HeadObject: "you must have the s3:GetObject permission"
    key = "incoming/orders/2024 06/a+b.csv"
    assert needs("s3", operation, Bucket=BUCKET, Key=key) == [("s3:GetObject", obj(key))]


@pytest.mark.parametrize("operation", ["GetObject", "HeadObject"])
def test_reading_a_version_needs_get_object_version(operation: str) -> None:
    key = "incoming/orders/a.csv"
    found = needs("s3", operation, Bucket=BUCKET, Key=key, VersionId="3HL4kqtJlcpXroDTDmJ")
    assert found == [("s3:GetObjectVersion", obj(key))]


def test_put_object_needs_put_object_on_the_object() -> None:
    key = "processed/orders/a.json"
    assert needs("s3", "PutObject", Bucket=BUCKET, Key=key, Body=b"{}") == [
        ("s3:PutObject", obj(key))
    ]


@pytest.mark.parametrize("operation", ["CopyObject", "UploadPartCopy"])
@pytest.mark.parametrize(
    ("source", "action"),
    [
        ("archive/incoming/a b+c.csv?versionId=v1.x_Y", "s3:GetObjectVersion"),
        ("archive/incoming/a b+c.csv", "s3:GetObject"),
        (
            {"Bucket": "archive", "Key": "incoming/a b+c.csv", "VersionId": "v1.x_Y"},
            "s3:GetObjectVersion",
        ),
        ({"Bucket": "archive", "Key": "incoming/a b+c.csv"}, "s3:GetObject"),
    ],
)
def test_copy_needs_read_on_the_source_and_put_on_the_target(
    operation: str, source: Any, action: str
) -> None:
    # [SAR-S3] CopyObject / UploadPartCopy: read access to the source object (s3:GetObject, or
    # s3:GetObjectVersion for a version) and s3:PutObject on the destination. The parameters are
    # what botocore hands on after URL-encoding CopySource (handle_copy_source_param).
    params: dict[str, Any] = {"Bucket": BUCKET, "Key": "incoming/copy.csv", "CopySource": source}
    handle_copy_source_param(params)
    if isinstance(source, str):
        assert "%20" in params["CopySource"]  # what the test relies on: encoded as sent
    found = required("s3", operation, params, REGION, ACCOUNT)
    assert sorted((n.action, n.resource) for n in found) == sorted(
        [("s3:PutObject", obj("incoming/copy.csv")), (action, obj("incoming/a b+c.csv", "archive"))]
    )


def test_copy_source_with_a_leading_slash_and_a_question_mark_in_the_key() -> None:
    params: dict[str, Any] = {
        "Bucket": BUCKET,
        "Key": "incoming/copy.csv",
        "CopySource": "/archive/incoming/why?.csv?versionId=abc",
    }
    handle_copy_source_param(params)  # -> /archive/incoming/why%3F.csv?versionId=abc
    found = [(n.action, n.resource) for n in required("s3", "CopyObject", params, REGION, ACCOUNT)]
    assert ("s3:GetObjectVersion", obj("incoming/why?.csv", "archive")) in found


@pytest.mark.parametrize(
    ("operation", "action"),
    [
        ("ListObjectsV2", "s3:ListBucket"),
        ("ListObjects", "s3:ListBucket"),
        ("ListObjectVersions", "s3:ListBucketVersions"),
    ],
)
def test_listing_is_authorized_on_the_bucket_with_the_prefix(operation: str, action: str) -> None:
    need = only("s3", operation, Bucket=BUCKET, Prefix="incoming/orders/", Delimiter="/")
    assert (need.action, need.resource) == (action, f"arn:aws:s3:::{BUCKET}")
    assert need.context == {"s3:prefix": "incoming/orders/", "s3:delimiter": "/"}


def test_head_bucket_needs_list_bucket() -> None:
    # [SAR-S3] HeadBucket: "you must have permissions to perform the s3:ListBucket action"
    assert needs("s3", "HeadBucket", Bucket=BUCKET) == [("s3:ListBucket", f"arn:aws:s3:::{BUCKET}")]


def test_delete_objects_needs_one_permission_per_key() -> None:
    # [SAR-S3] DeleteObjects: s3:DeleteObject, and s3:DeleteObjectVersion for a version id
    found = needs(
        "s3",
        "DeleteObjects",
        Bucket=BUCKET,
        Delete={"Objects": [{"Key": "work/a.json"}, {"Key": "work/b.json", "VersionId": "v2"}]},
    )
    assert found == [
        ("s3:DeleteObject", obj("work/a.json")),
        ("s3:DeleteObjectVersion", obj("work/b.json")),
    ]


def test_multipart_upload_needs_put_object() -> None:
    for operation in ("CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"):
        assert needs("s3", operation, Bucket=BUCKET, Key="processed/big.json") == [
            ("s3:PutObject", obj("processed/big.json"))
        ], operation
    assert needs("s3", "AbortMultipartUpload", Bucket=BUCKET, Key="processed/big.json") == [
        ("s3:AbortMultipartUpload", obj("processed/big.json"))
    ]


# ------------------------------------------------------------------ DynamoDB
def test_update_item_is_authorized_on_the_table() -> None:
    assert needs("dynamodb", "UpdateItem", TableName="ObjectState", Key={}) == [
        ("dynamodb:UpdateItem", TABLE)
    ]


def test_query_on_an_index_is_authorized_on_the_index() -> None:
    found = needs("dynamodb", "Query", TableName="ObjectState", IndexName="OpenStateIndex")
    assert found == [("dynamodb:Query", f"{TABLE}/index/OpenStateIndex")]


def test_a_table_given_by_arn_is_kept() -> None:
    assert needs("dynamodb", "GetItem", TableName=TABLE, Key={}) == [("dynamodb:GetItem", TABLE)]


def test_batch_get_item_needs_batch_get_item_per_table() -> None:
    # [SAR-DDB] BatchGetItem -> dynamodb:BatchGetItem
    found = needs(
        "dynamodb",
        "BatchGetItem",
        RequestItems={"ObjectState": {"Keys": []}, "Other": {"Keys": []}},
    )
    assert found == [
        ("dynamodb:BatchGetItem", TABLE),
        ("dynamodb:BatchGetItem", TABLE.replace("ObjectState", "Other")),
    ]


def test_batch_write_item_needs_batch_write_item() -> None:
    found = needs(
        "dynamodb",
        "BatchWriteItem",
        RequestItems={
            "ObjectState": [{"PutRequest": {"Item": {}}}, {"DeleteRequest": {"Key": {}}}]
        },
    )
    assert found == [("dynamodb:BatchWriteItem", TABLE)]


def test_transact_write_items_needs_the_underlying_item_actions() -> None:
    # [SAR-DDB] transactions: PutItem, UpdateItem, DeleteItem, ConditionCheckItem per table
    other = TABLE.replace("ObjectState", "Other")
    found = needs(
        "dynamodb",
        "TransactWriteItems",
        TransactItems=[
            {"Put": {"TableName": "ObjectState", "Item": {}}},
            {"Update": {"TableName": "ObjectState", "Key": {}}},
            {"Delete": {"TableName": "Other", "Key": {}}},
            {"ConditionCheck": {"TableName": other, "Key": {}}},
        ],
    )
    assert found == [
        ("dynamodb:PutItem", TABLE),
        ("dynamodb:UpdateItem", TABLE),
        ("dynamodb:DeleteItem", other),
        ("dynamodb:ConditionCheckItem", other),
    ]


def test_transact_get_items_needs_get_item() -> None:
    found = needs(
        "dynamodb",
        "TransactGetItems",
        TransactItems=[{"Get": {"TableName": "ObjectState", "Key": {}}}],
    )
    assert found == [("dynamodb:GetItem", TABLE)]


# ------------------------------------------------------------------ SQS, SNS
@pytest.mark.parametrize(
    ("operation", "action"),
    [
        ("SendMessage", "sqs:SendMessage"),
        ("SendMessageBatch", "sqs:SendMessage"),
        ("ReceiveMessage", "sqs:ReceiveMessage"),
        ("DeleteMessageBatch", "sqs:DeleteMessage"),
        ("ChangeMessageVisibilityBatch", "sqs:ChangeMessageVisibility"),
    ],
)
def test_queue_calls_are_authorized_on_the_queue_arn(operation: str, action: str) -> None:
    # [SQS] batch actions are authorized by the single-message permission
    assert needs("sqs", operation, QueueUrl=QUEUE_URL) == [(action, QUEUE)]


def test_get_queue_url_is_authorized_on_the_named_queue() -> None:
    assert needs("sqs", "GetQueueUrl", QueueName="ingest-ReconcileQueue") == [
        ("sqs:GetQueueUrl", QUEUE)
    ]
    other = needs("sqs", "GetQueueUrl", QueueName="q", QueueOwnerAWSAccountId="444455556666")
    assert other == [("sqs:GetQueueUrl", f"arn:aws:sqs:{REGION}:444455556666:q")]


@pytest.mark.parametrize(
    "url",
    [
        QUEUE_URL,
        f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/ingest-ReconcileQueue/",
        f"http://localhost:4566/{ACCOUNT}/ingest-ReconcileQueue",
    ],
)
def test_a_queue_url_names_the_queue_arn(url: str) -> None:
    assert arn_of_queue_url(url, REGION, ACCOUNT) == QUEUE


def test_publish_is_authorized_on_the_topic() -> None:
    topic = f"arn:aws:sns:{REGION}:{ACCOUNT}:ingest-OperationsTopic"
    assert needs("sns", "Publish", TopicArn=topic, Message="x") == [("sns:Publish", topic)]


# ------------------------------------------------------------------ Step Functions, Lambda
def test_start_execution_drops_a_test_case_suffix() -> None:
    machine = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:ingest-Pipeline"
    found = needs("states", "StartExecution", stateMachineArn=f"{machine}#TestCase", input="{}")
    assert found == [("states:StartExecution", machine)]
    assert needs("states", "StartExecution", stateMachineArn=machine) == [
        ("states:StartExecution", machine)
    ]


def test_describe_execution_is_authorized_on_the_execution() -> None:
    execution = f"arn:aws:states:{REGION}:{ACCOUNT}:execution:ingest-Pipeline:run-1"
    assert needs("states", "DescribeExecution", executionArn=execution) == [
        ("states:DescribeExecution", execution)
    ]


@pytest.mark.parametrize(
    ("function_name", "qualifier", "resource"),
    [
        ("ingest-Resolve", None, FUNCTION),
        (FUNCTION, None, FUNCTION),
        (f"{ACCOUNT}:function:ingest-Resolve", None, FUNCTION),
        ("ingest-Resolve", "live", f"{FUNCTION}:live"),
        (FUNCTION, "$LATEST", f"{FUNCTION}:$LATEST"),
        ("ingest-Resolve:live", None, f"{FUNCTION}:live"),
        (f"{FUNCTION}:7", None, f"{FUNCTION}:7"),
    ],
)
def test_invoke_needs_invoke_function_on_the_function_version_or_alias(
    function_name: str, qualifier: str | None, resource: str
) -> None:
    # [LAMBDA] the API operation Invoke is the action lambda:InvokeFunction; a qualified call
    # is authorized on the version or alias ARN
    params: dict[str, Any] = {"FunctionName": function_name}
    if qualifier:
        params["Qualifier"] = qualifier
    assert needs("lambda", "Invoke", **params) == [("lambda:InvokeFunction", resource)]


def test_invoke_by_partial_arn_with_a_qualifier() -> None:
    found = needs("lambda", "Invoke", FunctionName=f"{ACCOUNT}:function:ingest-Resolve:live")
    assert found == [("lambda:InvokeFunction", f"{FUNCTION}:live")]


# ------------------------------------------------------------------ KMS, EventBridge, others
@pytest.mark.parametrize("key", [KEY_ID, f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{KEY_ID}"])
def test_kms_calls_are_authorized_on_the_key_arn(key: str) -> None:
    assert needs("kms", "GenerateDataKey", KeyId=key, KeySpec="AES_256") == [
        ("kms:GenerateDataKey", f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{KEY_ID}")
    ]


def test_kms_call_by_alias_names_the_alias_for_the_authorizer_to_resolve() -> None:
    """[KMS] policies name the key ARN: required() gives the alias ARN, which only the
    account's aliases can resolve; Authorizer.authorize does (see the conformance tests)."""
    need = only("kms", "GenerateDataKey", KeyId="alias/ingest-notifications")
    assert need.resource == f"arn:aws:kms:{REGION}:{ACCOUNT}:alias/ingest-notifications"


def test_put_events_needs_put_events_on_each_bus() -> None:
    custom = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/ingest"
    found = needs(
        "events",
        "PutEvents",
        Entries=[
            {"Source": "ingest", "DetailType": "a", "Detail": "{}"},
            {"Source": "ingest", "DetailType": "b", "Detail": "{}", "EventBusName": "ingest"},
            {"Source": "ingest", "DetailType": "c", "Detail": "{}", "EventBusName": custom},
            {"Source": "ingest", "DetailType": "d", "Detail": "{}", "EventBusName": "default"},
        ],
    )
    default = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default"
    # the same bus by name and by ARN may be checked twice: the decision is the same
    assert set(found) == {("events:PutEvents", default), ("events:PutEvents", custom)}


def test_get_caller_identity_needs_no_permission() -> None:
    assert needs("sts", "GetCallerIdentity") == []


def test_an_unmapped_operation_needs_its_own_action_on_every_resource() -> None:
    # A statement scoped to resources does not cover "*": an unmapped call is refused visibly.
    assert needs("monitoring", "PutMetricData", Namespace="ingest") == [
        ("cloudwatch:PutMetricData", "*")
    ]
