"""Published SAM patterns, unchanged, on the local cloud: what their README says to do after
``sam deploy``, with only the endpoint changed (published/<pattern>/SOURCE.md names each).

s3-eventbridge-sfn: an EventBridge-enabled bucket and a state machine with an EventBridgeRule
event. An upload starts one execution, which calls Rekognition through the aws-sdk integration
under the state machine's role: without the pattern's RekognitionDetectOnlyPolicy that call is
refused, as on AWS.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

PATTERN = Path(__file__).parent / "published" / "s3-eventbridge-sfn"
# The AWS CLI on PATH, else the one this repository's `make bootstrap` installs.
AWS_CLI = Path(shutil.which("aws") or Path(__file__).parents[2] / ".venv-sam" / "bin" / "aws")
T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 30) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@contextlib.contextmanager
def served_pattern(
    stack_name: str,
    machines: dict[str, dict[str, Any]] | None = None,
    mock_config: Callable[[str], dict[str, Any]] | None = None,
) -> Iterator[LocalCloud]:
    """s3-eventbridge-sfn deployed and served over HTTP, with ``machines`` (name: definition)
    created under its state machine's role, and ``mock_config(<its state machine's name>)`` as
    the MockConfigFile of its executions' ``#TestCase``s."""
    with LocalCloud(PATTERN / "template.yaml", stack_name=stack_name) as running:
        running.serve(port=0)
        arn = running.outputs["CatDetectorStateMachine"]
        sfn = boto3.client("stepfunctions")
        role = sfn.describe_state_machine(stateMachineArn=arn)["roleArn"]
        for name, definition in (machines or {}).items():
            sfn.create_state_machine(name=name, definition=json.dumps(definition), roleArn=role)
        if mock_config is not None:
            running.runtime.mock_config = mock_config(arn.rsplit(":", 1)[-1])
        yield running


def ended_execution(sfn: Any, state_machine: str) -> dict[str, Any] | None:
    executions = sfn.list_executions(stateMachineArn=state_machine)["executions"]
    return executions[0] if executions and executions[0]["status"] != "RUNNING" else None


def states_entered(sfn: Any, execution: str) -> list[str]:
    events = sfn.get_execution_history(executionArn=execution)["events"]
    return [
        e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e
    ]


def test_an_upload_runs_the_cat_detector(tmp_path: Path) -> None:
    with LocalCloud(PATTERN / "template.yaml", stack_name="s3-eventbridge-sfn") as cloud:
        boto3.client("s3").put_object(
            Bucket=cloud.outputs["IngestionBucket"], Key="photos/kitten.jpg", Body=b"\xff\xd8\xff"
        )
        cloud.deliveries.drain()
        sfn = boto3.client("stepfunctions")
        machine = cloud.outputs["CatDetectorStateMachine"]
        execution = wait_for(lambda: ended_execution(sfn, machine), "the execution to end")
        assert len(sfn.list_executions(stateMachineArn=machine)["executions"]) == 1
        # Rekognition is outside the local cloud's scope (features/service_scope.py): its
        # DetectLabels fails as AWS fails a role without access to Rekognition.
        assert execution["status"] == "FAILED"
        assert states_entered(sfn, execution["executionArn"]) == ["DetectLabels"]
        described = sfn.describe_execution(executionArn=execution["executionArn"])
        assert described["error"] == "Rekognition.AccessDeniedException"
        assert "the local cloud does not run Amazon Rekognition" in described["cause"]
        started = json.loads(
            sfn.describe_execution(executionArn=execution["executionArn"])["input"]
        )
        assert started["detail"]["object"]["key"] == "photos/kitten.jpg"


def test_without_its_rekognition_policy_the_workflow_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "s3-eventbridge-sfn"
    (copy / "statemachine").mkdir(parents=True)
    (copy / "statemachine" / "statemachine.asl.json").write_bytes(
        (PATTERN / "statemachine" / "statemachine.asl.json").read_bytes()
    )
    template = (PATTERN / "template.yaml").read_text()
    assert "        - RekognitionDetectOnlyPolicy: {}\n" in template
    (copy / "template.yaml").write_text(
        template.replace("        - RekognitionDetectOnlyPolicy: {}\n", "")
    )
    with LocalCloud(copy / "template.yaml", stack_name="s3-eventbridge-sfn") as cloud:
        boto3.client("s3").put_object(
            Bucket=cloud.outputs["IngestionBucket"], Key="kitten.jpg", Body=b"\xff\xd8\xff"
        )
        cloud.deliveries.drain()
        sfn = boto3.client("stepfunctions")
        machine = cloud.outputs["CatDetectorStateMachine"]
        execution = wait_for(lambda: ended_execution(sfn, machine), "the execution to end")
        described = sfn.describe_execution(executionArn=execution["executionArn"])
        assert described["status"] == "FAILED"
        assert described["error"] == "Rekognition.AccessDeniedException"
        assert "rekognition:DetectLabels" in described["cause"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def localcloud_up(template: Path, outputs: Path) -> Iterator[tuple[dict[str, Any], str]]:
    """``localcloud up --template`` on a free port; Ctrl-C at the end must stop it cleanly."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "localcloud.cli",
            "up",
            "--template",
            str(template),
            "--port",
            str(port),
            "--outputs",
            str(outputs),
        ],
        env={**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(outputs.exists, "the stack outputs file", timeout=60)
        yield json.loads(outputs.read_text()), f"http://127.0.0.1:{port}"
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    banner = err.decode()
    assert server.returncode == 0, banner[-2000:]
    assert f"local cloud listening on http://127.0.0.1:{port}" in banner
    assert "s3 cp FILE s3://" in banner  # the way in: an upload to the stack's bucket


def test_localcloud_up_serves_the_pattern_to_the_aws_cli(tmp_path: Path) -> None:
    if not AWS_CLI.exists():
        pytest.fail(f"{AWS_CLI} is missing: run `make bootstrap` (it installs the AWS CLI)")
    image = tmp_path / "kitten.jpg"
    image.write_bytes(b"\xff\xd8\xff")
    with localcloud_up(PATTERN / "template.yaml", tmp_path / "outputs.json") as (described, url):
        env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
        env["AWS_DEFAULT_REGION"] = described["region"]

        def aws(*args: str) -> Any:
            done = subprocess.run(
                [str(AWS_CLI), "--endpoint-url", url, *args],
                env=env,
                capture_output=True,
                check=True,
                text=True,
            )
            return json.loads(done.stdout) if done.stdout.strip().startswith("{") else None

        bucket = described["outputs"]["IngestionBucket"]
        machine = described["outputs"]["CatDetectorStateMachine"]
        aws("s3", "cp", str(image), f"s3://{bucket}/kitten.jpg")

        def ended() -> dict[str, Any] | None:
            found = aws("stepfunctions", "list-executions", "--state-machine-arn", machine)
            runs = found["executions"]
            return runs[0] if runs and runs[0]["status"] != "RUNNING" else None

        execution = wait_for(ended, "the execution the upload started")
        assert execution["status"] == "FAILED"  # Rekognition is outside the local cloud's scope
