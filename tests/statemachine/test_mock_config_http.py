"""Our MockConfigFile.json test cases as a Step Functions Local user runs them: `ingestctl
local up --mock-config`, then the AWS CLI (its own driver, tests/aws_cli_batch.py) creates the
state machine with a dummy role, starts each `<arn>#<TestCase>`; its history is read over the
same endpoint (test_mock_config.py runs the same cases in-process). Every task of a case is
mocked, so the dummy role calls nothing.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.aws_cli_batch import AWS_PYTHON, run_batch
from tests.e2e.test_local_up import ENV, local_up
from tests.statemachine.test_mock_config import ACCOUNT, EXPECTED, HERE, STATE_MACHINE, definition
from tests.support import wait_for

pytestmark = [pytest.mark.statemachine, pytest.mark.slow]

INPUT = {
    "object": {"bucket": "bucket", "key": "incoming/orders/a.csv", "versionId": "v1"},
    "trigger": {"source": "aws.s3", "eventId": "e-1", "eventTime": "2026-11-21T12:00:00Z"},
    "request": {"reprocess": False, "staleBefore": ""},
}


def test_every_test_case_through_local_up_and_the_aws_cli(tmp_path: Path) -> None:
    if not AWS_PYTHON.exists():
        pytest.fail(f"{AWS_PYTHON} is missing: run `make bootstrap` (it installs the AWS CLI)")
    options = ("--mock-config", str(HERE / "MockConfigFile.json"))
    with local_up(tmp_path / "outputs.json", *options) as described:
        endpoint = described["endpoint"]

        def aws(*commands: list[str]) -> list[Any]:
            """The commands with the AWS CLI's own driver, in one process (tests/aws_cli_batch.py:
            one interpreter start instead of one a command); each one's JSON answer."""
            runs = run_batch(
                [["--endpoint-url", endpoint, "stepfunctions", *c] for c in commands], ENV
            )
            assert all(run["rc"] == 0 for run in runs), runs
            return [json.loads(run["stdout"]) for run in runs]

        (created,) = aws(
            [
                "create-state-machine",
                f"--name={STATE_MACHINE}",
                f"--definition={definition()}",
                f"--role-arn=arn:aws:iam::{ACCOUNT}:role/DummyRole",
            ]
        )
        arn = created["stateMachineArn"]
        sfn = boto3.client(
            "stepfunctions",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        cases = sorted(EXPECTED)
        started = aws(
            *(
                [
                    "start-execution",
                    f"--state-machine-arn={arn}#{case}",
                    f"--name={uuid.uuid4().hex}",
                    f"--input={json.dumps(INPUT)}",
                ]
                for case in cases
            )
        )
        for case, start in zip(cases, started, strict=True):
            expected, execution = EXPECTED[case], start["executionArn"]
            assert execution.startswith(f"arn:aws:states:us-east-1:{ACCOUNT}:execution:")
            described_run = wait_for(
                lambda e=execution: (
                    (d := sfn.describe_execution(executionArn=e))["status"] != "RUNNING" and d
                ),
                timeout=60,
                what=f"test case {case}",
            )
            # the history over the same HTTP endpoint (the published suites of
            # tests/conformance/ read theirs with the AWS CLI; one process less per case)
            events = sfn.get_execution_history(executionArn=execution)["events"]
            path = [
                e["stateEnteredEventDetails"]["name"]
                for e in events
                if "stateEnteredEventDetails" in e
            ]
            assert (described_run["status"], described_run.get("error"), path) == (
                expected["status"],
                expected["error"],
                expected["path"],
            ), case
