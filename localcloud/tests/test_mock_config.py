"""Step Functions Local MockConfigFile test cases (features/mock_config.py): a test case runs its
mocked responses; input the local cloud cannot use is refused with a clear error naming the
problem, and the server keeps serving. Calls go over HTTP, as a Step Functions Local suite's do.

The state machine is the published s3-eventbridge-sfn pattern's (published/…/SOURCE.md).
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
from localcloud.features.mock_config import MockConfigError, load_mock_config

pytestmark = [pytest.mark.e2e]

PATTERN = Path(__file__).parent / "published" / "s3-eventbridge-sfn" / "template.yaml"
LABELS = {"Labels": [{"Name": "Cat", "Confidence": 99.0, "Parents": []}]}


def mock_config(machine: str, mocked_state: str = "DetectLabels") -> dict[str, Any]:
    return {
        "StateMachines": {
            machine: {"TestCases": {"CatFound": {mocked_state: "MockedLabels"}}},
        },
        "MockedResponses": {"MockedLabels": {"0": {"Return": LABELS}}},
    }


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(PATTERN, stack_name="mock-config") as running:
        running.serve(port=0)
        yield running


def http(cloud: LocalCloud) -> Any:
    """A Step Functions client of the cloud's HTTP endpoint."""
    return boto3.client("stepfunctions", endpoint_url=cloud.describe()["endpoint"])


def start(cloud: LocalCloud, config: dict[str, Any] | None, suffix: str) -> dict[str, Any]:
    cloud.runtime.mock_config = config
    sfn = http(cloud)
    return dict(
        sfn.start_execution(
            stateMachineArn=cloud.outputs["CatDetectorStateMachine"] + suffix,
            input=json.dumps({"detail": {"bucket": {"name": "b"}, "object": {"key": "k"}}}),
        )
    )


def machine_name(cloud: LocalCloud) -> str:
    return cloud.outputs["CatDetectorStateMachine"].rsplit(":", 1)[-1]


def test_a_test_case_runs_its_mocked_response(cloud: LocalCloud) -> None:
    started = start(cloud, mock_config(machine_name(cloud)), "#CatFound")
    sfn = http(cloud)
    done = cloud.runtime.wait_until(
        lambda: sfn.describe_execution(executionArn=started["executionArn"])["status"] != "RUNNING",
        timeout=30,
    )
    assert done
    events = sfn.get_execution_history(executionArn=started["executionArn"])["events"]
    entered = [
        e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e
    ]
    assert entered == ["DetectLabels", "Cat?", "Cat detected"]  # the mock said: a cat


def test_an_unknown_test_case_is_an_invalid_arn_naming_the_known_ones(cloud: LocalCloud) -> None:
    with pytest.raises(ClientError) as refused:
        start(cloud, mock_config(machine_name(cloud)), "#NoSuchCase")
    error = refused.value.response["Error"]
    assert error["Code"] == "InvalidArn"
    assert "NoSuchCase" in error["Message"] and "CatFound" in error["Message"]
    start(cloud, None, "")  # and the cloud still runs executions


def test_a_mock_naming_a_missing_state_is_refused_by_name(cloud: LocalCloud) -> None:
    with pytest.raises(ClientError) as refused:
        start(cloud, mock_config(machine_name(cloud), mocked_state="DetectDogs"), "#CatFound")
    error = refused.value.response["Error"]
    assert error["Code"] == "ValidationException" and "DetectDogs" in error["Message"]
    start(cloud, mock_config(machine_name(cloud)), "#CatFound")  # the server still serves


def test_a_test_case_without_a_loaded_file_is_an_invalid_arn(cloud: LocalCloud) -> None:
    with pytest.raises(ClientError) as refused:
        start(cloud, None, "#CatFound")
    assert refused.value.response["Error"]["Code"] == "InvalidArn"
    start(cloud, None, "")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"StateMachines": []}), "must be objects"),
        (json.dumps({"StateMachine": {}}), "unknown top-level key 'StateMachine'"),
        (
            json.dumps(
                {
                    "StateMachines": {"M": {"TestCases": {"T": {"S": "Missing"}}}},
                    "MockedResponses": {},
                }
            ),
            "Missing",
        ),
    ],
)
def test_a_malformed_file_is_refused_naming_the_problem(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "MockConfigFile.json"
    path.write_text(text)
    with pytest.raises(MockConfigError, match=says):
        load_mock_config(path)


def test_localcloud_up_refuses_a_malformed_file_before_serving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from localcloud.cli import main

    path = tmp_path / "MockConfigFile.json"
    path.write_text("{not json")
    assert main(["up", "--template", str(PATTERN), "--mock-config", str(path), "--port", "0"]) == 2
    assert f"--mock-config: {path} is not valid JSON" in capsys.readouterr().err


def test_start_sync_execution_runs_a_test_case_of_an_express_machine(cloud: LocalCloud) -> None:
    """StartSyncExecution of an EXPRESS machine with <arn>#<TestCase> (the host prefix
    ``sync-`` left out, as for any local endpoint); a STANDARD machine is refused."""
    standard = cloud.outputs["CatDetectorStateMachine"]
    described = boto3.client("stepfunctions").describe_state_machine(stateMachineArn=standard)
    sfn = boto3.client(
        "stepfunctions",
        endpoint_url=cloud.describe()["endpoint"],
        config=Config(inject_host_prefix=False),
    )
    express = sfn.create_state_machine(
        name="CatDetectorExpress",
        definition=described["definition"],
        roleArn=described["roleArn"],
        type="EXPRESS",
    )["stateMachineArn"]
    cloud.runtime.mock_config = mock_config("CatDetectorExpress")
    request = {"input": json.dumps({"detail": {"bucket": {"name": "b"}, "object": {"key": "k"}}})}

    answer = sfn.start_sync_execution(stateMachineArn=f"{express}#CatFound", **request)

    assert answer["status"] == "SUCCEEDED"
    assert json.loads(answer["output"]) == LABELS  # the mocked response, through "Cat detected"
    assert answer["executionArn"].startswith(express.replace(":stateMachine:", ":express:"))
    assert answer["billingDetails"]["billedDurationInMilliseconds"] >= 100
    assert json.loads(answer["input"]) == json.loads(request["input"])
    with pytest.raises(ClientError) as refused:
        sfn.start_sync_execution(stateMachineArn=standard, **request)
    assert refused.value.response["Error"]["Code"] == "StateMachineTypeNotSupported"
