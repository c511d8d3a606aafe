"""The local cloud's EventBridge TestEventPattern answers as AWS's does where moto 5.2.5 does
not answer at all (``localcloud/fixes/events_test_event_pattern.py``): the rule's own matcher,
every pattern operator, AWS's validation of pattern and event, and the same answers over HTTP.
The rest of the local cloud's fidelity is in test_localcloud_fidelity.py.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from ingest_tools.local_pipeline import Pipeline
from tests.support import load_event, queue_arn, wait_for

pytestmark = pytest.mark.e2e


def rule_pattern(p: Pipeline) -> str:
    name = p.stack.outputs["ObjectCreatedRuleArn"].rsplit("/", 1)[-1]
    return str(p.events.describe_rule(Name=name)["EventPattern"])


def s3_event(p: Pipeline, **changes: Any) -> dict[str, Any]:
    event = load_event("eventbridge/s3-object-created.json")
    event["detail"]["bucket"]["name"] = p.bucket
    for path, value in changes.items():
        node = event
        *parents, leaf = path.split("__")
        for parent in parents:
            node = node[parent]
        node[leaf] = value
    return dict(event)


@pytest.mark.parametrize(
    ("changes", "matches"),
    [
        ({}, True),
        ({"source": "ingest-pipeline.redrive"}, True),
        ({"detail-type": "AWS API Call via CloudTrail"}, False),
        ({"detail__bucket__name": "someone-elses-bucket"}, False),
        ({"detail__object__key": "processed/orders/x.jsonl"}, False),
        ({"source": "retry"}, False),  # seed 002's redrive source: no rule of ours
    ],
)
def test_test_event_pattern_matches_as_the_rule_does(
    p: Pipeline, changes: dict[str, Any], matches: bool
) -> None:
    answer = p.events.test_event_pattern(
        EventPattern=rule_pattern(p), Event=json.dumps(s3_event(p, **changes))
    )
    assert answer["Result"] is matches


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        ({"prefix": "incoming/"}, "incoming/a.csv", True),
        ({"prefix": "incoming/"}, "processed/a.csv", False),
        ({"suffix": ".csv"}, "incoming/a.csv", True),
        ({"suffix": ".csv"}, "incoming/a.json", False),
        ({"anything-but": "incoming/a.csv"}, "incoming/a.csv", False),
        ({"anything-but": ["x", "y"]}, "incoming/a.csv", True),
        ({"anything-but": {"prefix": "tmp/"}}, "incoming/a.csv", True),
        ({"anything-but": {"prefix": "incoming/"}}, "incoming/a.csv", False),
        ({"equals-ignore-case": "INCOMING/A.CSV"}, "incoming/a.csv", True),
        ({"equals-ignore-case": "INCOMING/B.CSV"}, "incoming/a.csv", False),
        ({"wildcard": "incoming/*/a.csv"}, "incoming/orders/a.csv", True),
        ({"wildcard": "incoming/*/b.csv"}, "incoming/orders/a.csv", False),
        ({"exists": True}, "incoming/a.csv", True),
        ({"exists": False}, "incoming/a.csv", False),
    ],
)
def test_test_event_pattern_string_operators(
    p: Pipeline, pattern: dict[str, Any], value: str, matches: bool
) -> None:
    event = s3_event(p, detail__object__key=value)
    answer = p.events.test_event_pattern(
        EventPattern=json.dumps({"detail": {"object": {"key": [pattern]}}}), Event=json.dumps(event)
    )
    assert answer["Result"] is matches


@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        ({"detail": {"object": {"size": [{"numeric": [">", 0, "<=", 1024]}]}}}, True),
        ({"detail": {"object": {"size": [{"numeric": [">=", 1025]}]}}}, False),
        ({"detail": {"object": {"size": [{"numeric": ["=", 1024]}]}}}, True),
        ({"detail": {"object": {"missing": [{"exists": False}]}}}, True),
        ({"detail": {"object": {"missing": [{"exists": True}]}}}, False),
        # an array in the event matches when it shares a value with the pattern's array
        ({"resources": ["arn:aws:s3:::other", "arn:aws:s3:::{bucket}"]}, True),
        ({"resources": ["arn:aws:s3:::other"]}, False),
        # $or: either branch
        ({"$or": [{"source": ["nope"]}, {"detail": {"reason": ["PutObject"]}}]}, True),
        ({"$or": [{"source": ["nope"]}, {"detail": {"reason": ["CopyObject"]}}]}, False),
        # exact values are case-sensitive
        ({"detail-type": ["object created"]}, False),
    ],
)
def test_test_event_pattern_numeric_exists_arrays_and_or(
    p: Pipeline, pattern: dict[str, Any], matches: bool
) -> None:
    event = s3_event(
        p,
        detail__object__size=1024,
        detail__reason="PutObject",
        resources=["arn:aws:s3:::first", f"arn:aws:s3:::{p.bucket}"],
    )
    raw = json.dumps(pattern).replace("{bucket}", p.bucket)
    answer = p.events.test_event_pattern(EventPattern=raw, Event=json.dumps(event))
    assert answer["Result"] is matches


@pytest.mark.parametrize("pattern", ["not json", "[1]", '{"source": "aws.s3"}', '{"source": []}'])
def test_test_event_pattern_rejects_an_invalid_pattern(p: Pipeline, pattern: str) -> None:
    with pytest.raises(ClientError) as raised:
        p.events.test_event_pattern(EventPattern=pattern, Event=json.dumps(s3_event(p)))
    assert raised.value.response["Error"]["Code"] == "InvalidEventPatternException"


@pytest.mark.parametrize(
    "field", ["id", "account", "source", "time", "region", "resources", "detail-type"]
)
def test_test_event_pattern_rejects_an_event_without_the_required_fields(
    p: Pipeline, field: str
) -> None:
    event = s3_event(p)
    del event[field]
    with pytest.raises(ClientError) as raised:
        p.events.test_event_pattern(EventPattern=rule_pattern(p), Event=json.dumps(event))
    assert raised.value.response["Error"]["Code"] == "ValidationException"
    assert raised.value.response["Error"]["Message"] == "Parameter Event is not valid."


def test_test_event_pattern_and_move_tasks_answer_over_http(p: Pipeline) -> None:
    """The same handlers serve ``ingestctl local up`` (moto's server app)."""
    server = p.cloud.serve(port=0)
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    events = session.client("events", endpoint_url=server.url)
    sqs = session.client("sqs", endpoint_url=server.url)

    answer = events.test_event_pattern(EventPattern=rule_pattern(p), Event=json.dumps(s3_event(p)))
    assert answer["Result"] is True
    dlq_arn = queue_arn(p, p.stack.outputs["ReconcileDLQUrl"])
    handle = sqs.start_message_move_task(SourceArn=dlq_arn)["TaskHandle"]
    assert handle
    wait_for(
        lambda: (
            sqs.list_message_move_tasks(SourceArn=dlq_arn)["Results"][0]["Status"] == "COMPLETED"
        ),
        what="the move task, over HTTP",
    )
