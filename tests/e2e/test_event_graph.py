"""Every path from an S3 PutObject to the final state, through the rule the template deploys."""

from __future__ import annotations

import json
import threading
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from ingest_pipeline.errors import AccessDeniedError, StorageUnavailableError
from ingest_tools.local_pipeline import Pipeline
from localcloud.cloud import REGION, LocalCloud
from tests.support import AWKWARD_KEYS, sample_file, wait_for

pytestmark = pytest.mark.e2e

GOOD = sample_file("orders-good.csv")
BAD = sample_file("orders-bad-values.csv")
HAPPY = ["ClaimObject", "ProcessObject", "RecordSuccess"]


def dead_letters(p: Pipeline) -> list[dict[str, Any]]:
    url = p.stack.outputs["EventDeliveryDLQUrl"]
    got = p.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"])
    return [
        {
            "body": json.loads(m["Body"]),
            "attributes": {k: v["StringValue"] for k, v in m.get("MessageAttributes", {}).items()},
        }
        for m in got.get("Messages", [])
    ]


def test_upload_runs_the_happy_path(pipeline: Pipeline) -> None:
    key = "incoming/orders/2026-11-21.csv"
    version, run = pipeline.ingest(key, GOOD)

    assert run.status == "SUCCEEDED" and run.path == HAPPY
    delivery = pipeline.delivery(key, version)
    assert (delivery.status, delivery.attempts) == ("DELIVERED", 1)
    event = delivery.event
    assert event["source"] == "aws.s3" and event["detail-type"] == "Object Created"
    assert event["time"].endswith("Z") and event["detail"]["reason"] == "PutObject"
    # The state machine got exactly what the rule's InputTransformer builds from the event.
    assert json.loads(run.history[0]["executionStartedEventDetails"]["input"]) == {
        "object": {
            "bucket": pipeline.bucket,
            "key": key,
            "versionId": version,
            "sequencer": event["detail"]["object"]["sequencer"],
        },
        "trigger": {"source": "aws.s3", "eventId": event["id"], "eventTime": event["time"]},
        "request": {"reprocess": False, "staleBefore": ""},
    }
    record = pipeline.record(key, version)
    assert record is not None and record["status"] == "SUCCEEDED" and record["attempt"] == 1
    assert len(pipeline.read(pipeline.output_key(key)).splitlines()) == 2


def test_objects_outside_the_prefix_start_nothing(pipeline: Pipeline) -> None:
    pipeline.put("processed/orders/x.jsonl", b"{}\n")
    pipeline.put("incoming/orders/inside.csv", GOOD)
    pipeline.cloud.settle()
    assert [d.event["detail"]["object"]["key"] for d in pipeline.cloud.deliveries.all()] == [
        "incoming/orders/inside.csv"
    ]


def test_bad_data_is_quarantined_and_reported(pipeline: Pipeline) -> None:
    key = "incoming/orders/bad.csv"
    version, run = pipeline.ingest(key, BAD)

    assert run.status == "FAILED"
    assert run.path[-3:] == ["RecordRejection", "NotifyDataQuality", "FailExecution"]
    record = pipeline.record(key, version)
    assert record is not None and (record["status"], record["error_class"]) == (
        "FAILED",
        "PERMANENT",
    )
    assert pipeline.read("quarantine/orders/bad.csv") == BAD
    (note,) = pipeline.notifications("DataQualityTopicArn")
    assert note["message"]["object"]["key"] == key


def test_transient_errors_recover_with_retries(pipeline: Pipeline) -> None:
    pipeline.cloud.fail_next("ProcessFunction", StorageUnavailableError("SlowDown"), times=2)
    version, run = pipeline.ingest("incoming/orders/slow.csv", GOOD)

    assert run.status == "SUCCEEDED" and run.path == HAPPY
    assert pipeline.cloud.invocation_count(pipeline.stack.functions["ProcessFunction"]) == 3
    retries = [
        s for state, s in pipeline.cloud.clock.retry_sleeps[run.arn] if state == "ProcessObject"
    ]
    assert len(retries) == 2
    record = pipeline.record("incoming/orders/slow.csv", version)
    assert record is not None and record["status"] == "SUCCEEDED"


def test_transient_errors_that_exhaust_leave_a_retryable_failure(pipeline: Pipeline) -> None:
    pipeline.cloud.fail_next("ProcessFunction", StorageUnavailableError("SlowDown"), times=10)
    version, run = pipeline.ingest("incoming/orders/slow.csv", GOOD)

    assert run.status == "FAILED" and run.error == "StorageUnavailableError"
    assert "RecordRetryableFailure" in run.path
    record = pipeline.record("incoming/orders/slow.csv", version)
    assert record is not None
    assert (record["status"], record["error_class"], record["retryable"]) == (
        "FAILED",
        "TRANSIENT",
        True,
    )
    assert pipeline.keys("processed/") == []


def test_configuration_error_escalates_to_operations(pipeline: Pipeline) -> None:
    pipeline.cloud.fail_next("ProcessFunction", AccessDeniedError("AccessDenied"))
    version, run = pipeline.ingest("incoming/orders/denied.csv", GOOD)

    assert run.status == "FAILED" and run.path[-2:] == ["NotifyOperations", "FailExecution"]
    record = pipeline.record("incoming/orders/denied.csv", version)
    assert record is not None and record["error_class"] == "CONFIGURATION"
    (note,) = pipeline.notifications("OperationsTopicArn")
    assert note["attributes"]["errorClass"] == "CONFIGURATION"
    assert note["message"]["executionArn"] == run.arn


def test_throttled_claim_is_retried_by_the_workflow(pipeline: Pipeline) -> None:
    pipeline.cloud.faults.fail_operation("dynamodb", "UpdateItem", "ThrottlingException", times=1)
    _, run = pipeline.ingest("incoming/orders/throttled.csv", GOOD)

    assert run.status == "SUCCEEDED" and run.path == HAPPY
    assert [state for state, _ in pipeline.cloud.clock.retry_sleeps[run.arn]] == ["ClaimObject"]


def test_duplicate_delivered_in_sequence_processes_once(pipeline: Pipeline) -> None:
    key = "incoming/orders/twice.csv"
    version, first = pipeline.ingest(key, GOOD)
    assert first.path == HAPPY
    pipeline.cloud.redeliver(pipeline.delivery(key, version).event)
    pipeline.cloud.settle()

    runs = [
        pipeline.wait(d.execution_arn)
        for d in pipeline.deliveries_for(key, version)
        if d.execution_arn
    ]
    assert sorted(r.path[-1] for r in runs) == ["RecordSuccess", "SkipDuplicateObject"]
    assert pipeline.versions(pipeline.output_key(key)) == 1


def test_ten_concurrent_copies_process_exactly_once(pipeline: Pipeline) -> None:
    key = "incoming/orders/ten.csv"
    process = pipeline.stack.functions["ProcessFunction"]
    # keep the first claim RUNNING while the copies arrive
    gate = pipeline.cloud.faults.gate(
        process, invocation=pipeline.cloud.invocation_count(process) + 1
    )
    version = pipeline.put(key, GOOD)
    event = pipeline.delivery(key, version).event
    wait_for(gate.entered.is_set, what="the first copy to start processing")
    threads = [threading.Thread(target=pipeline.cloud.redeliver, args=(event,)) for _ in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    pipeline.cloud.deliveries.drain()
    arns = [d.execution_arn for d in pipeline.deliveries_for(key, version)]
    assert len(arns) == 10 and all(arns)
    gate.release()
    pipeline.wait_all([a for a in arns if a])

    runs = [pipeline.wait(a) for a in arns if a]
    assert sum(r.path == HAPPY for r in runs) == 1
    assert sum(r.path[-1] in {"SkipDuplicateObject", "EndAsDuplicate"} for r in runs) == 9
    assert pipeline.cloud.invocation_count(process) == 1
    assert pipeline.versions(pipeline.output_key(key)) == 1
    record = pipeline.record(key, version)
    assert record is not None and record["status"] == "SUCCEEDED" and record["attempt"] == 1


def test_a_duplicate_execution_of_one_event_processes_once(pipeline: Pipeline) -> None:
    """An asynchronous Express workflow runs at least once: the same event can run as two
    executions of the same name at the same time (Step Functions, "Execution guarantees").
    The claim absorbs the second. On STANDARD the same start is the running execution."""
    key = "incoming/orders/at-least-once.csv"
    process = pipeline.stack.functions["ProcessFunction"]
    gate = pipeline.cloud.faults.gate(
        process, invocation=pipeline.cloud.invocation_count(process) + 1
    )
    version = pipeline.put(key, GOOD)
    delivery = pipeline.delivery(key, version)
    assert delivery.execution_arn is not None
    wait_for(gate.entered.is_set, what="the first execution to start processing")
    name = delivery.execution_arn.split(":")[7]  # ...:execution|express:<machine>:<name>[:id]
    again = pipeline.start(pipeline.rule_input(delivery.event), name=name)
    gate.release()
    runs = [pipeline.wait(arn) for arn in dict.fromkeys([delivery.execution_arn, again])]

    if pipeline.stack.outputs["WorkflowType"] == "EXPRESS":
        assert len(runs) == 2  # two executions of one name, as AWS runs them
        assert sorted(r.path[-1] for r in runs) == ["RecordSuccess", "SkipDuplicateObject"]
    else:
        assert [r.path for r in runs] == [HAPPY]  # StartExecution is idempotent by name
    assert all(r.status == "SUCCEEDED" for r in runs)
    assert pipeline.cloud.invocation_count(process) == 1
    assert pipeline.versions(pipeline.output_key(key)) == 1
    record = pipeline.record(key, version)
    assert record is not None
    assert (record["status"], record["attempt"]) == ("SUCCEEDED", 1)


@pytest.mark.parametrize("key", AWKWARD_KEYS)
def test_awkward_keys_end_to_end(pipeline: Pipeline, key: str) -> None:
    version, run = pipeline.ingest(key, GOOD)
    assert run.status == "SUCCEEDED", run.cause
    record = pipeline.record(key, version)
    assert record is not None and record["status"] == "SUCCEEDED"
    assert len(pipeline.read(record["output_key"]).splitlines()) == 2


def test_delivery_without_permission_goes_straight_to_the_dlq(pipeline: Pipeline) -> None:
    pipeline.cloud.faults.fail_delivery("NO_PERMISSIONS", rule="ObjectCreated")
    key = "incoming/orders/denied-delivery.csv"
    version = pipeline.put(key, GOOD)
    delivery = pipeline.delivery(key, version)

    assert (delivery.status, delivery.attempts) == ("DEAD_LETTERED", 1)
    (message,) = dead_letters(pipeline)
    assert message["body"]["detail"]["object"] == delivery.event["detail"]["object"]
    assert message["body"]["source"] == "aws.s3"
    assert message["attributes"] == {
        "RULE_ARN": pipeline.stack.outputs["ObjectCreatedRuleArn"],
        "TARGET_ARN": pipeline.state_machine,
        "ERROR_CODE": "NO_PERMISSIONS",
        "ERROR_MESSAGE": delivery.error_message,
    }
    assert pipeline.record(key, version) is None


def test_throttled_delivery_exhausts_the_retry_policy_then_dead_letters(pipeline: Pipeline) -> None:
    pipeline.cloud.faults.fail_delivery("THROTTLING", times=1000)
    key = "incoming/orders/throttled-delivery.csv"
    version = pipeline.put(key, GOOD)
    delivery = pipeline.delivery(key, version)

    # template: RetryPolicy MaximumRetryAttempts 185, MaximumEventAgeInSeconds 86400
    assert delivery.attempts == 186 and sum(delivery.retry_delays) <= 86400
    (message,) = dead_letters(pipeline)
    assert message["attributes"]["ERROR_CODE"] == "THROTTLING"
    assert message["attributes"]["EXHAUSTED_RETRY_CONDITION"] == "MaximumRetryAttempts"
    assert message["attributes"]["RETRY_ATTEMPTS"] == "185"


def test_delivery_recovers_after_transient_target_errors(pipeline: Pipeline) -> None:
    pipeline.cloud.faults.fail_operation(
        "stepfunctions", "StartExecution", "ThrottlingException", times=2
    )
    key = "incoming/orders/late.csv"
    version, run = pipeline.ingest(key, GOOD)
    assert run.status == "SUCCEEDED"
    assert pipeline.delivery(key, version).attempts == 3
    assert dead_letters(pipeline) == []


@pytest.mark.parametrize(
    ("service", "operation", "method", "code"),
    [
        ("dynamodb", "DescribeTable", "describe_table", "ThrottlingException"),
        ("stepfunctions", "ListStateMachines", "list_state_machines", "ThrottlingException"),
        ("sqs", "ListQueues", "list_queues", "InternalError"),
    ],
)
def test_injected_operation_faults_answer_as_the_service(
    pipeline: Pipeline, service: str, operation: str, method: str, code: str
) -> None:
    client = boto3.client(
        service, region_name=REGION, config=Config(retries={"total_max_attempts": 1})
    )
    kwargs = {"TableName": pipeline.table} if service == "dynamodb" else {}
    pipeline.cloud.faults.fail_operation(service, operation, code, times=1)
    with pytest.raises(ClientError) as failed:
        getattr(client, method)(**kwargs)
    assert failed.value.response["Error"]["Code"] == code
    getattr(client, method)(**kwargs)  # the fault is used up: answered normally again


def test_sdk_retry_backoff_runs_on_the_engine_clock(pipeline: Pipeline) -> None:
    """In-process clients (the Lambdas', the tools') retry as configured; their backoff is
    counted on the engine clock instead of slept, like the workflow's Retry."""
    client = boto3.client(
        "dynamodb",
        region_name=REGION,
        config=Config(retries={"mode": "standard", "total_max_attempts": 4}),
    )
    pipeline.cloud.faults.fail_operation(
        "dynamodb", "DescribeTable", "ThrottlingException", times=3
    )
    slept = pipeline.cloud.clock.slept
    answer = client.describe_table(TableName=pipeline.table)
    assert answer["Table"]["TableName"] == pipeline.table
    assert answer["ResponseMetadata"]["RetryAttempts"] == 3
    assert pipeline.cloud.clock.slept > slept  # three jittered backoffs, none of them slept


def test_s3_sends_the_event_types_aws_sends(pipeline: Pipeline) -> None:
    """PutObject sends "Object Created" only (moto also tags every new object, which must
    not surface as "Object Tags Added"); PutObjectTagging sends "Object Tags Added"."""
    sink = pipeline.sqs.create_queue(QueueName="s3-events")["QueueUrl"]
    sink_arn = pipeline.sqs.get_queue_attributes(QueueUrl=sink, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    rule = pipeline.events.put_rule(Name="all-s3", EventPattern=json.dumps({"source": ["aws.s3"]}))
    pipeline.events.put_targets(Rule="all-s3", Targets=[{"Id": "sink", "Arn": sink_arn}])
    allow = {  # as AWS requires for an SQS target: the queue's policy admits the rule
        "Effect": "Allow",
        "Principal": {"Service": "events.amazonaws.com"},
        "Action": "sqs:SendMessage",
        "Resource": sink_arn,
        "Condition": {"ArnEquals": {"aws:SourceArn": rule["RuleArn"]}},
    }
    policy = json.dumps({"Version": "2012-10-17", "Statement": [allow]})
    pipeline.sqs.set_queue_attributes(QueueUrl=sink, Attributes={"Policy": policy})

    pipeline.s3.put_object(
        Bucket=pipeline.bucket, Key="other/tagged.csv", Body=GOOD, Tagging="team=data"
    )
    pipeline.s3.put_object_tagging(
        Bucket=pipeline.bucket,
        Key="other/tagged.csv",
        Tagging={"TagSet": [{"Key": "team", "Value": "ops"}]},
    )
    pipeline.cloud.settle()
    got = pipeline.sqs.receive_message(QueueUrl=sink, MaxNumberOfMessages=10)["Messages"]
    types = sorted(json.loads(m["Body"])["detail-type"] for m in got)
    assert types == ["Object Created", "Object Tags Added"]


def test_put_events_rejects_reserved_sources_per_entry(pipeline: Pipeline) -> None:
    key = "incoming/orders/redriven.csv"
    version = pipeline.put(key, GOOD)
    original = pipeline.delivery(key, version)
    detail = json.dumps(original.event["detail"])
    out = pipeline.events.put_events(
        Entries=[
            {"Source": "aws.s3", "DetailType": "Object Created", "Detail": detail},
            {"Source": "ingest-pipeline.redrive", "DetailType": "Object Created", "Detail": detail},
        ]
    )
    assert out["FailedEntryCount"] == 1
    assert out["Entries"][0]["ErrorCode"] == "NotAuthorizedForSourceException"
    redriven = pipeline.cloud.deliveries.wait(
        lambda: [
            d
            for d in pipeline.deliveries_for(key, version)
            if d.event["source"] != "aws.s3" and d.finished
        ],
    )
    assert redriven and redriven[0].execution_arn
    assert pipeline.wait(redriven[0].execution_arn).path[-1] in {
        "SkipDuplicateObject",
        "RecordSuccess",
    }


BURST = 100


@pytest.mark.slow
def test_a_burst_loses_nothing_and_processes_nothing_twice(cloud: LocalCloud) -> None:
    """BURST objects at once, far more than the delivery pool and the one local environment
    of each function take at a time (the 1,000-object figure is `make bench`'s)."""
    p = Pipeline(cloud)
    keys = [f"incoming/orders/burst/{i:04d}.csv" for i in range(BURST)]
    versions = {key: p.put(key, GOOD) for key in keys}
    cloud.deliveries.drain(timeout=300)
    delivered = cloud.deliveries.all()
    assert len(delivered) == BURST and {d.status for d in delivered} == {"DELIVERED"}
    final = p.wait_all([d.execution_arn for d in delivered if d.execution_arn], timeout=600)
    assert set(final.values()) == {"SUCCEEDED"}

    records = [p.record(key, version) for key, version in versions.items()]
    assert all(r is not None and r["status"] == "SUCCEEDED" and r["attempt"] == 1 for r in records)
    assert cloud.invocation_count(cloud.functions["ProcessFunction"]) == BURST
    outputs = p.s3.list_object_versions(Bucket=p.bucket, Prefix="processed/orders/")
    assert len([v for v in outputs["Versions"] if "/burst/" in v["Key"]]) == BURST
