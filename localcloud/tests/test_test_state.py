"""The TestState API (features/test_state.py), as the API reference describes its answers:
``status`` SUCCEEDED / FAILED / RETRIABLE / CAUGHT_ERROR, ``nextState``, ``output``,
``error``/``cause`` and ``inspectionData``; a mock replaces the call; without one the call is
made as ``roleArn`` and authorized by the local cloud's IAM.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud
from localcloud.iam.enforcement import acting_as, role

pytestmark = [pytest.mark.e2e]

PATTERN = Path(__file__).parent / "published" / "s3-eventbridge-sfn" / "template.yaml"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:work"
TASK = {
    "Type": "Task",
    "Resource": "arn:aws:states:::lambda:invoke",
    "Parameters": {"FunctionName": FUNCTION, "Payload.$": "$.order"},
    "ResultSelector": {"total.$": "$.Payload.total"},
    "ResultPath": "$.result",
    "Retry": [{"ErrorEquals": ["Lambda.ServiceException"], "MaxAttempts": 2}],
    "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Recover"}],
    "Next": "Done",
}
ORDER = {"order": {"id": "o-1", "total": 3}}


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(PATTERN, stack_name="test-state") as running:
        yield running


def run_state(**kwargs: Any) -> dict[str, Any]:
    kwargs["definition"] = json.dumps(kwargs["definition"])
    kwargs["input"] = json.dumps(kwargs.get("input", {}))
    # TestState's endpoint is sync-states.<region>: without the host prefix, as a client of a
    # local endpoint must be (AWS_DISABLE_HOST_PREFIX_INJECTION=true for the AWS CLI).
    sfn = boto3.client("stepfunctions", config=Config(inject_host_prefix=False))
    return dict(sfn.test_state(**kwargs))


def test_a_mocked_result_runs_the_data_flow(cloud: LocalCloud) -> None:
    answer = run_state(
        definition=TASK,
        input=ORDER,
        inspectionLevel="DEBUG",
        mock={"result": json.dumps({"Payload": {"total": 3}, "StatusCode": 200})},
    )
    assert answer["status"] == "SUCCEEDED" and answer["nextState"] == "Done"
    assert json.loads(answer["output"]) == {**ORDER, "result": {"total": 3}}
    data = answer["inspectionData"]
    assert json.loads(data["afterParameters"]) == {
        "FunctionName": FUNCTION,
        "Payload": ORDER["order"],
    }
    assert json.loads(data["afterResultSelector"]) == {"total": 3}


def test_a_mocked_error_is_retriable_until_the_retrier_is_spent(cloud: LocalCloud) -> None:
    error = {"error": "Lambda.ServiceException", "cause": "busy"}
    first = run_state(definition=TASK, input=ORDER, mock={"errorOutput": error})
    assert first["status"] == "RETRIABLE" and first["error"] == "Lambda.ServiceException"
    spent = run_state(
        definition=TASK,
        input=ORDER,
        mock={"errorOutput": error},
        stateConfiguration={"retrierRetryCount": 2},
    )
    assert spent["status"] == "CAUGHT_ERROR" and spent["nextState"] == "Recover"
    assert json.loads(spent["output"])["error"] == {
        "Error": "Lambda.ServiceException",
        "Cause": "busy",
    }
    uncaught = {k: v for k, v in TASK.items() if k != "Catch"}
    failed = run_state(
        definition=uncaught,
        input=ORDER,
        mock={"errorOutput": {"error": "Order.Invalid", "cause": "no"}},
    )
    assert (failed["status"], failed["error"], failed["cause"]) == ("FAILED", "Order.Invalid", "no")


def test_a_pass_and_a_choice_state(cloud: LocalCloud) -> None:
    passed = run_state(
        definition={"Type": "Pass", "Result": {"ok": True}, "ResultPath": "$.p", "Next": "B"},
        input={"a": 1},
    )
    assert passed["status"] == "SUCCEEDED" and passed["nextState"] == "B"
    assert json.loads(passed["output"]) == {"a": 1, "p": {"ok": True}}
    choice = {
        "Type": "Choice",
        "Choices": [{"Variable": "$.n", "NumericGreaterThan": 1, "Next": "Big"}],
        "Default": "Small",
    }
    assert run_state(definition=choice, input={"n": 2})["nextState"] == "Big"
    assert run_state(definition=choice, input={"n": 0})["nextState"] == "Small"


def test_without_a_mock_the_call_is_made_as_the_role(cloud: LocalCloud) -> None:
    bucket = cloud.outputs["IngestionBucket"]
    boto3.client("s3").put_object(Bucket=bucket, Key="cat.jpg", Body=b"\xff\xd8\xff")
    detect = {
        "Type": "Task",
        "Resource": "arn:aws:states:::aws-sdk:rekognition:detectLabels",
        "Parameters": {"Image": {"S3Object": {"Bucket": bucket, "Name": "cat.jpg"}}},
        "End": True,
    }
    role = cloud.stack.resources["CatDetectorStateMachineRole"] if cloud.stack else ""
    arn = boto3.client("iam").get_role(RoleName=role)["Role"]["Arn"]
    # Rekognition is outside the local cloud's scope (features/service_scope.py): the call,
    # made as the role, is refused whoever makes it, naming the role.
    allowed = run_state(definition=detect, roleArn=arn)
    assert allowed["status"] == "FAILED"
    assert f":assumed-role/{role}/" in allowed["cause"]
    refused = run_state(definition=detect, roleArn="arn:aws:iam::123456789012:role/Nope")
    assert refused["status"] == "FAILED"
    assert refused["error"] == "Rekognition.AccessDeniedException"


def test_a_map_state_needs_a_mock(cloud: LocalCloud) -> None:
    inner = {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}
    with pytest.raises(ClientError) as refused:
        run_state(definition={"Type": "Map", "ItemProcessor": inner, "End": True}, input=[1])
    assert refused.value.response["Error"]["Code"] == "ValidationException"


def test_a_map_fails_past_its_tolerated_failure_percentage(cloud: LocalCloud) -> None:
    inner = {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}
    mapped = {"Type": "Map", "ItemProcessor": inner, "ToleratedFailurePercentage": 20, "End": True}

    def run(failures: int) -> dict[str, Any]:
        return run_state(
            definition=mapped,
            input=list(range(10)),
            mock={"result": json.dumps(list(range(10)))},
            stateConfiguration={"mapIterationFailureCount": failures},
        )

    assert run(2)["status"] == "SUCCEEDED"  # 20% of 10 items: not above the percentage
    failed = run(3)
    assert failed["status"] == "FAILED"
    assert failed["error"] == "States.ExceedToleratedFailureThreshold"
    counted = run_state(
        definition={**mapped, "ToleratedFailureCount": 1},
        input=list(range(10)),
        mock={"result": "[]"},
        stateConfiguration={"mapIterationFailureCount": 2},
    )
    assert counted["status"] == "FAILED"  # either threshold exceeded fails the Map


def test_the_context_is_read_by_context_paths_and_needs_a_mock(cloud: LocalCloud) -> None:
    context = {
        "Execution": {"Id": "arn:aws:states:us-east-1:123456789012:execution:M:e-1"},
        "State": {"Name": "ProcessData", "EnteredTime": "2024-01-01T10:00:05.000Z"},
    }
    task = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {
            "FunctionName": FUNCTION,
            "Payload": {"id.$": "$$.Execution.Id", "state.$": "$$.State.Name"},
        },
        "End": True,
    }
    answer = run_state(
        definition=task,
        context=json.dumps(context),
        inspectionLevel="DEBUG",
        mock={"result": json.dumps({"Payload": {}, "StatusCode": 200})},
    )
    assert json.loads(answer["inspectionData"]["afterParameters"])["Payload"] == {
        "id": context["Execution"]["Id"],
        "state": "ProcessData",
    }
    inner = {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}
    selector = {"run.$": "$$.Execution.Id", "value.$": "$$.Map.Item.Value"}
    mapped = run_state(
        definition={"Type": "Map", "ItemProcessor": inner, "ItemSelector": selector, "End": True},
        input=["a"],
        context=json.dumps(context),
        inspectionLevel="DEBUG",
        mock={"result": "[]"},
    )
    assert json.loads(mapped["inspectionData"]["afterItemSelector"]) == [
        {"run": context["Execution"]["Id"], "value": "a"}
    ]
    with pytest.raises(ClientError) as refused:
        run_state(definition={"Type": "Pass", "End": True}, context=json.dumps(context))
    assert refused.value.response["Error"]["Code"] == "ValidationException"


def test_reveal_secrets_needs_the_callers_states_reveal_secrets(cloud: LocalCloud) -> None:
    iam = boto3.client("iam")
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
    }
    roles = {}
    for name, actions in {"Tester": ["states:TestState"], "Revealer": ["states:*"]}.items():
        arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))
        statement = {"Effect": "Allow", "Action": actions, "Resource": "*"}
        iam.put_role_policy(
            RoleName=name,
            PolicyName="test-state",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [statement]}),
        )
        roles[name] = arn["Role"]["Arn"]
    passed = {"definition": {"Type": "Pass", "End": True}, "revealSecrets": True}
    with acting_as(role(roles["Tester"])):
        assert run_state(**{**passed, "revealSecrets": False})["status"] == "SUCCEEDED"
        with pytest.raises(ClientError) as refused:
            run_state(**passed)
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    with acting_as(role(roles["Revealer"])):
        assert run_state(**passed)["status"] == "SUCCEEDED"


def test_variables_are_read_and_reported_after_the_state(cloud: LocalCloud) -> None:
    """``variables`` seed the state's workflow variables, in JSONata and in JSONPath states;
    inspectionData ``variables`` is the set after the state (the given ones and its Assign)."""
    jsonata = {
        "QueryLanguage": "JSONata",
        "StartAt": "Total",
        "States": {
            "Total": {
                "Type": "Pass",
                "Output": "{% $price * $count %}",
                "Assign": {"total": "{% $price * $count %}"},
                "End": True,
            }
        },
    }
    answer = run_state(
        definition=jsonata,
        stateName="Total",
        variables=json.dumps({"price": 4, "count": 5}),
        inspectionLevel="DEBUG",
    )
    assert (answer["status"], json.loads(answer["output"])) == ("SUCCEEDED", 20)
    variables = json.loads(answer["inspectionData"]["variables"])
    assert variables == {"price": 4, "count": 5, "total": 20}
    jsonpath = {
        "StartAt": "Greet",
        "States": {"Greet": {"Type": "Pass", "Parameters": {"who.$": "$name"}, "End": True}},
    }
    answer = run_state(definition=jsonpath, stateName="Greet", variables='{"name": "Ada"}')
    assert json.loads(answer["output"]) == {"who": "Ada"}
