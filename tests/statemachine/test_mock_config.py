"""Step Functions Local MockConfigFile test cases, one per workflow path.

Every task is mocked, so the same file runs unchanged on moto's engine (always), and on
Step Functions Local or LocalStack when ``SFN_MOCK_ENDPOINT`` names one (skipped otherwise;
start that endpoint with ``SFN_MOCK_CONFIG`` pointing at this MockConfigFile.json).
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from localcloud.registry import patch_set
from localcloud.runtime import Runtime
from tests.statemachine.conftest import MOTO_CONFIG, REGION
from tests.support import ROOT, wait_for

pytestmark = pytest.mark.statemachine

HERE = Path(__file__).parent
MOCK_CONFIG = json.loads((HERE / "MockConfigFile.json").read_text())
EXPECTED: dict[str, dict[str, Any]] = json.loads((HERE / "mock_expectations.json").read_text())
STATE_MACHINE = "PipelineStateMachine"
ACCOUNT = "123456789012"


def definition() -> str:
    """The real ASL with placeholder resources (every task is mocked)."""
    text = (ROOT / "statemachines" / "pipeline.asl.json").read_text()
    fake = {
        "ObjectStateTable": "ObjectState",
        "LeaseSeconds": "3600",
        "OperationsTopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:operations",
        "DataQualityTopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:data-quality",
    }
    return re.sub(
        r"\$\{(\w+)\}",
        lambda m: fake.get(m.group(1), f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{m.group(1)}"),
        text,
    )


INPUT = {
    "object": {"bucket": "bucket", "key": "incoming/orders/a.csv", "versionId": "v1"},
    "trigger": {"source": "aws.s3", "eventId": "e-1", "eventTime": "2026-11-21T12:00:00Z"},
    "request": {"reprocess": False, "staleBefore": ""},
}


def run_case(sfn: Any, state_machine_arn: str, case: str) -> tuple[dict[str, Any], list[str]]:
    arn = sfn.start_execution(
        stateMachineArn=f"{state_machine_arn}#{case}",
        name=uuid.uuid4().hex,
        input=json.dumps(INPUT),
    )["executionArn"]
    described = wait_for(
        lambda: (d := sfn.describe_execution(executionArn=arn))["status"] != "RUNNING" and d,
        timeout=120,
        what=f"mocked test case {case}",
    )
    events = sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    path = [
        e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")
    ]
    return described, path


def check(case: str, described: dict[str, Any], path: list[str]) -> None:
    expected = EXPECTED[case]
    assert described["status"] == expected["status"], described.get("cause")
    assert described.get("error") == expected["error"]
    assert path == expected["path"]


def test_every_test_case_has_an_expectation() -> None:
    cases = MOCK_CONFIG["StateMachines"][STATE_MACHINE]["TestCases"]
    assert set(cases) == set(EXPECTED)
    states = json.loads(definition())["States"]
    for case, mocks in cases.items():
        assert set(mocks) <= set(states), case
        for state in EXPECTED[case]["path"]:
            if states[state]["Type"] == "Task":
                assert state in mocks, f"{case}: task {state} is not mocked"


@pytest.fixture(scope="module")
def moto_sfn() -> Iterator[tuple[Any, str]]:
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    runtime, patches = Runtime(mock_config=MOCK_CONFIG), patch_set(enabled=frozenset())
    patches.install(runtime)
    try:
        with mock_aws(config=MOTO_CONFIG):
            iam = boto3.client("iam", region_name=REGION)
            role = iam.create_role(RoleName="sfn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
            sfn = boto3.client("stepfunctions", region_name=REGION)
            arn = sfn.create_state_machine(
                name=STATE_MACHINE, definition=definition(), roleArn=role
            )["stateMachineArn"]
            yield sfn, arn
    finally:
        patches.uninstall()
        runtime.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_mocked_path_on_moto(moto_sfn: tuple[Any, str], case: str) -> None:
    sfn, arn = moto_sfn
    check(case, *run_case(sfn, arn, case))


ENDPOINT = os.environ.get("SFN_MOCK_ENDPOINT")


@pytest.mark.skipif(
    not ENDPOINT, reason="set SFN_MOCK_ENDPOINT to run against Step Functions Local"
)
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_mocked_path_on_external_endpoint(case: str) -> None:
    sfn = boto3.client("stepfunctions", endpoint_url=ENDPOINT, region_name=REGION)
    name = f"{STATE_MACHINE}"
    existing = [m for m in sfn.list_state_machines()["stateMachines"] if m["name"] == name]
    arn = (
        existing[0]["stateMachineArn"]
        if existing
        else sfn.create_state_machine(
            name=name, definition=definition(), roleArn=f"arn:aws:iam::{ACCOUNT}:role/DummyRole"
        )["stateMachineArn"]
    )
    started = time.monotonic()
    check(case, *run_case(sfn, arn, case))
    assert time.monotonic() - started < 120
