"""The console's queues (localcloud/console/queues.py) and its extension point
(console/extensions.py): every queue with its counts and whose dead-letter queue it is, one
queue's messages peeked (never received: no count, visibility or receive count changes), the
redrive command (AWS-native by default, the application's through ``ConsoleExtensions``), and
the objects routes, which exist only when the application provides them.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from test_published_patterns import served_pattern

from localcloud.cloud import LocalCloud
from localcloud.console import queues, routes
from localcloud.console.extensions import ConsoleExtensions, NotFound

pytestmark = [pytest.mark.e2e]


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with served_pattern("console-queues") as running:
        yield running


@pytest.fixture(scope="module")
def made(cloud: LocalCloud) -> dict[str, str]:
    """A source queue and its DLQ, a rule target's DLQ, a plain queue; messages in each."""
    sqs: Any = boto3.client("sqs")
    events = boto3.client("events")

    def create(name: str, **attributes: str) -> tuple[str, str]:
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        return url, arn["Attributes"]["QueueArn"]

    dlq_url, dlq_arn = create("cq-dlq")
    source_url, _ = create(
        "cq-source",
        RedrivePolicy=json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3}),
    )
    rule_dlq_url, rule_dlq_arn = create("cq-rule-dlq")
    plain_url, plain_arn = create("cq-plain")
    rule = events.put_rule(Name="cq-rule", EventPattern=json.dumps({"source": ["cq.test"]}))
    events.put_targets(
        Rule="cq-rule",
        Targets=[{"Id": "t", "Arn": plain_arn, "DeadLetterConfig": {"Arn": rule_dlq_arn}}],
    )
    for index in range(3):
        sqs.send_message(QueueUrl=dlq_url, MessageBody=f"dead {index} ünïcode")
    sqs.send_message(
        QueueUrl=rule_dlq_url,
        MessageBody=json.dumps({"detail": {"object": {"key": "a b+c%.csv"}}}),
        MessageAttributes={
            "ERROR_CODE": {"DataType": "String", "StringValue": "THROTTLING"},
            "RULE_ARN": {"DataType": "String", "StringValue": rule["RuleArn"]},
        },
    )
    return {
        "dlq": dlq_url,
        "dlq_arn": dlq_arn,
        "source": source_url,
        "rule_dlq": rule_dlq_url,
        "rule_dlq_arn": rule_dlq_arn,
        "rule_arn": rule["RuleArn"],
        "plain": plain_url,
    }


def api(cloud: LocalCloud, route: str, **query: str) -> Any:
    url = f"{cloud.describe()['endpoint']}/_localcloud/console/api/{route}"
    url += "?" + urllib.parse.urlencode(query)
    with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 (http://127.0.0.1)
        return json.loads(response.read())


def counts(url: str) -> dict[str, str]:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    sqs: Any = boto3.client("sqs")
    return dict(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"])


def test_every_queue_is_listed_with_whose_dead_letter_queue_it_is(
    cloud: LocalCloud, made: dict[str, str]
) -> None:
    listed = {row["name"]: row for row in api(cloud, "queues")}
    assert listed["cq-dlq"]["isDeadLetterQueue"]
    assert listed["cq-dlq"]["messages"] == 3
    assert listed["cq-dlq"]["deadLetterFor"]["queues"] == [listed["cq-source"]["arn"]]
    assert listed["cq-rule-dlq"]["deadLetterFor"]["rules"] == [
        {"rule": made["rule_arn"], "target": "t"}
    ]
    assert not listed["cq-plain"]["isDeadLetterQueue"]
    assert not listed["cq-source"]["isDeadLetterQueue"]


def test_messages_are_peeked_without_being_received(
    cloud: LocalCloud, made: dict[str, str]
) -> None:
    before = counts(made["dlq"])
    for _ in range(2):
        shown = api(cloud, "queue", url=made["dlq"], limit="2")
    assert (
        counts(made["dlq"])
        == before
        == {
            "ApproximateNumberOfMessages": "3",
            "ApproximateNumberOfMessagesNotVisible": "0",
        }
    )
    assert shown["total"] == 3
    assert [m["body"] for m in shown["messages"]] == ["dead 0 ünïcode", "dead 1 ünïcode"]
    assert all(m["receiveCount"] == 0 and m["visible"] for m in shown["messages"])
    assert shown["messages"][0]["attributes"]["ApproximateReceiveCount"] == "0"

    # a real receive is what changes them, and the page shows it as it is
    sqs = boto3.client("sqs")
    sqs.receive_message(QueueUrl=made["plain"], WaitTimeSeconds=0)  # empty: nothing moves
    sqs.send_message(QueueUrl=made["plain"], MessageBody="once")
    sqs.receive_message(QueueUrl=made["plain"], VisibilityTimeout=600)
    (received,) = api(cloud, "queue", url=made["plain"])["messages"]
    assert (received["receiveCount"], received["visible"]) == (1, False)
    assert counts(made["plain"])["ApproximateNumberOfMessagesNotVisible"] == "1"


def test_the_default_redrive_is_aws_s_own_for_a_queue_s_dead_letter_queue(
    cloud: LocalCloud, made: dict[str, str]
) -> None:
    shown = api(cloud, "queue", url=made["dlq_arn"])  # a URL, an ARN or a name
    expected = f"aws sqs start-message-move-task --source-arn {made['dlq_arn']}"
    assert shown["redrive"] == expected
    assert {m["redrive"] for m in shown["messages"]} == {expected}
    rule_dlq = api(cloud, "queue", url="cq-rule-dlq")
    assert rule_dlq["redrive"] is None  # EventBridge has no redrive of its own
    (message,) = rule_dlq["messages"]
    assert message["messageAttributes"]["ERROR_CODE"] == {
        "dataType": "String",
        "value": "THROTTLING",
    }


def test_the_application_s_redrive_command_wins(cloud: LocalCloud, made: dict[str, str]) -> None:
    seen: list[str] = []

    def redrive(_: LocalCloud, arn: str) -> str | None:
        seen.append(arn)
        return "app redrive cq-rule-dlq" if arn == made["rule_dlq_arn"] else None

    cloud.console = ConsoleExtensions(redrive=redrive)
    try:
        assert api(cloud, "queue", url=made["rule_dlq"])["redrive"] == "app redrive cq-rule-dlq"
        assert api(cloud, "queue", url=made["dlq"])["redrive"].startswith("aws sqs ")
    finally:
        cloud.console = ConsoleExtensions()
    assert made["rule_dlq_arn"] in seen


def test_unknown_queues_and_bad_limits_are_answered(
    cloud: LocalCloud, made: dict[str, str]
) -> None:
    assert routes.handle(cloud, "GET", "queue", {"url": "nope"})[0] == 404
    assert routes.handle(cloud, "GET", "queue", {"url": made["dlq"], "limit": "0"})[0] == 400
    assert routes.handle(cloud, "GET", "queue", {})[0] == 400
    with pytest.raises(NotFound):
        queues.queue(cloud, "https://sqs.us-east-1.amazonaws.com/123456789012/nope")


def test_objects_exist_only_when_the_application_provides_them(cloud: LocalCloud) -> None:
    assert api(cloud, "features") == {"objects": False, "objectsTitle": None}
    with pytest.raises(urllib.error.HTTPError) as raised:
        api(cloud, "objects", q="x")
    assert raised.value.code == 404

    def search(_: LocalCloud, query: str) -> list[dict[str, Any]]:
        return [{"key": f"found {query}"}]

    def one(_: LocalCloud, key: str) -> dict[str, Any]:
        if key != "a b+c%/é.csv":
            raise NotFound(f"no object {key}")
        return {"key": key, "records": []}

    cloud.console = ConsoleExtensions(objects=search, object=one, objects_title="Files")
    try:
        assert api(cloud, "features") == {"objects": True, "objectsTitle": "Files"}
        assert api(cloud, "objects", q="é") == [{"key": "found é"}]
        assert api(cloud, "object", key="a b+c%/é.csv")["key"] == "a b+c%/é.csv"
        assert routes.handle(cloud, "GET", "object", {"key": "other"})[0] == 404
    finally:
        cloud.console = ConsoleExtensions()
