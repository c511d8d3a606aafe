"""`ingestctl local up`: the same local cloud served over HTTP, driven by the AWS CLI / boto3."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from ingest_tools import cli
from tests.support import ROOT, cli_json, sample_file, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


ENV = {
    **os.environ,
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@contextlib.contextmanager
def local_up(outputs: Path, *options: str) -> Iterator[dict[str, Any]]:
    """`ingestctl local up [options]` on a free port until the block ends; then Ctrl-C, which
    must stop it cleanly. Yields what it wrote to ``outputs``."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ingest_tools.cli",
            "local",
            "up",
            "--port",
            str(port),
            "--outputs",
            str(outputs),
            *options,
        ],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(outputs.exists, timeout=60, interval=0.1, what="the stack outputs file")
        described = json.loads(outputs.read_text())
        assert described["endpoint"] == f"http://127.0.0.1:{port}"
        yield described
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    assert server.returncode == 0, err.decode()[-2000:]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """One `ingestctl local up` for the module's tests (its outputs file, what it wrote);
    stopped with Ctrl-C at the end, which must stop it cleanly."""
    outputs = tmp_path_factory.mktemp("local-up") / "outputs.json"
    with local_up(outputs) as described:
        yield outputs, described


def test_local_up_serves_the_pipeline_to_the_aws_cli(
    tmp_path: Path, served: tuple[Path, dict[str, Any]]
) -> None:
    described = served[1]
    endpoint = described["endpoint"]
    session = boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    bucket = described["outputs"]["IngestBucketName"]
    key = "incoming/orders/from-cli.csv"
    body = tmp_path / "from-cli.csv"
    body.write_bytes(sample_file("orders-good.csv"))
    # The README's example, with the AWS CLI `make bootstrap` installs (.venv-sam).
    aws = ROOT / ".venv-sam" / "bin" / "aws"
    if not aws.exists():
        pytest.fail(f"{aws} is missing: run `make bootstrap` (it installs the AWS CLI)")
    subprocess.run(
        [str(aws), "--endpoint-url", endpoint, "s3", "cp", str(body), f"s3://{bucket}/{key}"],
        check=True,
        env=ENV,
        capture_output=True,
    )
    ddb = session.client("dynamodb", endpoint_url=endpoint)

    def record() -> dict | None:
        items = ddb.scan(TableName=described["outputs"]["ObjectStateTableName"]).get("Items", [])
        done = [i for i in items if i["status"]["S"] == "SUCCEEDED"]
        return done[0] if done else None

    item = wait_for(record, timeout=30, interval=0.1, what="the object to be processed")
    assert item["pk"]["S"] == f"s3://{bucket}/{key}"
    s3 = session.client("s3", endpoint_url=endpoint)
    out = s3.get_object(Bucket=bucket, Key=item["output_key"]["S"])["Body"].read()
    assert len(out.splitlines()) == 2


def test_doctor_passes_against_local_up(
    served: tuple[Path, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`ingestctl doctor --outputs` of `local up`, as an operator runs it in another terminal:
    every check PASSes through the endpoint, the TLS-only queues' and bucket's included."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    code = cli.main(["doctor", "--json", "--strict", "--outputs", str(served[0])])
    report = cli_json(capsys)
    assert [c for c in report["checks"] if c["status"] != "PASS"] == []
    assert code == 0


def test_external_endpoint_suite_passes_against_local_up(
    served: tuple[Path, dict[str, Any]],
) -> None:
    """tests/e2e/test_external_endpoint.py (the suite for LocalStack or AWS) is itself run here,
    against `ingestctl local up`, so it cannot rot while nobody has LocalStack configured."""
    outputs = served[0]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            "tests/e2e/test_external_endpoint.py",
        ],
        cwd=ROOT,
        check=False,
        env={**ENV, "INGEST_E2E_OUTPUTS": str(outputs), "INGEST_E2E_TIMEOUT": "60"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-2000:]
    assert run.returncode == 0, run.stdout[-4000:]
    assert "skipped" not in summary and " passed" in summary, summary
