"""The pure rules of the local cloud's Express and execution-log support: ARNs and refusals
(fixes/sfn_express_executions.py), definitions (sfn_express_definitions.py), log records and
streams (sfn_execution_logs.py), histories rebuilt from logs (execution_history.py) and the
parameter overrides from the environment (cloud.py)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace

import botocore.session
import pytest
from moto.stepfunctions.exceptions import InvalidArn

from localcloud.cloud import (
    PARAMETER_OVERRIDES_VARIABLE,
    LocalCloud,
    parameter_overrides,
)
from localcloud.execution_history import details_key, history_event, log_group_name
from localcloud.fixes.sfn_execution_logs import (
    log_record,
    logging_configuration,
    stream_name,
)
from localcloud.fixes.sfn_express_definitions import express_definition_problem
from localcloud.fixes.sfn_express_executions import (
    dispatched_by_map_run,
    express_execution_arn,
    is_express_execution_arn,
    refuse_express_execution,
)

pytestmark = pytest.mark.unit

MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:orders"
STANDARD = "arn:aws:states:us-east-1:123456789012:execution:orders:run-1"


def test_an_express_execution_arn_is_awss() -> None:
    arn = express_execution_arn(STANDARD)
    prefix, _, suffix = arn.rpartition(":")
    assert prefix == "arn:aws:states:us-east-1:123456789012:express:orders:run-1"
    assert len(suffix) == 36  # a UUID
    assert is_express_execution_arn(arn) and not is_express_execution_arn(STANDARD)
    with pytest.raises(ValueError):
        express_execution_arn(MACHINE)


def test_only_express_executions_not_dispatched_by_a_map_run_are_refused() -> None:
    with pytest.raises(InvalidArn, match="Resource type not valid in this context: express"):
        refuse_express_execution(express_execution_arn(STANDARD))
    child = "arn:aws:states:us-east-1:123456789012:express:orders/Chunks:0f1e:7a9b"
    assert dispatched_by_map_run(child)
    refuse_express_execution(child)  # DescribeExecution supports Map Run children
    refuse_express_execution(STANDARD)


def _task(resource: str) -> dict[str, object]:
    return {"Type": "Task", "Resource": resource, "End": True}


@pytest.mark.parametrize(
    ("resource", "says"),
    [
        ("arn:aws:states:::sqs:sendMessage.waitForTaskToken", "'.waitForTaskToken' service"),
        ("arn:aws:states:::states:startExecution.sync", "'.sync' service"),
        ("arn:aws:states:::states:startExecution.sync:2", "'.sync' service"),
        ("arn:aws:states:us-east-1:123456789012:activity:work", "Activity ARN"),
    ],
)
def test_express_definitions_refuse_what_aws_refuses_nested_too(resource: str, says: str) -> None:
    inner = {"StartAt": "T", "States": {"T": _task(resource)}}
    definition = {
        "StartAt": "M",
        "States": {
            "M": {"Type": "Map", "ItemProcessor": inner, "Next": "P"},
            "P": {"Type": "Parallel", "Branches": [inner], "End": True},
        },
    }
    problem = express_definition_problem(json.dumps(definition))
    assert problem is not None and says in problem
    assert problem.endswith("at /States/M/ItemProcessor/States/T/Resource'")
    top = express_definition_problem({"StartAt": "T", "States": {"T": _task(resource)}})
    assert top is not None and top.endswith("at /States/T/Resource'")


def test_express_definitions_accept_request_response_tasks() -> None:
    definition = {"StartAt": "T", "States": {"T": _task("arn:aws:states:::lambda:invoke")}}
    assert express_definition_problem(definition) is None
    assert express_definition_problem("not json") is None  # moto's parser reports it


def test_a_log_record_is_in_awss_format() -> None:
    history_log = {
        "id": "3",
        "previous_event_id": "2",
        "event_timestamp": "2026-01-02T03:04:05.678Z",
        "type": "PassStateExited",
        "execution_arn": STANDARD,
        "details": {"name": "P", "output": "{}"},
    }
    record = log_record(history_log)
    assert record == {
        "id": "3",
        "type": "PassStateExited",
        "details": {"name": "P", "output": "{}"},
        "previous_event_id": "2",
        "event_timestamp": "1767323045678",
        "execution_arn": STANDARD,
        "redrive_count": "0",
    }
    assert list(record) == [
        "id",
        "type",
        "details",
        "previous_event_id",
        "event_timestamp",
        "execution_arn",
        "redrive_count",
    ]
    no_details = {k: v for k, v in history_log.items() if k != "details"}
    assert log_record(no_details)["details"] == {}


def test_log_streams_are_named_as_aws_names_them() -> None:
    started = dt.datetime(2022, 11, 10, 15, 50, 39, tzinfo=dt.UTC)
    name = stream_name("logs-to-traces-sequential", started, "7851b2d9")
    assert name == "states/logs-to-traces-sequential/2022-11-10-15-50/7851b2d9"


def test_a_logging_configuration_off_or_absent_logs_nothing() -> None:
    assert logging_configuration(SimpleNamespace(loggingConfiguration={"level": "OFF"})) is None
    assert logging_configuration(object()) is None
    machine = SimpleNamespace(
        loggingConfiguration={"level": "ERROR", "includeExecutionData": "false"}
    )
    assert logging_configuration(machine) == {
        "level": "ERROR",
        "includeExecutionData": False,
        "destinations": [],
    }


def test_every_event_type_maps_to_its_get_execution_history_field() -> None:
    model = botocore.session.get_session().get_service_model("stepfunctions")
    fields = set(model.shape_for("HistoryEvent").members)  # type: ignore[attr-defined]
    # Event types whose HistoryEvent carries no details (nothing to map).
    without_details = {
        "LambdaFunctionStarted",
        "MapStateAborted",
        "MapStateFailed",
        "MapStateSucceeded",
        "ParallelStateAborted",
        "ParallelStateFailed",
        "ParallelStateStarted",
        "ParallelStateSucceeded",
        "TaskStateAborted",
        "WaitStateAborted",
        "MapRunAborted",
        "MapRunSucceeded",
    }
    for event_type in model.shape_for("HistoryEventType").enum:  # type: ignore[attr-defined]
        assert event_type in without_details or details_key(event_type) in fields, event_type


def test_a_logged_record_becomes_a_history_event() -> None:
    record = {
        "id": "2",
        "type": "TaskStateEntered",
        "details": {"name": "Process", "input": "{}"},
        "previous_event_id": "1",
        "event_timestamp": "1767323045678",
        "execution_arn": STANDARD,
        "redrive_count": "0",
    }
    assert history_event(record) == {
        "timestamp": dt.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC),
        "type": "TaskStateEntered",
        "id": 2,
        "previousEventId": 1,
        "stateEnteredEventDetails": {"name": "Process", "input": "{}"},
    }
    assert "executionSucceededEventDetails" not in history_event(
        {**record, "type": "ExecutionSucceeded", "details": {}}
    )


def test_the_log_group_of_a_logging_configuration() -> None:
    arn = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/vendedlogs/states/x-pipeline:*"
    config = {"level": "ALL", "destinations": [{"cloudWatchLogsLogGroup": {"logGroupArn": arn}}]}
    assert log_group_name(config) == "/aws/vendedlogs/states/x-pipeline"
    assert log_group_name({**config, "level": "OFF"}) is None
    assert log_group_name(None) is None


def test_parameter_overrides_are_read_as_sam_deploy_reads_them() -> None:
    text = "WorkflowType=EXPRESS Environment='prod stage' ParameterKey=A,ParameterValue=b=c"
    assert parameter_overrides(text) == {
        "WorkflowType": "EXPRESS",
        "Environment": "prod stage",
        "A": "b=c",
    }
    with pytest.raises(ValueError, match="not Key=Value"):
        parameter_overrides("WorkflowType")


def test_environment_overrides_apply_the_keys_a_template_declares_under_explicit_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(
        "Parameters:\n"
        "  WorkflowType: {Type: String, Default: STANDARD}\n"
        "  Stage: {Type: String, Default: dev}\n"
        "Resources: {}\n"
    )
    bare = tmp_path / "bare.yaml"
    bare.write_text("Resources: {}\n")
    monkeypatch.setenv(PARAMETER_OVERRIDES_VARIABLE, "WorkflowType=EXPRESS Stage=qa Unknown=1")

    clouds = [
        LocalCloud(template),
        LocalCloud(template, parameters={"Stage": "prod"}),
        LocalCloud(bare),
    ]
    try:
        assert [c.parameters for c in clouds] == [
            {"WorkflowType": "EXPRESS", "Stage": "qa"},
            {"WorkflowType": "EXPRESS", "Stage": "prod"},
            {},
        ]
    finally:
        for cloud in clouds:
            cloud.runtime.close()
