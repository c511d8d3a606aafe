"""A Parallel branch or Map iteration whose task times out fails its state with States.Timeout,
which the state's Catch handles (fixes/sfn_branch_states_errors.py; without it moto ends the
execution with a ValueError about custom error names).

The task long-polls an empty queue for 3 s with TimeoutSeconds 1: the service's own timeout.
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


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(PATTERN, stack_name="branch-errors") as running:
        running.serve(port=0)
        yield running


def client(cloud: LocalCloud, service: str) -> Any:
    return boto3.client(service, endpoint_url=cloud.describe()["endpoint"])


def timing_out(queue_url: str) -> dict[str, Any]:
    """A branch (or item processor) whose one task times out after a second."""
    task = {
        "Type": "Task",
        "Resource": "arn:aws:states:::aws-sdk:sqs:receiveMessage",
        "Parameters": {"QueueUrl": queue_url, "WaitTimeSeconds": 3},
        "TimeoutSeconds": 1,
        "End": True,
    }
    return {"StartAt": "ReceiveMessage", "States": {"ReceiveMessage": task}}


@pytest.mark.parametrize("kind", ["Parallel", "Map"])
def test_a_branch_task_timeout_is_caught_as_states_timeout(cloud: LocalCloud, kind: str) -> None:
    sfn = client(cloud, "stepfunctions")
    queue = client(cloud, "sqs").create_queue(QueueName=f"empty-{kind}")["QueueUrl"]
    body: dict[str, Any] = {"Type": kind}
    if kind == "Parallel":
        body["Branches"] = [timing_out(queue)]
    else:
        body["ItemsPath"] = "$.items"
        body["ItemProcessor"] = timing_out(queue)
    catch = {"ErrorEquals": ["States.Timeout"], "ResultPath": "$.error", "Next": "TimedOut"}
    definition = {
        "StartAt": "RunBranches",
        "States": {
            "RunBranches": {**body, "Catch": [catch], "End": True},
            "TimedOut": {"Type": "Pass", "End": True},
        },
    }
    iam = client(cloud, "iam")
    role = iam.create_role(
        RoleName=f"branch-errors-{kind}", AssumeRolePolicyDocument=json.dumps(TRUST)
    )["Role"]["Arn"]
    allow = {"Effect": "Allow", "Action": "sqs:ReceiveMessage", "Resource": "*"}
    iam.put_role_policy(
        RoleName=f"branch-errors-{kind}",
        PolicyName="receive",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [allow]}),
    )
    machine = sfn.create_state_machine(
        name=f"branch-errors-{kind}", definition=json.dumps(definition), roleArn=role
    )["stateMachineArn"]
    arn = sfn.start_execution(stateMachineArn=machine, input='{"items": [1]}')["executionArn"]
    assert cloud.runtime.wait_until(
        lambda: sfn.describe_execution(executionArn=arn)["status"] != "RUNNING", timeout=30
    )
    run = sfn.describe_execution(executionArn=arn)
    assert run["status"] == "SUCCEEDED", run.get("cause")
    assert json.loads(run["output"])["error"]["Error"] == "States.Timeout"
