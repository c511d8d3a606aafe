"""The local cloud's faster SQS and DynamoDB bookkeeping and request path give moto's answers
(sqs.py, ddb.py, wire.py), and so do KMS keys whose key pair is made on first use.

Each test asks through boto3, as the pipeline and the tools do, and checks what a caller sees:
message counts, deletes, invalid receipt handles, validation errors and the stored item.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from moto.kms import utils as kms_utils
from moto.kms.models import kms_backends

from localcloud.cloud import REGION, LocalCloud
from localcloud.speedups.kms_lazy_private_key import LazyPrivateKey
from tests.support import ROOT

pytestmark = pytest.mark.e2e

CLAIM = json.loads((ROOT / "statemachines" / "pipeline.asl.json").read_text())["States"][
    "ClaimObject"
]["Parameters"]


def _counts(sqs: object, url: str) -> tuple[int, int]:
    a = sqs.get_queue_attributes(  # type: ignore[attr-defined]
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(a["ApproximateNumberOfMessages"]), int(a["ApproximateNumberOfMessagesNotVisible"])


def test_sqs_counts_deletes_and_receipt_handles(cloud: LocalCloud) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="speedups", Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
    for start in range(0, 30, 10):
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(start, start + 10)],
        )
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=60)
    assert _counts(sqs, url) == (30, 0)

    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert len(got) == 10
    assert _counts(sqs, url) == (20, 10)

    first, second = got[0], got[1]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])
    sqs.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])  # again: accepted
    with pytest.raises(ClientError) as invalid:
        sqs.delete_message(QueueUrl=url, ReceiptHandle="not-a-handle")
    assert invalid.value.response["Error"]["Code"] == "ReceiptHandleIsInvalid"

    # Received again, the message has a new handle; the old one still deletes it (moto, and
    # AWS within the visibility timeout), and only that one message.
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=second["ReceiptHandle"], VisibilityTimeout=0
    )
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert second["MessageId"] in {m["MessageId"] for m in again}
    sqs.delete_message(QueueUrl=url, ReceiptHandle=second["ReceiptHandle"])
    assert _counts(sqs, url) == (11, 17)  # 11 visible, 17 in flight, 1 delayed (not counted)

    result = sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
            for i, m in enumerate(again)
            if m["MessageId"] != second["MessageId"]
        ],
    )
    assert not result.get("Failed")
    assert _counts(sqs, url) == (11, 8)


def test_dynamodb_update_validation_errors_every_time(cloud: LocalCloud) -> None:
    ddb = boto3.client("dynamodb", region_name=REGION)
    table = cloud.outputs["ObjectStateTableName"]
    key = {"pk": {"S": "speedups"}, "sk": {"S": "v#1"}}
    for _ in range(3):  # the expression-only checks must still fail after a cached parse
        with pytest.raises(ClientError) as overlapping:
            ddb.update_item(
                TableName=table,
                Key=key,
                UpdateExpression="SET a = :x, a = :y",
                ExpressionAttributeValues={":x": {"S": "1"}, ":y": {"S": "2"}},
            )
        assert overlapping.value.response["Error"]["Code"] == "ValidationException"
        with pytest.raises(ClientError) as key_attribute:
            ddb.update_item(
                TableName=table,
                Key=key,
                UpdateExpression="SET pk = :x",
                ExpressionAttributeValues={":x": {"S": "other"}},
            )
        assert "key" in key_attribute.value.response["Error"]["Message"].lower()
    assert "Item" not in ddb.get_item(TableName=table, Key=key)


def test_dynamodb_claim_expression_applies_the_same_each_time(cloud: LocalCloud) -> None:
    ddb = boto3.client("dynamodb", region_name=REGION)
    table = cloud.outputs["ObjectStateTableName"]
    values = {
        ":running": {"S": "RUNNING"},
        ":failed": {"S": "FAILED"},
        ":true": {"BOOL": True},
        ":zero": {"N": "0"},
        ":one": {"N": "1"},
        ":now": {"S": "2026-11-21T00:00:00.000Z"},
        ":lease": {"N": "900"},
        ":bucket": {"S": "b"},
        ":version": {"S": "v"},
        ":source": {"S": "aws.s3"},
        ":reprocess": {"BOOL": False},
        ":no_version": {"S": ""},
        ":unversioned": {"S": "null"},
        ":stale_before": {"S": "2026-11-20T00:00:00.000Z"},
    }

    def claim(key: str, execution: str) -> dict[str, object]:
        return ddb.update_item(
            TableName=table,
            Key={"pk": {"S": key}, "sk": {"S": "v#1"}},
            UpdateExpression=CLAIM["UpdateExpression"],
            ConditionExpression=CLAIM["ConditionExpression"],
            ExpressionAttributeNames=CLAIM["ExpressionAttributeNames"],
            ExpressionAttributeValues={
                **values,
                ":key": {"S": key},
                ":execution": {"S": execution},
            },
            ReturnValues="ALL_NEW",
        )["Attributes"]

    items = [claim(f"s3://b/k{i}", f"arn:exec:{i}") for i in range(3)]
    for i, item in enumerate(items):
        assert item["status"] == {"S": "RUNNING"}
        assert item["attempt"] == {"N": "1"}
        assert item["object_key"] == {"S": f"s3://b/k{i}"}
        assert item["execution_arn"] == {"S": f"arn:exec:{i}"}
    with pytest.raises(ClientError) as held:  # a live claim is not taken again
        claim("s3://b/k0", "arn:exec:other")
    assert held.value.response["Error"]["Code"] == "ConditionalCheckFailedException"


def test_conditional_writes_are_atomic_under_concurrency(cloud: LocalCloud) -> None:
    """Twenty threads claim one key with attribute_not_exists: exactly one wins, as on
    DynamoDB (moto alone lets several pass when a thread switch falls between its read and
    its write; a tiny switch interval makes that likely)."""
    ddb = boto3.client("dynamodb", region_name=REGION)
    table = cloud.outputs["ObjectStateTableName"]
    winners: list[int] = []
    losers: list[str] = []
    start = threading.Barrier(20)

    def claim(i: int) -> None:
        start.wait()
        try:
            ddb.update_item(
                TableName=table,
                Key={"pk": {"S": "s3://b/contended"}, "sk": {"S": "v#1"}},
                UpdateExpression="SET claimed_by = :me, attempt = if_not_exists(attempt, :z) + :o",
                ConditionExpression="attribute_not_exists(pk)",
                ExpressionAttributeValues={
                    ":me": {"N": str(i)},
                    ":z": {"N": "0"},
                    ":o": {"N": "1"},
                },
            )
            winners.append(i)
        except ClientError as exc:
            losers.append(exc.response["Error"]["Code"])

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=claim, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert len(winners) == 1
    assert losers == ["ConditionalCheckFailedException"] * 19
    item = ddb.get_item(TableName=table, Key={"pk": {"S": "s3://b/contended"}, "sk": {"S": "v#1"}})
    assert item["Item"]["claimed_by"] == {"N": str(winners[0])}
    assert item["Item"]["attempt"] == {"N": "1"}


def test_responses_carry_every_dynamodb_type_and_nested_shape(cloud: LocalCloud) -> None:
    """wire.py's response serializer shortcut: what was written is what every read returns."""
    ddb = boto3.client("dynamodb", region_name=REGION)
    table = cloud.outputs["ObjectStateTableName"]
    key = {"pk": {"S": "s3://b/every type"}, "sk": {"S": "v#1"}}
    item = key | {
        "s": {"S": "d\u00e9j\u00e0 vu"},
        "n": {"N": "-12.5"},
        "b": {"B": b"\x00\xffbytes"},
        "ss": {"SS": ["a", "b"]},
        "ns": {"NS": ["1", "2"]},
        "bs": {"BS": [b"\x01", b"\x02"]},
        "m": {"M": {"inner": {"L": [{"S": "x"}, {"NULL": True}, {"BOOL": False}]}}},
        "empty": {"M": {}},
    }
    ddb.put_item(TableName=table, Item=item)

    def same(got: dict[str, Any]) -> None:
        assert {k: v for k, v in got.items() if k not in ("ss", "ns", "bs")} == {
            k: v for k, v in item.items() if k not in ("ss", "ns", "bs")
        }
        for name, kind in (("ss", "SS"), ("ns", "NS"), ("bs", "BS")):
            assert sorted(got[name][kind]) == sorted(item[name][kind])  # sets: any order

    same(ddb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"])
    query = ddb.query(
        TableName=table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": key["pk"]},
    )
    assert query["Count"] == 1 and query["ScannedCount"] == 1
    same(query["Items"][0])
    updated = ddb.update_item(
        TableName=table,
        Key=key,
        UpdateExpression="SET n = n + :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="ALL_NEW",
    )["Attributes"]
    assert updated["n"] == {"N": "-11.5"} and updated["b"] == item["b"]
    described = ddb.describe_table(TableName=table)["Table"]
    assert described["TableName"] == table and described["ItemCount"] >= 1
    assert {a["AttributeName"] for a in described["KeySchema"]} == {"pk", "sk"}


def test_kms_sign_verify_and_public_key_for_rsa_and_ecc_keys(
    cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kms_lazy_private_key.py: with it, no key pair is generated until Sign, Verify or
    GetPublicKey needs one; with or without it, signatures verify, in KMS and against the
    public key KMS returns."""
    generated: list[str] = []
    for cls in (kms_utils.RSAPrivateKey, kms_utils.ECDSAPrivateKey):
        init = cls.__init__

        def counting(self: Any, *args: Any, _init: Any = init, **kwargs: Any) -> None:
            generated.append(type(self).__name__)
            _init(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", counting)
    lazy = "kms-lazy-private-key" in {p.name for p in cloud.patches}
    backend = kms_backends[cloud.account_id][REGION]
    if lazy:  # the template's (symmetric) keys never made one
        assert backend.keys
        assert all(isinstance(k.private_key, LazyPrivateKey) for k in backend.keys.values())
        assert not any(k.private_key.generated for k in backend.keys.values())

    kms = boto3.client("kms", region_name=REGION)
    symmetric = kms.create_key()["KeyMetadata"]["KeyId"]
    blob = kms.encrypt(KeyId=symmetric, Plaintext=b"secret")["CiphertextBlob"]
    assert kms.decrypt(CiphertextBlob=blob)["Plaintext"] == b"secret"
    assert generated == ([] if lazy else ["RSAPrivateKey"])

    message = b"the message"
    for spec, algorithm, made in (
        ("RSA_2048", "RSASSA_PSS_SHA_256", "RSAPrivateKey"),
        ("ECC_NIST_P256", "ECDSA_SHA_256", "ECDSAPrivateKey"),
    ):
        generated.clear()
        key = kms.create_key(KeySpec=spec, KeyUsage="SIGN_VERIFY")["KeyMetadata"]
        assert key["KeySpec"] == spec and key["SigningAlgorithms"]
        assert generated == ([] if lazy else [made])
        signature = kms.sign(KeyId=key["KeyId"], Message=message, SigningAlgorithm=algorithm)[
            "Signature"
        ]
        assert generated == [made]  # made once, on first use
        assert kms.verify(
            KeyId=key["KeyId"], Message=message, Signature=signature, SigningAlgorithm=algorithm
        )["SignatureValid"]
        assert not kms.verify(
            KeyId=key["KeyId"], Message=b"other", Signature=signature, SigningAlgorithm=algorithm
        )["SignatureValid"]
        public = kms.get_public_key(KeyId=key["KeyId"])
        assert public["KeyUsage"] == "SIGN_VERIFY"
        assert public["SigningAlgorithms"] == key["SigningAlgorithms"]
        loaded = serialization.load_der_public_key(public["PublicKey"])
        if isinstance(loaded, rsa.RSAPublicKey):
            pss = padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.AUTO)
            loaded.verify(signature, message, pss, hashes.SHA256())
        else:
            assert isinstance(loaded, ec.EllipticCurvePublicKey)
            loaded.verify(signature, message, ec.ECDSA(hashes.SHA256()))
        assert generated == [made]
