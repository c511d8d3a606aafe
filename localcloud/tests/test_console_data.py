"""The console's data layer (localcloud/console/): a definition's graph, the state machines and
executions of a running cloud, one execution's history (paged), path and highlighted nodes,
and their routes under /_localcloud/console/api/.

The state machine is the published s3-eventbridge-sfn pattern's; its executions run the
MockConfigFile test cases below (features/mock_config.py), so no image is needed. The graph
is checked against sets of states and transitions this file derives from each definition on
its own (``states_and_edges``), and on the application's two definitions read as JSON files
(test data, not an import of the application).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from test_published_patterns import served_pattern

from localcloud.cloud import LocalCloud
from localcloud.console import data
from localcloud.console.graph import graph

pytestmark = [pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]
LABELS = {"Labels": [{"Name": "Cat", "Confidence": 99.0, "Parents": []}]}
INPUT = json.dumps({"detail": {"bucket": {"name": "b"}, "object": {"key": "photos/cat.jpg"}}})
RETRY_MACHINE = "ConsoleRetry"
RETRY_DEFINITION = {
    "StartAt": "Detect",
    "States": {
        "Detect": {
            "Type": "Task",
            "Resource": "arn:aws:states:::aws-sdk:rekognition:detectLabels",
            "Parameters": {"Image": {"S3Object": {"Bucket": "b", "Name": "k"}}},
            "Retry": [{"ErrorEquals": ["Rekognition.ThrottlingException"], "MaxAttempts": 2}],
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Handle"}],
            "Next": "Done",
        },
        "Done": {"Type": "Pass", "End": True},
        "Handle": {"Type": "Fail", "Error": "Handled", "Cause": "detection failed"},
    },
}


# --- an independent reading of a definition ------------------------------------------------
def states_and_edges(
    definition: dict[str, Any],
) -> tuple[list[str], set[tuple[str, str, str]]]:
    """Every state name (nested too) and every (source, target, kind) transition, "End" for
    End/Succeed/Fail, walked straight from the definition."""
    names: list[str] = []
    edges: set[tuple[str, str, str]] = set()
    bodies = [definition]
    while bodies:
        body = bodies.pop()
        for name, state in body["States"].items():
            names.append(name)
            if "Next" in state:
                edges.add((name, state["Next"], "next"))
            edges.update((name, rule["Next"], "choice") for rule in state.get("Choices", []))
            if "Default" in state:
                edges.add((name, state["Default"], "default"))
            edges.update((name, catch["Next"], "catch") for catch in state.get("Catch", []))
            if state.get("End") or state["Type"] in ("Succeed", "Fail"):
                edges.add((name, "End", "end"))
            bodies.extend(state.get("Branches", []))
            bodies.extend(state[key] for key in ("ItemProcessor", "Iterator") if key in state)
    return names, edges


def drawn(result: dict[str, Any]) -> tuple[list[str], set[tuple[str, str, str]]]:
    """The same two things as the graph draws them (node labels, edges by label)."""
    labels = {node["id"]: node["label"] for node in result["nodes"]}
    names = [n["label"] for n in result["nodes"] if n["type"] not in ("Start", "End")]
    edges = {
        (labels[e["source"]], labels[e["target"]], e["kind"])
        for e in result["edges"]
        if e["kind"] != "start"
    }
    return names, edges


def assert_graph_matches(definition: dict[str, Any]) -> dict[str, Any]:
    result = graph(definition)
    names, edges = states_and_edges(definition)
    drawn_names, drawn_edges = drawn(result)
    assert sorted(drawn_names) == sorted(names)
    assert drawn_edges == edges
    ids = [node["id"] for node in result["nodes"]]
    assert len(ids) == len(set(ids))
    assert {e["source"] for e in result["edges"]} | {e["target"] for e in result["edges"]} <= set(
        ids
    )
    return result


# --- graph(), no cloud -----------------------------------------------------------------------
HAND_WRITTEN: dict[str, Any] = {
    "StartAt": "Route",
    "States": {
        "Route": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.x", "StringEquals": "a", "Next": "Work"},
                {
                    "And": [
                        {"Variable": "$.aVeryLongVariableName.nested.deeper", "IsPresent": True},
                        {"Variable": "$.anotherLongName.nested.deeper", "NumericGreaterThan": 3},
                    ],
                    "Next": "Fan",
                },
            ],
            "Default": "Chunks",
        },
        "Work": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Retry": [{"ErrorEquals": ["Lambda.TooManyRequestsException"], "MaxAttempts": 5}],
            "Catch": [{"ErrorEquals": ["States.Timeout", "States.TaskFailed"], "Next": "Broken"}],
            "Next": "Done",
        },
        "Fan": {
            "Type": "Parallel",
            "Branches": [
                {"StartAt": "Left", "States": {"Left": {"Type": "Pass", "End": True}}},
                {
                    "StartAt": "Right",
                    "States": {
                        "Right": {
                            "Type": "Task",
                            "Resource": "arn:aws:states:::dynamodb:updateItem",
                            "End": True,
                        }
                    },
                },
            ],
            "Next": "Done",
        },
        "Chunks": {
            "Type": "Map",
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"},
                "StartAt": "Process",
                "States": {
                    "Process": {"Type": "Wait", "Seconds": 1, "Next": "Checked"},
                    "Checked": {"Type": "Succeed"},
                },
            },
            "Next": "Done",
        },
        "Done": {"Type": "Succeed"},
        "Broken": {"Type": "Fail", "Error": "Broken"},
    },
}


def test_graph_of_a_hand_written_definition() -> None:
    result = assert_graph_matches(HAND_WRITTEN)
    nodes = {node["id"]: node for node in result["nodes"]}
    edges = {(e["source"], e["target"], e["kind"]): e for e in result["edges"]}

    assert ("States#start", "States.Route", "start") in edges
    assert edges["States.Route", "States.Work", "choice"]["label"] == "$.x == 'a'"
    assert edges["States.Route", "States.Fan", "choice"]["label"] == "rule 2"
    assert ("States.Route", "States.Chunks", "default") in edges
    catch = edges["States.Work", "States.Broken", "catch"]
    assert catch["label"] == "States.Timeout, States.TaskFailed"
    assert ("States.Broken", "States#end", "end") in edges
    assert nodes["States.Work"]["resource"] == "lambda:invoke"
    assert nodes["States.Work"]["retry"][0]["errorEquals"] == ["Lambda.TooManyRequestsException"]
    assert nodes["States.Work"]["retry"][0]["maxAttempts"] == 5
    assert nodes["States.Fan"]["children"] == ["States.Fan/Branch0", "States.Fan/Branch1"]
    right = nodes["States.Fan/Branch1/Right"]
    assert (right["group"], right["resource"]) == ("States.Fan/Branch1", "dynamodb:updateItem")
    assert ("States.Fan/Branch1/Right", "States.Fan/Branch1#end", "end") in edges
    assert nodes["States.Chunks"]["children"] == ["States.Chunks/ItemProcessor"]
    assert nodes["States.Chunks"]["mode"] == "DISTRIBUTED"
    assert nodes["States.Chunks/ItemProcessor/Process"]["type"] == "Wait"
    assert (
        "States.Chunks/ItemProcessor/Process",
        "States.Chunks/ItemProcessor/Checked",
        "next",
    ) in edges
    groups = {group["id"]: group["parent"] for group in result["groups"]}
    assert groups == {
        "States": None,
        "States.Fan/Branch0": "States.Fan",
        "States.Fan/Branch1": "States.Fan",
        "States.Chunks/ItemProcessor": "States.Chunks",
    }


def test_graph_of_a_jsonata_choice_and_a_legacy_iterator() -> None:
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Pick",
        "States": {
            "Pick": {
                "Type": "Choice",
                "Choices": [{"Condition": "{% $states.input.n > 3 %}", "Next": "Each"}],
                "Default": "Each",
            },
            "Each": {
                "Type": "Map",
                "Iterator": {"StartAt": "One", "States": {"One": {"Type": "Pass", "End": True}}},
                "End": True,
            },
        },
    }
    result = assert_graph_matches(definition)
    labels = {e["label"] for e in result["edges"] if e["kind"] == "choice"}
    assert labels == {"$states.input.n > 3"}
    assert result["queryLanguage"] == "JSONata"
    assert "States.Each/ItemProcessor/One" in {node["id"] for node in result["nodes"]}


@pytest.mark.parametrize("name", ["pipeline.asl.json", "large-object.asl.json"])
def test_graph_of_the_application_definitions(name: str) -> None:
    definition = json.loads((REPO / "statemachines" / name).read_text())
    result = assert_graph_matches(definition)
    tasks = [node for node in result["nodes"] if node["type"] == "Task"]
    assert tasks and all(node["resource"] for node in tasks)
    assert any(node.get("retry") for node in tasks)


@pytest.mark.parametrize("odd", [[], "not json", {"States": {}}, {"StartAt": "A"}, 3])
def test_what_is_not_a_definition_is_a_value_error(odd: Any) -> None:
    with pytest.raises(ValueError, match="not a state machine definition"):
        graph(odd)


def test_an_odd_definition_is_drawn_without_crashing() -> None:
    result = graph(
        {
            "StartAt": "A",
            "States": {
                "A": {"Type": "Teleport", "Next": "Nowhere"},
                "B": "not a state",
                "C": {"Type": "Parallel", "Branches": [None], "End": True},
            },
        }
    )
    types = {node["id"]: node["type"] for node in result["nodes"]}
    assert types["States.A"] == "Teleport"
    assert types["States.Nowhere"] == "Missing"
    assert types["States.B"] == "Unknown"


# --- a running cloud -------------------------------------------------------------------------
def mock_config(pattern_machine: str) -> dict[str, Any]:
    throttled = {"Throw": {"Error": "Rekognition.ThrottlingException", "Cause": "slow down"}}
    denied = {"Throw": {"Error": "Rekognition.AccessDeniedException", "Cause": "denied"}}
    return {
        "StateMachines": {
            pattern_machine: {
                "TestCases": {
                    "CatFound": {"DetectLabels": "Labels"},
                    "Denied": {"DetectLabels": "Denied"},
                }
            },
            RETRY_MACHINE: {
                "TestCases": {
                    "RetryThenLabels": {"Detect": "ThrottledThenLabels"},
                    "AlwaysDenied": {"Detect": "Denied"},
                }
            },
        },
        "MockedResponses": {
            "Labels": {"0": {"Return": LABELS}},
            "ThrottledThenLabels": {"0": throttled, "1": {"Return": LABELS}},
            "Denied": {"0": denied},
        },
    }


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with served_pattern("console", {RETRY_MACHINE: RETRY_DEFINITION}, mock_config) as running:
        yield running


def machine(cloud: LocalCloud, name: str | None = None) -> str:
    arn = cloud.outputs["CatDetectorStateMachine"]
    return arn if name is None else arn.rsplit(":", 1)[0] + ":" + name


def run(cloud: LocalCloud, machine_arn: str, test_case: str) -> str:
    sfn = boto3.client("stepfunctions")
    started = sfn.start_execution(stateMachineArn=f"{machine_arn}#{test_case}", input=INPUT)
    cloud.settle()
    return str(started["executionArn"])


def get(cloud: LocalCloud, route: str, **query: Any) -> tuple[int, Any]:
    url = f"{cloud.describe()['endpoint']}/_localcloud/console/api/{route}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    try:
        with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 (http://127.0.0.1)
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_state_machines_carry_the_graph_of_their_definition(cloud: LocalCloud) -> None:
    status, machines = get(cloud, "state-machines")
    assert status == 200
    by_arn = {m["arn"]: m for m in machines}
    pattern = by_arn[machine(cloud)]
    assert pattern["type"] == "STANDARD" and pattern["name"] == machine(cloud).rsplit(":", 1)[-1]
    definition = json.loads(
        boto3.client("stepfunctions").describe_state_machine(stateMachineArn=machine(cloud))[
            "definition"
        ]
    )
    names, edges = states_and_edges(definition)
    assert sorted(drawn(pattern["graph"])[0]) == sorted(names)
    assert drawn(pattern["graph"])[1] == edges
    assert RETRY_MACHINE in {m["name"] for m in machines}


def test_an_execution_s_path_and_highlighted_nodes(cloud: LocalCloud) -> None:
    arn = run(cloud, machine(cloud), "CatFound")
    status, shown = get(cloud, "execution", arn=arn)
    assert status == 200
    assert (shown["status"], shown["subject"], shown["failedNodeId"]) == (
        "SUCCEEDED",
        "photos/cat.jpg",
        None,
    )
    assert json.loads(shown["output"]) == LABELS
    assert [v["name"] for v in shown["path"]] == ["DetectLabels", "Cat?", "Cat detected"]
    assert all(v["status"] == "succeeded" and v["retries"] == 0 for v in shown["path"])
    assert json.loads(shown["path"][0]["input"]) == json.loads(INPUT)
    assert json.loads(shown["path"][0]["output"]) == LABELS
    assert shown["visitedNodeIds"] == [
        "States#start",
        "States.DetectLabels",
        "States.Cat?",
        "States.Cat detected",
        "States#end",
    ]
    node_ids = {node["id"] for node in shown["graph"]["nodes"]}
    assert set(shown["visitedNodeIds"]) <= node_ids
    assert shown["historySource"] == "GetExecutionHistory"
    task_events = [e for e in shown["events"] if e["type"].startswith("Task")]
    assert task_events and {e["stateName"] for e in task_events} == {"DetectLabels"}


def test_a_failed_execution_names_its_failed_state(cloud: LocalCloud) -> None:
    arn = run(cloud, machine(cloud), "Denied")
    shown = data.execution(cloud, arn)
    assert shown["status"] == "FAILED"
    assert shown["error"] == "Rekognition.AccessDeniedException"
    assert shown["failedNodeId"] == "States.DetectLabels"
    (visit,) = shown["path"]
    assert (visit["status"], visit["error"], visit["cause"]) == (
        "failed",
        "Rekognition.AccessDeniedException",
        "denied",
    )
    assert shown["visitedNodeIds"] == ["States#start", "States.DetectLabels"]


def test_retries_are_counted_and_a_caught_error_shown(cloud: LocalCloud) -> None:
    retry_machine = machine(cloud, RETRY_MACHINE)
    retried = data.execution(cloud, run(cloud, retry_machine, "RetryThenLabels"))
    assert retried["status"] == "SUCCEEDED"
    detect = retried["path"][0]
    assert (detect["name"], detect["retries"], detect["error"]) == ("Detect", 1, None)
    assert detect["retriedErrors"] == ["Rekognition.ThrottlingException"]

    caught = data.execution(cloud, run(cloud, retry_machine, "AlwaysDenied"))
    assert caught["status"] == "FAILED"
    assert [v["name"] for v in caught["path"]] == ["Detect", "Handle"]
    detect, handle = caught["path"]
    assert (detect["status"], detect["error"]) == ("caught", "Rekognition.AccessDeniedException")
    assert (handle["status"], handle["error"]) == ("failed", "Handled")
    assert caught["failedNodeId"] == "States.Handle"


def test_the_history_is_paged(cloud: LocalCloud) -> None:
    arn = run(cloud, machine(cloud), "CatFound")
    whole = data.execution(cloud, arn, page_size=1000)
    assert whole["nextPageToken"] is None and len(whole["events"]) == whole["eventCount"] > 5

    status, page = get(cloud, "execution", arn=arn, pageSize=3)
    assert status == 200 and len(page["events"]) == 3 and "path" in page
    seen = list(page["events"])
    while page["nextPageToken"]:
        status, page = get(cloud, "execution", arn=arn, pageSize=3, pageToken=page["nextPageToken"])
        assert status == 200 and len(page["events"]) <= 3
        assert "path" not in page and "graph" not in page  # sent once, with the first page
        seen.extend(page["events"])
    assert seen == whole["events"]
    assert [e["id"] for e in seen] == list(range(1, whole["eventCount"] + 1))


def test_unknown_arns_are_404_and_bad_parameters_400(cloud: LocalCloud) -> None:
    unknown = machine(cloud).replace(":stateMachine:", ":execution:") + ":no-such-execution"
    status, body = get(cloud, "execution", arn=unknown)
    assert status == 404 and unknown in body["message"]
    with pytest.raises(data.NotFound, match="no-such-execution"):
        data.execution(cloud, unknown)
    missing_machine = machine(cloud) + "Gone"
    status, body = get(cloud, "executions", stateMachineArn=missing_machine)
    assert status == 404 and missing_machine in body["message"]
    assert get(cloud, "executions")[0] == 400  # stateMachineArn is required
    assert get(cloud, "executions", stateMachineArn=machine(cloud), status="LOST")[0] == 400
    assert get(cloud, "execution", arn=unknown, pageSize="many")[0] == 400
    assert get(cloud, "no-such-route")[0] == 404


def test_the_executions_list_filters_by_status(cloud: LocalCloud) -> None:
    succeeded = run(cloud, machine(cloud), "CatFound")
    failed = run(cloud, machine(cloud), "Denied")

    status, listed = get(cloud, "executions", stateMachineArn=machine(cloud), status="FAILED")
    assert status == 200
    rows = {row["arn"]: row for row in listed["executions"]}
    assert failed in rows and succeeded not in rows
    assert rows[failed]["status"] == "FAILED" and rows[failed]["subject"] == "photos/cat.jpg"
    assert rows[failed]["durationMs"] >= 0 and rows[failed]["stop"]

    succeeded_rows = data.executions(cloud, machine(cloud), status="SUCCEEDED")["executions"]
    assert succeeded in {row["arn"] for row in succeeded_rows}
    assert {row["status"] for row in succeeded_rows} == {"SUCCEEDED"}

    first = data.executions(cloud, machine(cloud), limit=1)
    assert len(first["executions"]) == 1 and first["nextToken"]
    second = data.executions(cloud, machine(cloud), limit=1, next_token=first["nextToken"])
    assert second["executions"][0]["arn"] != first["executions"][0]["arn"]


def test_an_express_execution_is_read_from_the_backend(cloud: LocalCloud) -> None:
    """EXPRESS: no ListExecutions/DescribeExecution/GetExecutionHistory on AWS; the list and
    the description come from the backend, the history from logs (none here: no logging)."""
    sfn = boto3.client("stepfunctions")
    role = sfn.describe_state_machine(stateMachineArn=machine(cloud))["roleArn"]
    definition = {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}
    express = sfn.create_state_machine(
        name="ConsoleExpress", definition=json.dumps(definition), roleArn=role, type="EXPRESS"
    )["stateMachineArn"]
    arn = sfn.start_execution(stateMachineArn=express, input=INPUT)["executionArn"]
    cloud.settle()

    listed = data.executions(cloud, express)
    assert listed["type"] == "EXPRESS"
    assert [(r["arn"], r["status"], r["subject"]) for r in listed["executions"]] == [
        (arn, "SUCCEEDED", "photos/cat.jpg")
    ]
    shown = data.execution(cloud, arn)
    assert shown["status"] == "SUCCEEDED" and shown["historySource"] is None
    assert shown["events"] == [] and shown["path"] == []
