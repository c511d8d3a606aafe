"""Every state of both workflows through the TestState API, with the AWS CLI (issue 25).

For each state of statemachines/*.asl.json (Map ItemProcessor and Parallel branches included)
``aws stepfunctions test-state`` runs it on the local cloud over HTTP and the answer is checked
against the API reference (docs.aws.amazon.com/step-functions/latest/apireference/
API_TestState.html, and the developer guide's "Testing state machines with TestState API"):

* Pass / Succeed / Choice / Fail: status and nextState (a Choice once per rule and for its
  Default, each input built to take that branch); a Fail state FAILED with its Error/Cause;
* Task / Map / Parallel: a mocked ``result`` SUCCEEDS with the state's Next and the data flow
  (ResultSelector, ResultPath) applied; for each Retry rule, a mocked error it matches with
  ``retrierRetryCount`` one below its MaxAttempts is RETRIABLE with that ``retryIndex``; for
  each Catch rule, an error it matches (no earlier catcher does) with the retrier that applies
  spent is CAUGHT_ERROR with the catcher's Next, ``catchIndex`` and the error at its
  ResultPath; a Map with more failed iterations than it tolerates fails with
  States.ExceedToleratedFailureThreshold (then caught or not, like any error).

Each state's input is built from the paths it reads (Parameters, ItemSelector, InputPath,
Choice Variables, ErrorPath...), on top of the workflow's real input; each mocked result from
the paths its ResultSelector reads. All the commands run in one process of the AWS CLI's own
driver (tests/aws_cli_batch.py: one interpreter start instead of one a command), against one
in-process local cloud; each test then checks its command's answer.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from localcloud.cloud import LocalCloud
from tests import aws_cli_batch
from tests.statemachine.teststate_cases import (
    CASES,
    UNCHECKED,
    WORKFLOWS,
    all_states,
    definition,
)
from tests.support import ROOT

pytestmark = pytest.mark.statemachine

AWS = ROOT / ".venv-sam" / "bin" / "aws"
REGION, ACCOUNT = "us-east-1", "123456789012"
# TestState needs no stack: a cloud of one topic is the cheapest endpoint that serves it.
TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Description: An endpoint for the TestState API (the definitions are sent with each call).
Resources:
  Placeholder:
    Type: AWS::SNS::Topic
"""
CLI_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": REGION,
    # TestState's endpoint is sync-states.<region>: a local endpoint takes no host prefix
    "AWS_DISABLE_HOST_PREFIX_INJECTION": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
COMPARED = next(i for i in CASES if i.endswith("/catch-0") and "$$." not in str(CASES[i].state))


# --- running them -------------------------------------------------------------------------------
def run_batch(commands: list[list[str]]) -> list[dict[str, Any]]:
    """The commands through tests/aws_cli_batch.py: one AWS CLI process for all of them."""
    return aws_cli_batch.run_batch(commands, CLI_ENV)


def run_everything(tmp: Path) -> dict[str, Any]:
    """Every case's command in one batch against one local cloud (the answers by case id), and
    one of them once more as an ``aws`` process (for the test that compares the two)."""
    template = tmp / "template.yaml"
    template.write_text(TEMPLATE)
    with LocalCloud(template, stack_name="test-state", iam=False, event_delivery=False) as cloud:
        endpoint = cloud.serve(port=0).url
        ids = list(CASES)
        results = run_batch([CASES[i].command(endpoint) for i in ids])
        done = subprocess.run(
            [str(AWS), *CASES[COMPARED].command(endpoint)],
            env={**os.environ, **CLI_ENV},
            capture_output=True,
            text=True,
            check=False,
        )
    process = {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
    return {"answers": dict(zip(ids, results, strict=True)), "aws": process}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """run_everything() once per pytest run: under pytest-xdist this module's tests may be
    spread over several workers, and the first to get here runs it for all (the others read
    its file, under a lock, in the run's common temporary directory)."""
    if not (AWS.exists() and aws_cli_batch.AWS_PYTHON.exists()):
        pytest.fail(f"{AWS} is missing: run `make bootstrap` (it installs the AWS CLI)")
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    saved = root / "test_test_state_cli.json"
    with (root / "test_test_state_cli.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not saved.exists():
            saved.write_text(json.dumps(run_everything(tmp_path_factory.mktemp("test-state"))))
    return dict(json.loads(saved.read_text()))


def test_every_state_retrier_and_catcher_has_a_case() -> None:
    for workflow in WORKFLOWS:
        for path, state in all_states(definition(workflow)["States"]):
            name = f"{workflow}/{path}"
            mine = {i.removeprefix(name + "/") for i in CASES if i.rsplit("/", 1)[0] == name}
            assert mine, f"{name}: no case"
            for kind in ("Retry", "Catch"):
                for index, _ in enumerate(state.get(kind) or ()):
                    assert f"{kind.lower()}-{index}" in mine, f"{name}: {kind}[{index}]"
            if state["Type"] == "Choice":
                assert {f"choice-{i}" for i, _ in enumerate(state["Choices"])} <= mine


@pytest.mark.parametrize("case_id", list(CASES))
def test_state(case_id: str, ran: dict[str, Any]) -> None:
    case, result = CASES[case_id], ran["answers"][case_id]
    assert result["rc"] == 0, result["stderr"]
    answer = json.loads(result["stdout"])
    assert answer["status"] == case.status, answer
    assert answer.get("nextState") == case.next_state, answer
    if case.error is not None:
        assert answer.get("error") == case.error, answer
    if case.cause is not None:
        assert answer.get("cause") == case.cause, answer
    details = answer.get("inspectionData", {}).get("errorDetails", {})
    if case.retry_index is not None:
        assert details.get("retryIndex") == case.retry_index, answer
        # with JitterStrategy FULL, a random backoff up to the un-jittered one
        assert 0 <= details["retryBackoffIntervalSeconds"] <= (case.backoff_at_most or 0), answer
    if case.catch_index is not None:
        assert details.get("catchIndex") == case.catch_index, answer
    if case.output is not UNCHECKED:
        assert json.loads(answer["output"]) == case.output, answer


def test_the_batch_prints_what_the_aws_cli_prints(ran: dict[str, Any]) -> None:
    """tests/aws_cli_batch.py runs the CLI's own driver: the same command, as an ``aws``
    process, prints the same answer and exits the same."""
    process, batched = ran["aws"], ran["answers"][COMPARED]
    assert process["stdout"].splitlines() == batched["stdout"].splitlines()
    assert process == batched
