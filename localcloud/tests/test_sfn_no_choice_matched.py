"""A Choice state with no matching rule and no Default fails with States.NoChoiceMatched
(fixes/sfn_no_choice_matched.py; without it moto fails it as States.Runtime with
RuntimeError('No branching option reached ...'), which no Catch for the AWS name matches).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

PATTERN = Path(__file__).parent / "published" / "s3-eventbridge-sfn" / "template.yaml"
ROLE = "arn:aws:iam::123456789012:role/no-choice-matched"
JSONPATH_RULE = {"Variable": "$.kind", "StringEquals": "cat", "Next": "Cat"}
JSONATA_RULE = {"Condition": "{% $states.input.kind = 'cat' %}", "Next": "Cat"}


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(PATTERN, stack_name="no-choice-matched", event_delivery=False) as running:
        yield running


def choosing(rule: dict[str, Any]) -> dict[str, Any]:
    """A branch whose Choice has one rule and no Default."""
    return {
        "StartAt": "Kind",
        "States": {
            "Kind": {"Type": "Choice", "Choices": [rule]},
            "Cat": {"Type": "Succeed"},
        },
    }


def execute(cloud: LocalCloud, name: str, definition: dict[str, Any]) -> dict[str, Any]:
    sfn = boto3.client("stepfunctions")
    machine = sfn.create_state_machine(name=name, definition=json.dumps(definition), roleArn=ROLE)[
        "stateMachineArn"
    ]
    arn = sfn.start_execution(stateMachineArn=machine, input='{"kind": "dog"}')["executionArn"]
    assert cloud.runtime.wait_until(
        lambda: sfn.describe_execution(executionArn=arn)["status"] != "RUNNING", timeout=30
    )
    return dict(sfn.describe_execution(executionArn=arn))


@pytest.mark.parametrize("language", ["JSONPath", "JSONata"])
def test_the_execution_fails_with_no_choice_matched(cloud: LocalCloud, language: str) -> None:
    definition = choosing(JSONPATH_RULE if language == "JSONPath" else JSONATA_RULE)
    run = execute(cloud, f"no-choice-{language}", {"QueryLanguage": language, **definition})
    assert (run["status"], run["error"]) == ("FAILED", "States.NoChoiceMatched")


@pytest.mark.parametrize("kind", ["Parallel", "Map"])
def test_a_branch_without_a_matching_choice_is_caught_as_no_choice_matched(
    cloud: LocalCloud, kind: str
) -> None:
    body: dict[str, Any] = {"Type": kind}
    if kind == "Parallel":
        body["Branches"] = [choosing(JSONPATH_RULE)]
    else:
        body["ItemsPath"] = "$.items"
        body["ItemProcessor"] = choosing(JSONPATH_RULE)
    catch = {"ErrorEquals": ["States.NoChoiceMatched"], "ResultPath": "$.error", "Next": "Other"}
    definition = {
        "StartAt": "Branches",
        "States": {
            "Branches": {**body, "Catch": [catch], "End": True},
            "Other": {"Type": "Pass", "End": True},
        },
    }
    sfn = boto3.client("stepfunctions")
    machine = sfn.create_state_machine(
        name=f"no-choice-{kind}", definition=json.dumps(definition), roleArn=ROLE
    )["stateMachineArn"]
    arn = sfn.start_execution(
        stateMachineArn=machine, input=json.dumps({"kind": "dog", "items": [{"kind": "dog"}]})
    )["executionArn"]
    assert cloud.runtime.wait_until(
        lambda: sfn.describe_execution(executionArn=arn)["status"] != "RUNNING", timeout=30
    )
    run = sfn.describe_execution(executionArn=arn)
    assert run["status"] == "SUCCEEDED", (run.get("error"), run.get("cause"))
    assert json.loads(run["output"])["error"]["Error"] == "States.NoChoiceMatched"
