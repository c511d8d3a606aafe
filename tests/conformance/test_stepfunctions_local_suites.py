"""Published Step Functions Local mock-config suites, unchanged, against the local cloud.

Each suite is kept with its source in stepfunctions-local/<suite>/ (SOURCE.md). Step Functions
Local is started with ``SFN_MOCK_CONFIG``; here ``ingestctl local up`` (the app's template, as
a user would run it) or ``localcloud up`` is, with the same variable. Only the endpoint
changes:

* app-local-testing-mock-config (aws-samples/aws-stepfunctions-examples): its makefile, with
  ``http://localhost:8083`` replaced by the local cloud's URL (and, with AWS CLI v1, which has
  no pager, its v2-only ``--no-cli-pager`` dropped), runs ``create``, the four
  executions and the four history queries; every query must find its event, as the sample's
  README says it does on Step Functions Local;
* step-functions-local-mock (aws-samples/serverless-test-samples): its pytest file, byte for
  byte, with ``testcontainers`` replaced by stepfunctions-local/shim/ (the "container" is the
  local cloud, started from a template with no state machine, as a fresh Step Functions Local
  has none: the suite takes ``list_state_machines()[0]``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = [pytest.mark.conformance]

HERE = Path(__file__).parent / "stepfunctions-local"
ROOT = Path(__file__).parents[2]
BIN = Path(sys.executable).parent
# The AWS CLI `make bootstrap` pins (.venv-sam), else whichever `aws` is on PATH
PINNED_CLI = ROOT / ".venv-sam" / "bin" / "aws"
AWS_CLI = PINNED_CLI if PINNED_CLI.exists() else Path(shutil.which("aws") or PINNED_CLI)
CLIENT_ENV = {
    "AWS_ACCESS_KEY_ID": "DUMMYIDEXAMPLE",  # the suites' aws-stepfunctions-local-credentials
    "AWS_SECRET_ACCESS_KEY": "DUMMYEXAMPLEKEY",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_PAGER": "",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def client_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LOCALCLOUD_IAM"))}
    return {**env, **CLIENT_ENV, "PATH": f"{AWS_CLI.parent}:{env.get('PATH', '')}", **extra}


@contextmanager
def serving(command: list[str], mock_config: Path) -> Iterator[str]:
    """``command --port P`` started with SFN_MOCK_CONFIG, as Step Functions Local is; its URL."""
    port = free_port()
    env = {**os.environ, "SFN_MOCK_CONFIG": str(mock_config)}
    process = subprocess.Popen(
        [*command, "--port", str(port)], env=env, cwd=ROOT, stdout=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, f"{command} exited with {process.returncode}"
            try:
                urllib.request.urlopen(f"{url}/_localcloud/outputs")  # noqa: S310
                break
            except OSError:
                assert time.monotonic() < deadline, f"{command} did not serve"
                time.sleep(0.2)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)


def aws_cli_v1() -> bool:
    version = subprocess.run(
        [str(AWS_CLI), "--version"], capture_output=True, text=True, check=True
    )
    return (version.stdout + version.stderr).startswith("aws-cli/1.")


def make(directory: Path, target: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", "-f", "makefile.local", target],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"make {target}: {done.stderr}"
    return done.stdout


def wait_until_ended(url: str, execution_arn: str) -> str:
    """As a user waits before the history queries (the sample's README: a few seconds); the
    polls are DescribeExecution calls of this process (not an AWS CLI process each)."""
    import boto3

    stepfunctions = boto3.Session(
        aws_access_key_id=CLIENT_ENV["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CLIENT_ENV["AWS_SECRET_ACCESS_KEY"],
        region_name=CLIENT_ENV["AWS_DEFAULT_REGION"],
    ).client("stepfunctions", endpoint_url=url)
    deadline = time.monotonic() + 60
    while True:
        status = str(stepfunctions.describe_execution(executionArn=execution_arn)["status"])
        if status != "RUNNING" or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


EXAMPLES = HERE / "app-local-testing-mock-config"
RUNS = {  # makefile target -> (its history target, the execution name it starts)
    "happy": ("happy-h", "happyPathExecution"),
    "error": ("error-h", "catchCustomErrorExecution"),
    "exception": ("exception-h", "runtimeExceptionExecution"),
    "retry": ("retry-h", "retryWithServiceException"),
}


def test_app_local_testing_mock_config_makefile(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(EXAMPLES, suite)
    with serving(
        [str(BIN / "ingestctl"), "local", "up"],
        suite / "statemachine" / "test" / "MockConfigFile.json",
    ) as url:
        text = (suite / "makefile").read_text().replace("http://localhost:8083", url)
        if aws_cli_v1():  # an AWS CLI v2 option; v1 (this repository's) never pages
            text = text.replace("--no-cli-pager", "")
        (suite / "makefile.local").write_text(text)
        env = client_env()
        created = json.loads(make(suite, "create", env))
        machine = "arn:aws:states:us-east-1:123456789012:stateMachine:LocalTesting"
        assert created["stateMachineArn"] == machine
        for target, (history, name) in RUNS.items():
            started = json.loads(make(suite, target, env))
            arn = f"arn:aws:states:us-east-1:123456789012:execution:LocalTesting:{name}"
            assert started["executionArn"] == arn
            assert wait_until_ended(url, arn) == "SUCCEEDED"
            found = json.loads(make(suite, history, env))
            assert found, f"make {history}: the query found no event"
            if target == "retry":  # three mocked InternalServerException, then the sentiment
                assert [e["type"] for e in found] == ["TaskFailed"] * 3 + ["TaskSucceeded"]
            else:
                assert len(found) == 1


def test_step_functions_local_mock_pytest_suite(tmp_path: Path) -> None:
    suite = HERE / "step-functions-local-mock"
    up = [str(BIN / "localcloud"), "up", "--template", str(HERE / "empty-template.yaml")]
    report = tmp_path / "report.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "--rootdir",
            str(suite),
            "-c",
            os.devnull,
            "--junitxml",
            str(report),
            str(suite / "tests" / "unit" / "src" / "test_step_functions_local.py"),
        ],
        cwd=tmp_path,
        env=client_env(
            PYTHONPATH=str(HERE / "shim"),
            LOCALCLOUD_UP=json.dumps(up),
        ),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:]
    assert "3 passed" in done.stdout
