"""Every workflow path, on the real ASL, with the real handlers against moto S3/DynamoDB/SNS."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ingest_pipeline.errors import AccessDeniedError, StorageUnavailableError
from ingest_tools.cost import measure
from ingest_tools.local_pipeline import local_pipeline
from tests.statemachine.conftest import Pipeline
from tests.statemachine.test_large_file_path import HANDOFF, LARGE
from tests.support import AWKWARD_KEYS, sample_file, wait_for

pytestmark = pytest.mark.statemachine

GOOD = sample_file("orders-good.csv")
KEY = "incoming/orders/2026-11-21.csv"
# The floor: every object pays these 3 state transitions, and no Choice on the way.
HAPPY = ["ClaimObject", "ProcessObject", "RecordSuccess"]
DUPLICATE = ["ClaimObject", "SkipDuplicateObject"]


def test_happy_path(pipeline: Pipeline) -> None:
    version, run = pipeline.ingest(KEY, GOOD)

    assert run.status == "SUCCEEDED", run.cause
    assert run.path == HAPPY
    record = pipeline.record(KEY, version)
    assert record is not None
    assert record["status"] == "SUCCEEDED"
    assert record["attempt"] == 1
    assert record["execution_arn"] == run.arn
    assert record["row_count"] == 2
    assert record["output_key"] == pipeline.output_key(KEY)
    assert int(record["expires_at"]) > datetime.now(UTC).timestamp()
    lines = pipeline.read(pipeline.output_key(KEY)).decode().splitlines()
    assert [json.loads(line)["order_id"] for line in lines] == ["o-1001", "o-1002"]
    assert pipeline.notifications("OperationsTopicArn") == []
    assert pipeline.notifications("DataQualityTopicArn") == []


@pytest.mark.parametrize("key", AWKWARD_KEYS)
def test_awkward_keys_take_the_happy_path(pipeline: Pipeline, key: str) -> None:
    version, run = pipeline.ingest(key, GOOD)
    assert run.status == "SUCCEEDED", run.cause
    record = pipeline.record(key, version)
    assert record is not None and record["status"] == "SUCCEEDED"
    output = record["output_key"]
    assert output == pipeline.output_key(key)
    dataset, _, stem = key.removeprefix("incoming/").removesuffix(".csv").partition("/")
    assert output.startswith(f"processed/{dataset}/ingest_date=")
    assert output.endswith(f"/{stem}.jsonl")
    assert len(pipeline.read(output).splitlines()) == 2


def test_duplicate_of_succeeded_object_processes_nothing(pipeline: Pipeline) -> None:
    version = pipeline.put(KEY, GOOD)
    event = pipeline.s3_event(KEY, version)
    first = pipeline.wait(pipeline.start(pipeline.rule_input(event)))
    again = pipeline.wait(pipeline.start(pipeline.rule_input(event)))

    assert first.status == again.status == "SUCCEEDED"
    assert again.path == DUPLICATE
    assert again.output is not None
    assert again.output["existing"]["Item"]["status"]["S"] == "SUCCEEDED"
    assert again.invocations("invoke") == 0
    assert pipeline.versions(pipeline.output_key(KEY)) == 1
    assert pipeline.record(KEY, version)["execution_arn"] == first.arn  # type: ignore[index]


def test_new_version_of_same_key_is_new_work(pipeline: Pipeline) -> None:
    v1, first = pipeline.ingest(KEY, GOOD)
    v2, second = pipeline.ingest(KEY, GOOD.replace(b"o-1002", b"o-2002"))
    assert v1 != v2
    assert first.path == second.path == HAPPY
    assert pipeline.record(KEY, v2)["attempt"] == 1  # type: ignore[index]
    assert b"o-2002" in pipeline.read(pipeline.output_key(KEY))


def test_duplicate_while_in_progress_ends_without_processing(pipeline: Pipeline) -> None:
    gate = pipeline.cloud.faults.gate(pipeline.functions["ProcessFunction"])
    version = pipeline.put(KEY, GOOD)
    execution_input = pipeline.rule_input(pipeline.s3_event(KEY, version))
    owner = pipeline.start(execution_input)
    wait_for(gate.entered.is_set, what="the first execution to start processing")

    duplicate = pipeline.wait(pipeline.start(execution_input))
    gate.release()
    finished = pipeline.wait(owner)

    assert duplicate.status == "SUCCEEDED"
    assert duplicate.path == DUPLICATE
    assert duplicate.output["existing"]["Item"]["status"]["S"] == "RUNNING"  # type: ignore[index]
    assert finished.status == "SUCCEEDED" and finished.path == HAPPY
    assert pipeline.record(KEY, version)["execution_arn"] == owner  # type: ignore[index]


def test_transient_error_then_success_takes_the_retry_path(pipeline: Pipeline) -> None:
    pipeline.cloud.faults.fail(
        pipeline.functions["ProcessFunction"], StorageUnavailableError("S3 SlowDown"), times=2
    )
    version, run = pipeline.ingest(KEY, GOOD)

    assert run.status == "SUCCEEDED", run.cause
    assert run.path == HAPPY
    assert run.invocations("invoke") == 3  # two failures retried, then success
    waits = [
        s for state, s in pipeline.cloud.clock.retry_sleeps[run.arn] if state == "ProcessObject"
    ]
    assert len(waits) == 2 and all(0 <= s <= 30 for s in waits)
    assert pipeline.record(KEY, version)["status"] == "SUCCEEDED"  # type: ignore[index]


def test_transient_errors_exhausted_mark_failed_retryable(pipeline: Pipeline) -> None:
    # 1 attempt + 3 retries, all failing: the retries are exhausted.
    pipeline.cloud.faults.fail(
        pipeline.functions["ProcessFunction"], StorageUnavailableError("S3 SlowDown"), times=4
    )
    version, run = pipeline.ingest(KEY, GOOD)

    assert run.status == "FAILED"
    assert run.error == "StorageUnavailableError"
    assert run.path == [
        *HAPPY[:2],
        "DescribeTransientFailure",
        "RecordRetryableFailure",
        "FailExecution",
    ]
    assert run.invocations("invoke") == 4 + 1  # 1 + 3 retries of ProcessObject, 1 describe
    record = pipeline.record(KEY, version)
    assert record is not None
    assert record["status"] == "FAILED" and record["retryable"] is True
    assert record["error_class"] == "TRANSIENT"
    retry_after = datetime.fromisoformat(record["retry_after"].replace("Z", "+00:00"))
    assert timedelta(0) < retry_after - datetime.now(UTC) <= timedelta(seconds=300)
    assert pipeline.notifications("OperationsTopicArn") == []  # the reconciler retries it

    # A later event for the same version re-claims it: FAILED-retryable is retryable.
    again = pipeline.wait(pipeline.start(pipeline.rule_input(pipeline.s3_event(KEY, version))))
    assert again.status == "SUCCEEDED" and again.path == HAPPY
    assert pipeline.record(KEY, version)["attempt"] == 2  # type: ignore[index]


def test_configuration_error_escalates_to_operations(pipeline: Pipeline) -> None:
    pipeline.cloud.faults.fail(
        pipeline.functions["ProcessFunction"],
        AccessDeniedError("GetObject: AccessDenied: Access Denied"),
    )
    version, run = pipeline.ingest(KEY, GOOD)

    assert run.status == "FAILED"
    assert run.error == "AccessDeniedError"
    assert "ACCESS_DENIED" in (run.cause or "")
    assert run.path == [
        *HAPPY[:2],
        "DescribeConfigurationFailure",
        "RecordConfigurationFailure",
        "NotifyOperations",
        "FailExecution",
    ]
    assert run.invocations("invoke") == 2  # not retried
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["status"], record["retryable"], record["error_class"]) == (
        "FAILED",
        False,
        "CONFIGURATION",
    )
    (sent,) = pipeline.notifications("OperationsTopicArn")
    assert sent["attributes"] == {
        "errorClass": "CONFIGURATION",
        "severity": "high",
        "code": "ACCESS_DENIED",
    }
    message = sent["message"]
    assert message["object"] == {"bucket": pipeline.bucket, "key": KEY, "versionId": version}
    assert message["executionArn"] == run.arn
    assert run.arn in message["consoleUrl"]
    assert message["attempt"] == 1
    assert "ingestctl reprocess" in message["suggestedAction"]
    assert pipeline.notifications("DataQualityTopicArn") == []

    # The same event again does not re-run a configuration failure...
    dup = pipeline.wait(pipeline.start(pipeline.rule_input(pipeline.s3_event(KEY, version))))
    assert dup.path == DUPLICATE
    # ...an explicit reprocess request does, once the deployment is fixed.
    request = pipeline.rule_input(pipeline.s3_event(KEY, version))
    request["request"] = {"reprocess": True, "staleBefore": ""}
    fixed = pipeline.wait(pipeline.start(request))
    assert fixed.status == "SUCCEEDED" and fixed.path == HAPPY
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["status"], record["attempt"]) == ("SUCCEEDED", 2)
    assert "error_class" not in record


def test_error_our_code_did_not_raise_goes_through_classify(pipeline: Pipeline) -> None:
    pipeline_lambda = pipeline.functions["ProcessFunction"]
    import boto3

    boto3.client("lambda", region_name="us-east-1").delete_function(FunctionName=pipeline_lambda)
    version, run = pipeline.ingest(KEY, GOOD)

    assert run.status == "FAILED"
    assert run.error == "Lambda.ResourceNotFoundException"
    assert run.path == [
        *HAPPY[:2],
        "ClassifyError",
        "RouteByErrorClass",
        "RecordConfigurationFailure",
        "NotifyOperations",
        "FailExecution",
    ]
    (sent,) = pipeline.notifications("OperationsTopicArn")
    assert sent["message"]["classifiedBy"] == "*ResourceNotFoundException"
    assert pipeline.record(KEY, version)["error_class"] == "CONFIGURATION"  # type: ignore[index]


@pytest.mark.parametrize(
    ("sample", "error", "code"),
    [
        ("orders-bad-header.csv", "HeaderError", "BAD_HEADER"),
        ("orders-bad-values.csv", "ValueTypeError", "BAD_VALUE"),
    ],
)
def test_bad_data_is_quarantined_and_reported(
    pipeline: Pipeline, sample: str, error: str, code: str
) -> None:
    body = sample_file(sample)
    version, run = pipeline.ingest(KEY, body)

    assert run.status == "FAILED"
    assert run.error == error
    assert code in (run.cause or "")
    assert run.path == [
        *HAPPY[:2],
        "QuarantineObject",
        "RecordRejection",
        "NotifyDataQuality",
        "FailExecution",
    ]
    assert run.invocations("invoke") == 2  # bad data is not retried
    quarantined = "quarantine/orders/2026-11-21.csv"
    assert pipeline.read(quarantined) == body
    head = pipeline.s3.head_object(Bucket=pipeline.bucket, Key=quarantined)
    assert head["Metadata"]["error-code"] == code
    assert head["Metadata"]["source-version-id"] == version
    reason = json.loads(pipeline.read(quarantined + ".reason.json"))
    assert reason["code"] == code and reason["line"] is not None
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["status"], record["error_class"], record["quarantine_key"]) == (
        "FAILED",
        "PERMANENT",
        quarantined,
    )
    assert pipeline.keys("processed/") == []
    (sent,) = pipeline.notifications("DataQualityTopicArn")
    assert sent["attributes"]["errorClass"] == "PERMANENT"
    assert sent["message"]["quarantineKey"] == quarantined
    assert sent["message"]["line"] is not None
    assert pipeline.notifications("OperationsTopicArn") == []


def test_unknown_dataset_is_bad_data(pipeline: Pipeline) -> None:
    key = "incoming/invoices/2026.csv"
    _, run = pipeline.ingest(key, GOOD)
    assert run.error == "UnknownDatasetError"
    assert pipeline.read("quarantine/invoices/2026.csv") == GOOD


def test_stale_execution_is_fenced_off(pipeline: Pipeline) -> None:
    gate = pipeline.cloud.faults.gate(pipeline.functions["ProcessFunction"])
    version = pipeline.put(KEY, GOOD)
    stale_input = pipeline.rule_input(pipeline.s3_event(KEY, version))
    stale = pipeline.start(stale_input)
    wait_for(gate.entered.is_set, what="the stale execution to start processing")

    # The lease of the stuck execution is declared expired: a takeover request claims it.
    takeover_input = dict(stale_input)
    cutoff = (datetime.now(UTC) + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    takeover_input["request"] = {"reprocess": False, "staleBefore": cutoff}
    takeover = pipeline.wait(pipeline.start(takeover_input))
    gate.release()
    fenced = pipeline.wait(stale)

    assert takeover.status == "SUCCEEDED" and takeover.path == HAPPY
    assert fenced.status == "FAILED"
    assert fenced.error == "ClaimLost"
    assert fenced.path == [*HAPPY, "FailClaimLost"]
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["status"], record["execution_arn"], record["attempt"]) == (
        "SUCCEEDED",
        takeover.arn,
        2,
    )


def billed_transitions(run: Any) -> int:
    """What Step Functions Standard bills the run: states entered plus retries."""
    return measure("run", run, {}, Counter()).transitions


def test_the_happy_path_and_a_duplicate_cost_their_floor(pipeline: Pipeline) -> None:
    version = pipeline.put(KEY, GOOD)
    event = pipeline.s3_event(KEY, version)
    first = pipeline.wait(pipeline.start(pipeline.rule_input(event)))
    again = pipeline.wait(pipeline.start(pipeline.rule_input(event)))

    assert (first.path, billed_transitions(first)) == (HAPPY, 3)
    assert (again.path, billed_transitions(again)) == (DUPLICATE, 2)
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["status"], record["execution_arn"]) == ("SUCCEEDED", first.arn)


@pytest.mark.parametrize(
    "execution_input",
    [
        {"object": {}},
        {"object": {"key": KEY, "versionId": "v1"}},
        {"object": {"bucket": "b", "versionId": "v1"}},
        {"object": {"bucket": "b", "key": KEY}},  # versionId must be there, string or null
        {"trigger": {"source": "aws.s3"}},
    ],
    ids=["empty-object", "no-bucket", "no-key", "no-version-field", "no-object"],
)
def test_an_input_that_names_no_object_fails_at_once_without_a_record(
    pipeline: Pipeline, execution_input: dict[str, Any]
) -> None:
    """Outside the input contract ({"object": {"bucket", "key", "versionId": string or
    null}}, what the rule, the reconciler and ingestctl build): the claim cannot name a
    record, and a path that matches nothing is States.Runtime, which no Catch handles. The
    execution fails in ClaimObject (the ExecutionsFailed alarm); nothing is written, nothing
    is processed; an object under incoming/ without a record is started by the reconciler's
    missed-event scan."""
    request = {
        "trigger": {"source": "manual", "eventId": "e-1", "eventTime": "2026-11-21T12:00:00Z"},
        "request": {"reprocess": False, "staleBefore": ""},
        **execution_input,
    }
    if "object" in request and "bucket" in request["object"]:
        request["object"]["bucket"] = pipeline.bucket

    run = pipeline.wait(pipeline.start(request))

    assert run.status == "FAILED"
    assert run.error == "States.Runtime"
    assert "could not be found in the input" in (run.cause or "")
    assert run.path == ["ClaimObject"]
    assert pipeline.notifications("OperationsTopicArn") == []
    assert pipeline.ddb.scan(TableName=pipeline.table)["Items"] == []


@pytest.mark.parametrize("missing", [None, "", "null"])
def test_an_input_without_a_version_resolves_it_and_claims_the_real_one(
    pipeline: Pipeline, missing: str | None
) -> None:
    """No Choice in front of the claim: the claim refuses an unusable version, the duplicate
    check finds no record of it and hands it to ResolveObjectVersion, which claims the
    current version. No record is ever keyed on v#null or v#."""
    version = pipeline.put(KEY, GOOD)
    request = pipeline.rule_input(pipeline.s3_event(KEY, version))
    request["object"]["versionId"] = missing

    run = pipeline.wait(pipeline.start(request))

    assert run.status == "SUCCEEDED", run.cause
    assert run.path == [
        "ClaimObject",
        "SkipDuplicateObject",
        "ResolveObjectVersion",
        *HAPPY,
    ]
    assert billed_transitions(run) == 6
    record = pipeline.record(KEY, version)
    assert record is not None and record["status"] == "SUCCEEDED"
    assert record["execution_arn"] == run.arn
    items = pipeline.ddb.scan(TableName=pipeline.table)["Items"]
    assert [item["sk"]["S"] for item in items] == [f"v#{version}"]


def test_an_event_from_an_unversioned_bucket_resolves_through_the_rule(
    pipeline: Pipeline,
) -> None:
    """S3 sends no version-id for an unversioned bucket: the rule's InputTransformer makes
    it null, and the object is claimed under the version HeadObject names."""
    version = pipeline.put(KEY, GOOD)
    event = pipeline.s3_event(KEY, version)
    del event["detail"]["object"]["version-id"]
    request = pipeline.rule_input(event)
    assert request["object"]["versionId"] is None

    run = pipeline.wait(pipeline.start(request))

    assert run.status == "SUCCEEDED", run.cause
    assert run.path == ["ClaimObject", "SkipDuplicateObject", "ResolveObjectVersion", *HAPPY]
    record = pipeline.record(KEY, version)
    assert record is not None and record["status"] == "SUCCEEDED"


def test_a_duplicate_without_a_version_is_resolved_then_a_duplicate(pipeline: Pipeline) -> None:
    version, first = pipeline.ingest(KEY, GOOD)
    request = pipeline.rule_input(pipeline.s3_event(KEY, version))
    request["object"]["versionId"] = None

    again = pipeline.wait(pipeline.start(request))

    assert first.path == HAPPY
    assert again.status == "SUCCEEDED"
    assert again.path == [
        "ClaimObject",
        "SkipDuplicateObject",
        "ResolveObjectVersion",
        *DUPLICATE,
    ]
    assert again.output is not None
    assert again.output["existing"]["Item"]["status"]["S"] == "SUCCEEDED"
    assert again.invocations("invoke") == 1  # ResolveObjectVersion; nothing processed
    assert pipeline.record(KEY, version)["execution_arn"] == first.arn  # type: ignore[index]


def test_an_object_deleted_before_it_was_resolved_is_reported_to_operations(
    pipeline: Pipeline,
) -> None:
    request = pipeline.rule_input(pipeline.s3_event("incoming/orders/gone.csv", "x"))
    request["object"]["versionId"] = None

    run = pipeline.wait(pipeline.start(request))

    assert run.status == "FAILED" and run.error == "ObjectNotFoundError"
    assert run.path[:3] == ["ClaimObject", "SkipDuplicateObject", "ResolveObjectVersion"]
    assert run.path.count("ClaimObject") == 1
    (note,) = pipeline.notifications("OperationsTopicArn")
    assert note["message"]["object"]["key"] == "incoming/orders/gone.csv"


def test_a_process_timeout_is_retried_once_then_escalated_not_retried_for_hours(
    pipeline: Pipeline,
) -> None:
    """A function timeout is not blindly TRANSIENT: after the one retry it is a configuration
    problem (the object does not fit the function's Timeout), so the reconciler leaves it."""
    process = pipeline.functions["ProcessFunction"]
    pipeline.cloud.faults.timeout(process, times=2)
    version, run = pipeline.ingest(KEY, GOOD)

    assert run.status == "FAILED" and run.error == "Sandbox.Timedout"
    assert run.path == [
        *HAPPY[:2],
        "DescribeConfigurationFailure",
        "RecordConfigurationFailure",
        "NotifyOperations",
        "FailExecution",
    ]
    assert pipeline.cloud.invocation_count(process) == 2  # one retry, no more
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["status"], record["retryable"], record["error_class"]) == (
        "FAILED",
        False,
        "CONFIGURATION",
    )
    assert record["open_state"] == "FAILED"  # for an operator to reprocess, not RETRYABLE
    (sent,) = pipeline.notifications("OperationsTopicArn")
    assert sent["attributes"]["errorClass"] == "CONFIGURATION"


def test_an_object_that_cannot_finish_in_time_is_stopped_early_with_its_size() -> None:
    """With the large-file path off (LargeObjectThresholdMiB 0), ProcessFunction projects
    the time the rest of the object needs and gives up as soon as it cannot finish before
    its Timeout: ObjectTooLargeError, once, with the figures."""
    import boto3

    with local_pipeline(parameters={"LargeObjectThresholdMiB": "0"}) as pipeline:
        _cannot_finish_in_time(pipeline, boto3.client("lambda", region_name="us-east-1"))


def _cannot_finish_in_time(pipeline: Pipeline, lam: Any) -> None:
    process = pipeline.functions["ProcessFunction"]
    lam.update_function_configuration(FunctionName=process, Timeout=2)
    rows = [
        f"o-{n},c-{n % 97},{n % 1000}.25,EUR,{n % 9 + 1},2026-11-21T07:55:00+00:00,false"
        for n in range(600_000)
    ]  # about 36 MB: far more than this code converts in 2 s on any machine
    body = "order_id,customer_id,amount,currency,quantity,ordered_at,gift\n" + "\n".join(rows)
    version, run = pipeline.ingest(KEY, body.encode(), timeout=60)

    assert run.status == "FAILED" and run.error == "ObjectTooLargeError"
    assert run.path == [
        *HAPPY[:2],
        "DescribeConfigurationFailure",
        "RecordConfigurationFailure",
        "NotifyOperations",
        "FailExecution",
    ]
    assert pipeline.cloud.invocation_count(process) == 1  # not retried
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["retryable"], record["error_class"], record["error_code"]) == (
        False,
        "CONFIGURATION",
        "OBJECT_TOO_LARGE",
    )
    (sent,) = pipeline.notifications("OperationsTopicArn")
    cause = json.dumps(sent["message"])
    # "in the N s the function has": N is the time left when it started (2 s less set-up)
    assert "MB object cannot be processed in the" in cause and "MemorySize" in cause
    assert pipeline.notifications("DataQualityTopicArn") == []  # the data is not to blame


def test_an_object_that_cannot_finish_in_time_takes_the_large_file_path(
    pipeline: Pipeline,
) -> None:
    """With the large-file path on (the default), the object ProcessFunction cannot finish
    in its time is handed to it at once: split, converted by the Distributed Map, joined."""
    import boto3

    process = pipeline.functions["ProcessFunction"]
    boto3.client("lambda", region_name="us-east-1").update_function_configuration(
        FunctionName=process, Timeout=2
    )
    rows = [
        f"o-{n},c-{n % 97},{n % 1000}.25,EUR,{n % 9 + 1},2026-11-21T07:55:00+00:00,false"
        for n in range(600_000)
    ]
    body = "order_id,customer_id,amount,currency,quantity,ordered_at,gift\n" + "\n".join(rows)
    version, handoff = pipeline.ingest(KEY, body.encode(), timeout=120)

    assert handoff.path == HANDOFF and billed_transitions(handoff) == 4
    run = pipeline.handed_over_to(handoff, timeout=120)
    assert run.status == "SUCCEEDED", run.cause
    assert run.path == LARGE
    assert pipeline.cloud.invocation_count(process) == 1  # handed over, not retried
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["status"], record["outcome"], record["row_count"]) == (
        "SUCCEEDED",
        "PROCESSED",
        600_000,
    )
    assert pipeline.notifications("OperationsTopicArn") == []
