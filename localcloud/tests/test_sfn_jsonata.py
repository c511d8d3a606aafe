"""JSONata states and workflow variables run as AWS documents them (fixes/sfn_jsonata.py;
without it every JSONata expression and JSONPath ``$variable`` fails the execution with
States.Runtime ``TypeError('NoneType' object is not callable)``).

The published examples are in published/sfn-jsonata-docs/ (SOURCE.md names the pages); the
other definitions here are small ones for the fields those pages show no runnable example of.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

PATTERN = Path(__file__).parent / "published" / "s3-eventbridge-sfn" / "template.yaml"
DOCS = Path(__file__).parent / "published" / "sfn-jsonata-docs"
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "states.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
ALLOW_SQS = {"Effect": "Allow", "Action": "sqs:*", "Resource": "*"}


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(PATTERN, stack_name="sfn-jsonata", event_delivery=False) as running:
        iam = boto3.client("iam")
        iam.create_role(RoleName="sfn-jsonata", AssumeRolePolicyDocument=json.dumps(TRUST))
        iam.put_role_policy(
            RoleName="sfn-jsonata",
            PolicyName="sqs",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [ALLOW_SQS]}),
        )
        yield running


_COUNT = iter(range(10_000))


def execute(cloud: LocalCloud, definition: dict[str, Any], data: Any = None) -> dict[str, Any]:
    """Runs ``definition`` on ``data``; the finished execution (describe_execution)."""
    sfn = boto3.client("stepfunctions")
    role = f"arn:aws:iam::{cloud.account_id}:role/sfn-jsonata"
    machine = sfn.create_state_machine(
        name=f"jsonata-{next(_COUNT)}", definition=json.dumps(definition), roleArn=role
    )["stateMachineArn"]
    arn = sfn.start_execution(stateMachineArn=machine, input=json.dumps(data or {}))["executionArn"]
    assert cloud.runtime.wait_until(
        lambda: sfn.describe_execution(executionArn=arn)["status"] != "RUNNING", timeout=30
    )
    return dict(sfn.describe_execution(executionArn=arn))


def output(run: dict[str, Any]) -> Any:
    assert run["status"] == "SUCCEEDED", (run.get("error"), run.get("cause"))
    return json.loads(run["output"])


def published(name: str) -> dict[str, Any]:
    return dict(json.loads((DOCS / name).read_text()))


@pytest.mark.parametrize("name", ["01-jsonpath-parameters.json", "02-jsonata-arguments.json"])
def test_the_docs_jsonpath_to_jsonata_conversion_gives_the_same_arguments(
    cloud: LocalCloud, name: str
) -> None:
    example = published(name)
    assert output(execute(cloud, example["definition"], example["input"])) == example["output"]


@pytest.mark.parametrize(
    "name",
    [
        "03-assign-variables.json",
        "04-itemselector-jsonpath.json",
        "05-itemselector-jsonata.json",
        "06-jsonata-functions.json",
    ],
)
def test_a_published_example_gives_the_published_output(cloud: LocalCloud, name: str) -> None:
    example = published(name)
    assert output(execute(cloud, example["definition"], example["input"])) == example["output"]


def test_a_choice_takes_the_first_true_condition_with_its_assign_and_output(
    cloud: LocalCloud,
) -> None:
    example = published("07-choice-condition.json")
    for case in example["cases"]:
        assert output(execute(cloud, example["definition"], case["input"])) == case["output"]


def jsonata(states: dict[str, Any], start: str | None = None) -> dict[str, Any]:
    return {"QueryLanguage": "JSONata", "StartAt": start or next(iter(states)), "States": states}


def test_a_task_sends_its_arguments_and_outputs_from_its_result(cloud: LocalCloud) -> None:
    definition = jsonata(
        {
            "Create": {
                "Type": "Task",
                "Resource": "arn:aws:states:::aws-sdk:sqs:createQueue",
                "Arguments": {"QueueName": "{% $states.input.queue & '-jobs' %}"},
                "Assign": {"url": "{% $states.result.QueueUrl %}"},
                "Output": {"queue": "{% $states.input.queue %}"},
                "Next": "Done",
            },
            "Done": {"Type": "Pass", "Output": {"url": "{% $url %}"}, "End": True},
        }
    )
    result = output(execute(cloud, definition, {"queue": "orders"}))
    assert result["url"].endswith("/orders-jobs")


def test_retry_then_catch_with_error_output_assign_and_output(cloud: LocalCloud) -> None:
    definition = jsonata(
        {
            "Lookup": {
                "Type": "Task",
                "Resource": "arn:aws:states:::aws-sdk:sqs:getQueueUrl",
                "Arguments": {"QueueName": "{% $states.input.queue %}"},
                "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 1, "IntervalSeconds": 1}],
                "Catch": [
                    {
                        "ErrorEquals": ["States.ALL"],
                        "Assign": {"failedQueue": "{% $states.input.queue %}"},
                        "Output": {"error": "{% $states.errorOutput.Error %}"},
                        "Next": "Handled",
                    }
                ],
                "End": True,
            },
            "Handled": {
                "Type": "Pass",
                "Output": {"error": "{% $states.input.error %}", "queue": "{% $failedQueue %}"},
                "End": True,
            },
        }
    )
    run = execute(cloud, definition, {"queue": "missing"})
    result = output(run)
    assert result["queue"] == "missing"
    assert result["error"].endswith(".QueueDoesNotExistException")  # fixes/sfn_sdk_error_names.py
    sfn = boto3.client("stepfunctions")
    events = sfn.get_execution_history(executionArn=run["executionArn"])["events"]
    assert [e["type"] for e in events].count("TaskFailed") == 2  # the retry was made


def test_fail_error_and_cause_are_expressions(cloud: LocalCloud) -> None:
    definition = jsonata(
        {
            "Reject": {
                "Type": "Fail",
                "Error": "{% $states.input.code %}",
                "Cause": "{% 'order ' & $states.input.id & ' rejected' %}",
            }
        }
    )
    run = execute(cloud, definition, {"code": "OrderRejected", "id": "o-1"})
    assert (run["status"], run["error"], run["cause"]) == (
        "FAILED",
        "OrderRejected",
        "order o-1 rejected",
    )


def test_wait_seconds_and_timestamp_are_expressions(cloud: LocalCloud) -> None:
    definition = jsonata(
        {
            "Pause": {"Type": "Wait", "Seconds": "{% $states.input.seconds %}", "Next": "Until"},
            "Until": {
                "Type": "Wait",
                "Timestamp": "{% $states.input.until %}",
                "Output": {"waited": "{% $states.input.seconds %}"},
                "End": True,
            },
        }
    )
    run = execute(cloud, definition, {"seconds": 5, "until": "2020-01-01T00:00:00Z"})
    assert output(run) == {"waited": 5}


def test_an_evaluation_error_is_a_query_evaluation_error_a_catch_handles(
    cloud: LocalCloud,
) -> None:
    failing = {"StartAt": "Add", "States": {"Add": {"Type": "Pass", "End": True}}}
    failing["States"]["Add"]["Output"] = "{% $states.input.n + 'x' %}"
    definition = jsonata(
        {
            "Branch": {
                "Type": "Parallel",
                "Branches": [failing],
                "Catch": [
                    {
                        "ErrorEquals": ["States.QueryEvaluationError"],
                        "Output": {"error": "{% $states.errorOutput.Error %}"},
                        "Next": "Caught",
                    }
                ],
                "End": True,
            },
            "Caught": {"Type": "Succeed"},
        }
    )
    assert output(execute(cloud, definition, {"n": 1})) == {"error": "States.QueryEvaluationError"}
    undefined = jsonata(
        {"Read": {"Type": "Pass", "Output": "{% $states.input.nothing %}", "End": True}}
    )
    run = execute(cloud, undefined, {})
    assert (run["status"], run["error"]) == ("FAILED", "States.QueryEvaluationError")
    assert "returned nothing (undefined)" in run["cause"]


def test_step_functions_functions_and_json_values(cloud: LocalCloud) -> None:
    text = 'he said "hi" \\ \U0001f600'
    definition = jsonata(
        {
            "Keep": {"Type": "Pass", "Assign": {"text": "{% $states.input.text %}"}, "Next": "Use"},
            "Use": {
                "Type": "Pass",
                "Output": {
                    "text": "{% $text %}",
                    "hash": "{% $hash($text, 'SHA-256') %}",
                    "uuid": "{% $length($uuid()) %}",
                    "parsed": "{% $parse($states.input.json) %}",
                    "null": "{% null %}",
                    "started": "{% $exists($states.context.Execution.StartTime) %}",
                },
                "End": True,
            },
        }
    )
    result = output(execute(cloud, definition, {"text": text, "json": '{"a": [1, null]}'}))
    assert result == {
        "text": text,
        "hash": hashlib.sha256(text.encode()).hexdigest(),
        "uuid": 36,
        "parsed": {"a": [1, None]},
        "null": None,
        "started": True,
    }


def test_map_iterations_read_outer_variables(cloud: LocalCloud) -> None:
    item = {"Type": "Pass", "Output": "{% $states.input * $factor %}", "End": True}
    definition = jsonata(
        {
            "Factor": {
                "Type": "Pass",
                "Assign": {"factor": "{% $states.input.factor %}"},
                "Next": "Each",
            },
            "Each": {
                "Type": "Map",
                "Items": "{% $states.input.items %}",
                "ItemProcessor": {"StartAt": "Times", "States": {"Times": item}},
                "End": True,
            },
        }
    )
    assert output(execute(cloud, definition, {"factor": 10, "items": [1, 2, 3]})) == [10, 20, 30]


def test_a_jsonpath_choice_reads_a_variable(cloud: LocalCloud) -> None:
    definition = {
        "StartAt": "Count",
        "States": {
            "Count": {"Type": "Pass", "Assign": {"count.$": "$.count"}, "Next": "Enough"},
            "Enough": {
                "Type": "Choice",
                "Choices": [{"Variable": "$count", "NumericGreaterThan": 40, "Next": "Many"}],
                "Default": "Few",
            },
            "Many": {"Type": "Pass", "Result": {"path": "many"}, "End": True},
            "Few": {"Type": "Pass", "Result": {"path": "few"}, "End": True},
        },
    }
    assert output(execute(cloud, definition, {"count": 42})) == {"path": "many"}
    assert output(execute(cloud, definition, {"count": 2})) == {"path": "few"}
