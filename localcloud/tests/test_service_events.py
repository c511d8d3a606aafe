"""Events of services the local cloud does not run (EC2, Inspector, CloudTrail) are played
with ``LocalCloud.emit`` or ``POST /_localcloud/events``, so the rules that match them can be
tested; PutEvents still refuses the reserved ``aws.*`` sources to everyone else, as AWS does."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Resources:
  Stopped:
    Type: AWS::SQS::Queue
  StoppedPolicy:
    Type: AWS::SQS::QueuePolicy
    Properties:
      Queues: [!Ref Stopped]
      PolicyDocument:
        Statement:
          - Effect: Allow
            Principal: {Service: events.amazonaws.com}
            Action: sqs:SendMessage
            Resource: !GetAtt Stopped.Arn
            Condition: {ArnEquals: {aws:SourceArn: !GetAtt OnStop.Arn}}
  OnStop:
    Type: AWS::Events::Rule
    Properties:
      EventPattern:
        source: [aws.ec2]
        detail-type: [EC2 Instance State-change Notification]
        detail: {state: [stopped]}
      Targets: [{Arn: !GetAtt Stopped.Arn, Id: queue}]
Outputs:
  QueueUrl: {Value: !Ref Stopped}
"""


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    template: Path = tmp_path_factory.mktemp("service-events") / "template.yaml"
    template.write_text(TEMPLATE)
    with LocalCloud(template, stack_name="service-events") as running:
        yield running


def received(cloud: LocalCloud) -> list[dict[str, object]]:
    sqs = boto3.client("sqs")
    reply = sqs.receive_message(QueueUrl=cloud.outputs["QueueUrl"], MaxNumberOfMessages=10)
    messages = reply.get("Messages", [])
    for message in messages:
        sqs.delete_message(
            QueueUrl=cloud.outputs["QueueUrl"], ReceiptHandle=message["ReceiptHandle"]
        )
    return [json.loads(m["Body"]) for m in messages]


def test_an_emitted_service_event_reaches_the_rules_that_match_it(cloud: LocalCloud) -> None:
    instance = "arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"
    for state in ("stopping", "stopped"):
        cloud.emit(
            "aws.ec2",
            "EC2 Instance State-change Notification",
            {"instance-id": "i-0abc", "state": state},
            [instance],
        )
    cloud.deliveries.drain()
    (event,) = received(cloud)  # only the stopped one matches
    assert event["source"] == "aws.ec2"
    assert event["detail"] == {"instance-id": "i-0abc", "state": "stopped"}
    assert event["resources"] == [instance]
    assert (event["account"], event["region"]) == (cloud.account_id, cloud.region)


def test_put_events_still_refuses_a_service_source(cloud: LocalCloud) -> None:
    entry = {
        "Source": "aws.ec2",
        "DetailType": "EC2 Instance State-change Notification",
        "Detail": json.dumps({"instance-id": "i-0abc", "state": "stopped"}),
    }
    out = boto3.client("events").put_events(Entries=[entry])
    assert out["Entries"][0]["ErrorCode"] == "NotAuthorizedForSourceException"
    cloud.deliveries.drain()
    assert received(cloud) == []


def test_the_admin_api_emits_an_event(cloud: LocalCloud) -> None:
    cloud.serve(port=0)
    port = int(cloud.describe()["endpoint"].rsplit(":", 1)[1])
    body = json.dumps(
        {
            "source": "aws.ec2",
            "detail-type": "EC2 Instance State-change Notification",
            "detail": {"instance-id": "i-0def", "state": "stopped"},
        }
    )
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("POST", "/_localcloud/events", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    sent = json.loads(response.read())
    assert response.status == 200, sent
    cloud.deliveries.drain()
    (event,) = received(cloud)
    assert event["id"] == sent["id"]
    assert event["detail"]["instance-id"] == "i-0def"
