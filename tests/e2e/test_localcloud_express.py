"""EXPRESS state machines and execution logs run locally as on AWS.

A small standalone SAM stack (not the app's template): three state machines with one
definition (Prepare -> Route -> Done, or the Fail state Broken when the input says so), each
logging to its own CloudWatch Logs group: an EXPRESS one at Level ALL with execution data, an
EXPRESS one at Level ERROR, a STANDARD one at Level ALL without execution data. Each test
asserts what a user of AWS sees: execution ARNs, which APIs answer and how, what the log
groups hold. The fixes: localcloud/fixes/sfn_express_executions.py,
sfn_express_definitions.py, sfn_execution_logs.py (each test named by a fix fails without it,
LOCALCLOUD_WITHOUT=<name>).
"""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from ingest_tools.local_pipeline import wait_execution
from localcloud.cloud import LocalCloud
from localcloud.execution_history import logged_history
from localcloud.features import executions
from tests.support import LOG_DELIVERY_POLICIES

pytestmark = pytest.mark.e2e

WRONG_TYPE = "Invalid Arn: 'Resource type not valid in this context: express'"
NOT_SUPPORTED = "This operation is not supported by this type of state machine"


def _machine(machine_type: str, group: str, level: str, data: bool) -> str:
    return f"""
  {group}:
    Type: AWS::Logs::LogGroup
    Properties:
      LogGroupName: !Sub /aws/vendedlogs/states/${{AWS::StackName}}-{group}
  {group}Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      Type: {machine_type}
      Logging:
        Level: {level}
        IncludeExecutionData: {str(data).lower()}
        Destinations:
          - CloudWatchLogsLogGroup: {{LogGroupArn: !GetAtt {group}.Arn}}
{textwrap.indent(LOG_DELIVERY_POLICIES, "      ")}      Definition:
        StartAt: Prepare
        States:
          Prepare: {{Type: Pass, ResultPath: $.prepared, Result: true, Next: Route}}
          Route:
            Type: Choice
            Choices:
              - {{Variable: $.fail, IsPresent: true, Next: Broken}}
            Default: Done
          Done: {{Type: Pass, End: true}}
          Broken: {{Type: Fail, Error: Broken, Cause: asked to fail}}
"""


TEMPLATE = f"""\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
{_machine("EXPRESS", "ExpressAll", "ALL", True)}
{_machine("EXPRESS", "ExpressErrors", "ERROR", True)}
{_machine("STANDARD", "StandardAll", "ALL", False)}
Outputs:
  ExpressAll: {{Value: !Ref ExpressAllMachine}}
  ExpressErrors: {{Value: !Ref ExpressErrorsMachine}}
  StandardAll: {{Value: !Ref StandardAllMachine}}
  ExpressAllGroup: {{Value: !Ref ExpressAll}}
  ExpressErrorsGroup: {{Value: !Ref ExpressErrors}}
  StandardAllGroup: {{Value: !Ref StandardAll}}
"""


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    root = tmp_path_factory.mktemp("express-stack")
    (root / "template.yaml").write_text(TEMPLATE)
    with LocalCloud(root / "template.yaml", stack_name="express-test", event_delivery=False) as c:
        yield c


def _start(cloud: LocalCloud, machine: str, name: str | None = None, **payload: Any) -> str:
    return str(
        boto3.client("stepfunctions").start_execution(
            stateMachineArn=cloud.outputs[machine],
            name=name or uuid.uuid4().hex,
            input=json.dumps(payload),
        )["executionArn"]
    )


def _records(cloud: LocalCloud, group: str, arn: str) -> list[dict[str, Any]]:
    """The raw log records of one execution, in id order."""
    events = boto3.client("logs").filter_log_events(logGroupName=cloud.outputs[group])["events"]
    records = [json.loads(e["message"]) for e in events]
    return sorted((r for r in records if r["execution_arn"] == arn), key=lambda r: int(r["id"]))


def _error(call: Any, **kwargs: Any) -> dict[str, str]:
    with pytest.raises(ClientError) as raised:
        call(**kwargs)
    error = raised.value.response["Error"]
    return {"Code": str(error.get("Code")), "Message": str(error.get("Message"))}


def test_stack_state_machines_have_their_type_and_logging(cloud: LocalCloud) -> None:
    sfn = boto3.client("stepfunctions")
    express = sfn.describe_state_machine(stateMachineArn=cloud.outputs["ExpressAll"])
    standard = sfn.describe_state_machine(stateMachineArn=cloud.outputs["StandardAll"])

    assert (express["type"], standard["type"]) == ("EXPRESS", "STANDARD")
    logging = express["loggingConfiguration"]
    assert (logging["level"], logging["includeExecutionData"]) == ("ALL", True)
    (destination,) = logging["destinations"]
    assert cloud.outputs["ExpressAllGroup"] in destination["cloudWatchLogsLogGroup"]["logGroupArn"]


def test_express_executions_with_one_name_run_concurrently_under_express_arns(
    cloud: LocalCloud,
) -> None:
    name = f"same-{uuid.uuid4().hex[:8]}"
    first = _start(cloud, "ExpressAll", name)
    second = _start(cloud, "ExpressAll", name)

    machine_name = cloud.outputs["ExpressAll"].rsplit(":", 1)[-1]
    prefix = f"arn:aws:states:us-east-1:{cloud.account_id}:express:{machine_name}:{name}:"
    assert first.startswith(prefix) and second.startswith(prefix)
    assert first != second
    uuid.UUID(first.rsplit(":", 1)[-1])  # AWS's form: <name>:<uuid>
    statuses = {wait_execution(cloud, arn).status for arn in (first, second)}
    assert statuses == {"SUCCEEDED"}  # two executions, both ran


def test_execution_apis_refuse_express_executions_with_aws_errors(cloud: LocalCloud) -> None:
    sfn = boto3.client("stepfunctions")
    arn = _start(cloud, "ExpressAll")
    wait_execution(cloud, arn)

    for call in (
        sfn.describe_execution,
        sfn.get_execution_history,
        sfn.stop_execution,
        sfn.describe_state_machine_for_execution,
        sfn.redrive_execution,
    ):
        assert _error(call, executionArn=arn) == {"Code": "InvalidArn", "Message": WRONG_TYPE}
    listed = _error(sfn.list_executions, stateMachineArn=cloud.outputs["ExpressAll"])
    assert listed == {"Code": "StateMachineTypeNotSupported", "Message": NOT_SUPPORTED}


def test_standard_executions_keep_their_apis_and_name_idempotency(cloud: LocalCloud) -> None:
    sfn = boto3.client("stepfunctions")
    name = uuid.uuid4().hex
    arn = _start(cloud, "StandardAll", name)
    assert ":execution:" in arn
    assert wait_execution(cloud, arn).status == "SUCCEEDED"

    assert sfn.describe_execution(executionArn=arn)["status"] == "SUCCEEDED"
    assert sfn.get_execution_history(executionArn=arn)["events"]
    listed = sfn.list_executions(stateMachineArn=cloud.outputs["StandardAll"])["executions"]
    assert arn in {e["executionArn"] for e in listed}
    assert _error(sfn.start_execution, stateMachineArn=cloud.outputs["StandardAll"], name=name)[
        "Code"
    ] == ("ExecutionAlreadyExists")


def test_express_state_machine_refuses_callback_job_and_activity_tasks(
    cloud: LocalCloud,
) -> None:
    sfn = boto3.client("stepfunctions")
    role = f"arn:aws:iam::{cloud.account_id}:role/express-test"
    resources = {
        "Publish": "arn:aws:states:::sns:publish.waitForTaskToken",
        "StartExecution": "arn:aws:states:::states:startExecution.sync:2",
        "ActivityTask": f"arn:aws:states:us-east-1:{cloud.account_id}:activity:work",
    }
    messages = {}
    for state, resource in resources.items():
        definition = {
            "StartAt": state,
            "States": {state: {"Type": "Task", "Resource": resource, "End": True}},
        }
        messages[state] = _error(
            sfn.create_state_machine,
            name=f"illegal-{state}",
            definition=json.dumps(definition),
            roleArn=role,
            type="EXPRESS",
        )

    prefix = "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: Express state machine"
    assert messages == {
        "Publish": {
            "Code": "InvalidDefinition",
            "Message": f"{prefix} does not support '.waitForTaskToken' service integration  "
            "at /States/Publish/Resource'",
        },
        "StartExecution": {
            "Code": "InvalidDefinition",
            "Message": f"{prefix} does not support '.sync' service integration at "
            "/States/StartExecution/Resource'",
        },
        "ActivityTask": {
            "Code": "InvalidDefinition",
            "Message": f"{prefix} does not support Activity ARN at /States/ActivityTask/Resource'",
        },
    }
    # the same definitions are valid for a STANDARD state machine
    standard = {
        "StartAt": "Publish",
        "States": {"Publish": {"Type": "Task", "Resource": resources["Publish"], "End": True}},
    }
    sfn.create_state_machine(
        name="callback-standard", definition=json.dumps(standard), roleArn=role
    )


def test_logging_all_with_data_writes_every_event_to_the_log_group(cloud: LocalCloud) -> None:
    arn = _start(cloud, "ExpressAll", note="hello")
    wait_execution(cloud, arn)

    records = _records(cloud, "ExpressAllGroup", arn)
    assert [r["type"] for r in records] == [
        "ExecutionStarted",
        "PassStateEntered",
        "PassStateExited",
        "ChoiceStateEntered",
        "ChoiceStateExited",
        "PassStateEntered",
        "PassStateExited",
        "ExecutionSucceeded",
    ]
    started, end = records[0], records[-1]
    assert list(started) == [
        "id",
        "type",
        "details",
        "previous_event_id",
        "event_timestamp",
        "execution_arn",
        "redrive_count",
    ]
    assert (started["id"], started["previous_event_id"], started["redrive_count"]) == (
        "1",
        "0",
        "0",
    )
    assert started["event_timestamp"].isdigit()
    assert json.loads(started["details"]["input"]) == {"note": "hello"}
    assert started["details"]["inputDetails"] == {"truncated": False}
    assert json.loads(end["details"]["output"]) == {"note": "hello", "prepared": True}

    streams = boto3.client("logs").describe_log_streams(
        logGroupName=cloud.outputs["ExpressAllGroup"]
    )
    machine_name = cloud.outputs["ExpressAll"].rsplit(":", 1)[-1]
    for stream in streams["logStreams"]:
        states, name, minute, suffix = stream["logStreamName"].split("/")
        assert (states, name, len(minute), len(suffix)) == ("states", machine_name, 16, 8)


def test_level_error_logs_only_the_failures(cloud: LocalCloud) -> None:
    succeeded = _start(cloud, "ExpressErrors")
    failed = _start(cloud, "ExpressErrors", fail=True)
    assert wait_execution(cloud, succeeded).status == "SUCCEEDED"
    assert wait_execution(cloud, failed).status == "FAILED"

    assert _records(cloud, "ExpressErrorsGroup", succeeded) == []
    records = _records(cloud, "ExpressErrorsGroup", failed)
    assert [r["type"] for r in records] == ["FailStateEntered", "ExecutionFailed"]
    assert records[-1]["details"] == {"error": "Broken", "cause": "asked to fail"}


def test_a_standard_machine_logs_its_events_without_data(cloud: LocalCloud) -> None:
    arn = _start(cloud, "StandardAll", secret="not logged")
    wait_execution(cloud, arn)

    history = boto3.client("stepfunctions").get_execution_history(executionArn=arn)["events"]
    records = _records(cloud, "StandardAllGroup", arn)
    assert [r["type"] for r in records] == [e["type"] for e in history]
    assert records[0]["details"] == {
        "roleArn": history[0]["executionStartedEventDetails"]["roleArn"]
    }
    assert records[-1]["details"] == {}  # ExecutionSucceeded without its output
    assert "not logged" not in json.dumps(records)


def test_wait_reads_an_express_execution_from_its_logs(cloud: LocalCloud) -> None:
    succeeded = wait_execution(cloud, _start(cloud, "ExpressAll", note="x"))
    failed = wait_execution(cloud, _start(cloud, "ExpressAll", fail=True))

    assert succeeded.status == "SUCCEEDED"
    assert succeeded.path == ["Prepare", "Route", "Done"]
    assert succeeded.output == {"note": "x", "prepared": True}
    first = succeeded.history[0]
    assert (first["type"], first["id"], first["previousEventId"]) == ("ExecutionStarted", 1, 0)
    assert "executionStartedEventDetails" in first
    assert (failed.status, failed.error, failed.cause) == ("FAILED", "Broken", "asked to fail")
    assert failed.path == ["Prepare", "Route", "Broken"]


def test_an_express_execution_lost_midway_ends_aborted(cloud: LocalCloud) -> None:
    """``executions.abort``: the test-only lever for what StopExecution cannot do to Express."""
    sfn = boto3.client("stepfunctions")
    role = f"arn:aws:iam::{cloud.account_id}:role/express-test"
    waits = {"StartAt": "Hold", "States": {"Hold": {"Type": "Wait", "Seconds": 5, "End": True}}}
    logging = boto3.client("stepfunctions").describe_state_machine(
        stateMachineArn=cloud.outputs["ExpressAll"]
    )["loggingConfiguration"]
    machine = sfn.create_state_machine(
        name="express-hold",
        definition=json.dumps(waits),
        roleArn=role,
        type="EXPRESS",
        loggingConfiguration=logging,
    )["stateMachineArn"]
    cloud.time_scale = 1.0  # the Wait really waits, so that there is time to stop it
    try:
        arn = sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]
        cloud.runtime.wait_until(
            lambda: any(
                r["type"] == "WaitStateEntered" for r in _records(cloud, "ExpressAllGroup", arn)
            ),
            5,
        )
        executions.abort(arn, error="Lost", cause="aborted")
        ended = wait_execution(cloud, arn, timeout=10)
    finally:
        cloud.time_scale = 0.0

    assert ended.status == "ABORTED"
    assert ended.history[-1]["type"] == "ExecutionAborted"
    assert (
        logged_history(boto3.client("logs"), cloud.outputs["ExpressAllGroup"], arn) == ended.history
    )
