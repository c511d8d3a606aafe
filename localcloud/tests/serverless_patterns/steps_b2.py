"""The README steps of more serverless-patterns (as steps_b.py; split for length)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from urllib.parse import unquote_plus

import boto3

from localcloud.cloud import LocalCloud
from serverless_patterns import Pattern, Steps, wait_for
from serverless_patterns.steps_b import (
    TIMEOUT,
    ended_async,
    ended_executions,
    keys,
    notification,
    object_body,
    receive,
    receive_until,
    states_entered,
    subscribe_queue,
)


def s3_event_sfn_lambda_ddb_sns(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: subscribe to MySnsTopic, upload friends.csv to the IngestionBucket; a new
    execution of UpdateTableStateMachine sends the file to the function (wait for callback),
    which puts its rows into the table and answers the task token; the workflow succeeds
    and the subscribers get its success message."""
    topic = boto3.client("sns").list_topics()["Topics"]
    (topic_arn,) = [t["TopicArn"] for t in topic if t["TopicArn"].endswith(":my-sns-topic")]
    mailbox = subscribe_queue(topic_arn, "my-sns-topic-mailbox")
    csv = (pattern.dir / "friends.csv").read_bytes()
    boto3.client("s3").put_object(
        Bucket=cloud.outputs["IngestionBucket"], Key="friends.csv", Body=csv
    )
    cloud.deliveries.drain()
    (execution,) = ended_executions(cloud.outputs["UpdateTableStateMachine"], 1)
    assert execution["status"] == "SUCCEEDED", boto3.client("stepfunctions").describe_execution(
        executionArn=execution["executionArn"]
    )
    assert states_entered(execution["executionArn"]) == [
        "LambdaInvoke",
        "PrepareSNSMessage",
        "SNSPublish",
    ]
    items = boto3.client("dynamodb").scan(TableName=cloud.outputs["TableName"])["Items"]
    rows = sorted((i["transaction_id"]["S"], i["N"]["S"], i["S"]["S"]) for i in items)
    # the function splits the file on "\n": friends.csv's CRLF leaves a "\r" in a row's last
    # field, on AWS as here
    assert rows == sorted(tuple(line.split(",")) for line in csv.decode().split("\n"))
    assert [r[:2] for r in rows] == [
        ("1", "John"),
        ("2", "Mike"),
        ("3", "Shobha"),
        ("4", "Noel"),
        ("5", "Rocky"),
    ]
    (message,) = receive_until(mailbox, 1, "the workflow's notification")
    assert json.loads(message["Body"])["Message"] == "Successfully completed the workflow!"


def s3_eventbridge_sfn(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: upload two images, one with a cat and one without; two executions of
    CatDetectorStateMachine run, whose results show whether a cat was detected: the cat's
    ends in the "Cat" state, the other in "No cat". Rekognition is outside the local cloud's
    scope: both executions run and fail in DetectLabels (aws-sdk:rekognition:detectLabels)
    with Rekognition.AccessDeniedException, whose cause names the service."""
    s3 = boto3.client("s3")
    bucket = cloud.outputs["IngestionBucket"]
    s3.put_object(Bucket=bucket, Key="cat.jpg", Body=b"\xff\xd8\xff cat")
    s3.put_object(Bucket=bucket, Key="phone.jpg", Body=b"\xff\xd8\xff phone")
    cloud.deliveries.drain()
    sfn = boto3.client("stepfunctions")
    runs = ended_executions(cloud.outputs["CatDetectorStateMachine"], 2)
    assert len(runs) == 2
    ends = {}
    for run in runs:
        described = sfn.describe_execution(executionArn=run["executionArn"])
        assert described["status"] == "FAILED", described
        assert described["error"] == "Rekognition.AccessDeniedException", described
        assert "the local cloud does not run Amazon Rekognition" in described["cause"]
        key = json.loads(described["input"])["detail"]["object"]["key"]
        ends[key] = states_entered(run["executionArn"])[-1]
    assert ends == {"cat.jpg": "DetectLabels", "phone.jpg": "DetectLabels"}


def s3_eventbridge_sns_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: subscribe to the topic, ``aws s3 cp README.md s3://<bucket>``: the topic's
    subscriber gets the EventBridge "Object Created" event of README.md."""
    mailbox = subscribe_queue(cloud.outputs["SNSTopicARN"], "mailbox")
    bucket = cloud.outputs["S3Bucket"]
    boto3.client("s3").put_object(
        Bucket=bucket, Key="README.md", Body=(pattern.dir / "README.md").read_bytes()
    )
    cloud.deliveries.drain()
    (message,) = receive_until(mailbox, 1, "the notification")
    event = notification(message)
    assert event["source"] == "aws.s3"
    assert event["detail-type"] == "Object Created"
    assert event["detail"]["bucket"]["name"] == bucket
    assert event["detail"]["object"]["key"] == "README.md"
    assert receive(mailbox) == []


def s3_eventbridge_wildcard_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: upload-to-s3.sh creates <date>/<timestamp>/ABC/ and .../XYZ/ and uploads
    abc-data.csv and xyz-data.csv into them; the queue receives one message, the event of
    the XYZ csv (rule pattern ``*/XYZ/*.csv``)."""
    s3, bucket = boto3.client("s3"), cloud.outputs["S3Bucket"]
    now = dt.datetime.now(dt.UTC)
    base = f"{now:%Y-%m-%d}/{int(now.timestamp())}"
    for folder, name in (("ABC", "abc-data.csv"), ("XYZ", "xyz-data.csv")):
        s3.put_object(Bucket=bucket, Key=f"{base}/{folder}/")
        s3.put_object(
            Bucket=bucket, Key=f"{base}/{folder}/{name}", Body=(pattern.dir / name).read_bytes()
        )
    listed = sorted(keys(bucket))
    assert listed == sorted(
        f"{base}/{k}" for k in ("ABC/", "ABC/abc-data.csv", "XYZ/", "XYZ/xyz-data.csv")
    )
    cloud.deliveries.drain()
    (message,) = receive_until(cloud.outputs["SQSQueueURL"], 1, "the XYZ event")
    event = json.loads(message["Body"])
    assert event["detail-type"] == "Object Created"
    assert event["source"] == "aws.s3"
    assert event["detail"]["bucket"]["name"] == bucket
    assert event["detail"]["object"]["key"] == f"{base}/XYZ/xyz-data.csv"
    assert {"SenderId", "SentTimestamp", "ApproximateReceiveCount"} <= message["Attributes"].keys()
    assert receive(cloud.outputs["SQSQueueURL"]) == []


def s3_lambda_bedrock(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: ``aws s3 cp sampletext.txt s3://<bucket>/content/``; the function (S3
    notification) reads it and logs its Titan embedding. Bedrock is outside the local
    cloud's scope: the upload runs the function with the object's event, and its call to
    Bedrock fails as AWS fails a role without access to it (AccessDeniedException), with a
    function error naming the service."""
    bucket = cloud.outputs["ContentBucket"]
    boto3.client("s3").put_object(
        Bucket=bucket,
        Key="content/sampletext.txt",
        Body=(pattern.dir / "sampletext.txt").read_bytes(),
    )
    (run,) = ended_async(cloud, "BedrockEmb")
    event = json.loads(run.payload)
    key = event["Records"][0]["s3"]["object"]["key"]
    assert unquote_plus(key) == "content/sampletext.txt"  # the function unquotes it
    assert run.status == "FAILED", run
    assert run.response["errorType"] == "AccessDeniedException", run.response
    assert "when calling the InvokeModel operation" in run.response["errorMessage"]
    assert "the local cloud does not run Amazon Bedrock" in run.response["errorMessage"]


def s3_lambda_mediaconvert(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: upload a video to the input bucket; the function (S3 notification) creates a
    MediaConvert job (SUBMITTED) whose HLS output lands in the output bucket. MediaConvert is
    outside the local cloud's scope: the upload runs the function, which fails with the error
    AWS gives a role without access to MediaConvert (AccessDeniedException), naming the
    service (its module asks MediaConvert for its endpoint at import)."""
    bucket = cloud.outputs["InputBucket"]
    boto3.client("s3").put_object(Bucket=bucket, Key="video.mp4", Body=b"\x00\x00\x00\x18ftyp")
    (run,) = ended_async(cloud, cloud.functions["LambdaFunction"])
    event = json.loads(run.payload)
    assert event["Records"][0]["s3"]["object"]["key"] == "video.mp4"
    assert run.status == "FAILED", run
    # AWS's Python runtime reports an exception of the module's init (not an ImportError) as
    # itself: errorType ClientError, not Runtime.ImportModuleError
    assert run.response["errorType"] == "ClientError", run.response
    assert "when calling the DescribeEndpoints operation" in run.response["errorMessage"]
    assert (
        "the local cloud does not run AWS Elemental MediaConvert" in (run.response["errorMessage"])
    )
    assert keys(cloud.outputs["OutputBucket"]) == []


def s3_lambda_polly_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: ``aws s3 cp test.txt s3://texttospeechinputbucket``; the function (S3
    notification) has Polly synthesize it and writes the audio file, test.mp3, back into the
    same bucket. Polly is outside the local cloud's scope: the upload runs the function, whose
    SynthesizeSpeech fails as AWS fails a role without access to Polly (AccessDeniedException),
    naming the service; no test.mp3 is written."""
    bucket = "texttospeechinputbucket"
    boto3.client("s3").put_object(
        Bucket=bucket, Key="test.txt", Body=(pattern.dir / "test.txt").read_bytes()
    )
    first = ended_async(cloud, cloud.functions["TextToSpeechFunction"])[0]
    assert json.loads(first.payload)["Records"][0]["s3"]["object"]["key"] == "test.txt"
    assert first.status == "FAILED", first
    assert "when calling the SynthesizeSpeech operation" in str(first.response), first.response
    assert "the local cloud does not run Amazon Polly" in str(first.response), first.response
    assert object_body(bucket, "test.mp3") is None


def s3_lambda_transcribe_sam(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: ``aws s3 cp audio.mp3 s3://speech2text-input-bucket`` (audio.mp3 is not in the
    published copy: a few bytes stand for it); the function (S3 notification) starts a
    Transcribe job, and the JSON transcript is in the output bucket (``<job name>.json``)
    2-3 minutes later. Transcribe is outside the local cloud's scope: the function's
    StartTranscriptionJob fails as AWS fails a role without access to Transcribe
    (AccessDeniedException), and the function answers statusCode 500 with that error, naming
    the service; no transcript appears."""
    boto3.client("s3").put_object(
        Bucket="speech2text-input-bucket", Key="audio.mp3", Body=b"ID3\x03\x00"
    )
    (run,) = ended_async(cloud, cloud.functions["SpeechToTextFunction"])
    assert run.status == "SUCCEEDED", run
    assert run.response["statusCode"] == 500, run.response
    body = run.response["body"]
    assert "(AccessDeniedException) when calling the StartTranscriptionJob operation" in body
    assert "the local cloud does not run Amazon Transcribe" in body, body
    cloud.clock.sleep(180)  # "after 2-3 mins"
    assert keys(cloud.outputs["STOutputBucket"]) == []


def s3_sns(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: subscribe to the topic, upload an object to the bucket; the subscriber is
    notified with S3's event of the object."""
    (topic_arn,) = [t["TopicArn"] for t in boto3.client("sns").list_topics()["Topics"]]
    mailbox = subscribe_queue(topic_arn, "mailbox")
    bucket = pattern.parameters["SourceBucketName"]
    boto3.client("s3").put_object(Bucket=bucket, Key="photo.jpg", Body=b"\xff\xd8\xff")

    def of_object() -> list[dict[str, Any]] | None:
        events = [notification(m) for m in receive(mailbox)]
        records = [r for e in events for r in e.get("Records", [])]
        return records or None

    (record,) = wait_for(of_object, "the notification of the object", TIMEOUT)
    assert record["eventSource"] == "aws:s3"
    assert record["eventName"].startswith("ObjectCreated:")
    assert record["s3"]["bucket"]["name"] == bucket
    assert record["s3"]["object"]["key"] == "photo.jpg"


def s3_sqs(cloud: LocalCloud, pattern: Pattern) -> None:
    """README: upload an object to the bucket; ``aws sqs receive-message`` on the queue
    returns a message with S3's event of the object."""
    bucket = pattern.parameters["SourceBucketName"]
    boto3.client("s3").put_object(Bucket=bucket, Key="photo.jpg", Body=b"\xff\xd8\xff")
    url = cloud.stack.resources["StandardQueue"] if cloud.stack else ""

    def of_object() -> list[dict[str, Any]] | None:
        events = [json.loads(m["Body"]) for m in receive(url)]
        records = [r for e in events for r in e.get("Records", [])]
        return records or None

    (record,) = wait_for(of_object, "the message of the object", TIMEOUT)
    assert record["eventSource"] == "aws:s3"
    assert record["eventName"] == "ObjectCreated:Put"
    assert record["s3"]["bucket"]["name"] == bucket
    assert record["s3"]["object"]["key"] == "photo.jpg"
    assert record["s3"]["object"]["size"] == 3


STEPS: dict[str, Steps] = {
    "s3-event-sfn-lambda-ddb-sns": s3_event_sfn_lambda_ddb_sns,
    "s3-eventbridge-sns-sam": s3_eventbridge_sns_sam,
    "s3-eventbridge-sfn": s3_eventbridge_sfn,
    "s3-eventbridge-wildcard-sam": s3_eventbridge_wildcard_sam,
    "s3-lambda-bedrock": s3_lambda_bedrock,
    "s3-lambda-mediaconvert": s3_lambda_mediaconvert,
    "s3-lambda-polly-sam": s3_lambda_polly_sam,
    "s3-lambda-transcribe-sam": s3_lambda_transcribe_sam,
    "s3-sns": s3_sns,
    "s3-sqs": s3_sqs,
}
