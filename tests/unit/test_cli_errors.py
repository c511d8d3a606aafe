"""Every ingestctl command answers bad input and an unreachable AWS in one line (issue 29).

No credentials, an endpoint nobody listens on, a missing or malformed file: one line on
stderr saying what went wrong and what to do, exit 2 (could not run), no traceback. An
unexpected exception is a bug: its traceback is shown, and exit 70.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError
from botocore.retries.standard import ExponentialBackoff

from ingest_pipeline.dal import aws
from ingest_pipeline.errors import StorageUnavailableError
from ingest_tools import cli
from localcloud.environments import RuntimeMissing

REGION = "us-east-1"


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No credentials anywhere botocore looks, and no endpoint left over from other tests."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_ENDPOINT_URL",  # ingestctl sets it for the DAL's clients: restored after
    ):
        monkeypatch.setenv(name, "")  # recorded, so that teardown restores (or removes) it
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    aws.client.cache_clear()  # the DAL's clients are cached per process
    yield
    aws.client.cache_clear()


@pytest.fixture
def fake_credentials(no_aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    # botocore still retries a refused connection 5 times, without the backoff's sleeps.
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def outputs(tmp_path: Path) -> Path:
    """Stack outputs pointing at an endpoint where nothing listens."""
    endpoint = f"http://127.0.0.1:{closed_port()}"
    path = tmp_path / "outputs.json"
    path.write_text(
        json.dumps(
            {
                "endpoint": endpoint,
                "region": REGION,
                "outputs": {
                    "EventDeliveryDLQUrl": f"{endpoint}/123456789012/dlq",
                    "ObjectStateTableName": "state",
                    "IngestBucketName": "bucket",
                    "PipelineStateMachineArn": (
                        f"arn:aws:states:{REGION}:123456789012:stateMachine:pipeline"
                    ),
                },
            }
        )
    )
    return path


def one_line(capsys: pytest.CaptureFixture[str], code: int, *needles: str) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == cli.EXIT_CANNOT_RUN, err
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/dlq"


@pytest.mark.parametrize("command", ["inspect", "redrive"])
def test_no_credentials(no_aws: None, capsys: pytest.CaptureFixture[str], command: str) -> None:
    code = cli.main([command, QUEUE, "--region", REGION])
    line = one_line(capsys, code, f"ingestctl {command}:", "credentials", "AWS_PROFILE")
    assert line.startswith(f"ingestctl {command}: no usable AWS credentials")


def test_reprocess_without_credentials(no_aws: None, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        [
            *("reprocess", "--prefix", "incoming/", "--table", "t", "--bucket", "b"),
            *("--state-machine-arn", "arn:aws:states:us-east-1:123456789012:stateMachine:p"),
        ]
    )
    one_line(capsys, code, "ingestctl reprocess:", "credentials")


@pytest.mark.parametrize(
    "command",
    [
        ["inspect", "EventDeliveryDLQ"],
        ["redrive", "EventDeliveryDLQ"],
        ["redrive", "EventDeliveryDLQ", "--dry-run"],
        ["reprocess", "--prefix", "incoming/orders/"],
        ["reprocess", "--key", "incoming/orders/a.csv", "--dry-run"],
        ["doctor"],
    ],
    ids="-".join,
)
def test_unreachable_endpoint(
    fake_credentials: None,
    outputs: Path,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
) -> None:
    code = cli.main([*command, "--outputs", str(outputs)])
    one_line(capsys, code, f"ingestctl {command[0]}:", "Could not connect", "--endpoint-url")


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        (["inspect", "q", "--outputs", "{missing}"], "no such file"),
        (["redrive", "q", "--outputs", "{bad}"], "is not valid JSON"),
        (["reprocess", "--key", "k", "--outputs", "{bad}"], "is not valid JSON"),
        (["doctor", "--outputs", "{bad}"], "is not valid JSON"),
        (["local", "up", "--faults", "{bad}"], "is not valid JSON"),
        (["local", "up", "--faults", "{missing}"], "no such file"),
        (["local", "up", "--faults", "{list}"], "expected a JSON object"),
        (["local", "up", "--template", "{missing}"], "no such file"),
        (["local", "demo", "--template", "{missing}"], "no such file"),
        (["local", "iam-report", "{missing}"], "no such directory"),
    ],
    ids=lambda c: "-".join(c) if isinstance(c, list) else c,
)
def test_bad_input_files(
    no_aws: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
    needle: str,
) -> None:
    (tmp_path / "bad.json").write_text('{"faults": [')
    (tmp_path / "list.json").write_text("[]")
    files = {
        "{bad}": str(tmp_path / "bad.json"),
        "{missing}": str(tmp_path / "missing.json"),
        "{list}": str(tmp_path / "list.json"),
    }
    code = cli.main([files.get(part, part) for part in command])
    line = one_line(capsys, code, needle)
    assert line.startswith("ingestctl ")


def test_missing_resource_option_is_one_line(
    no_aws: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"outputs": {}}))
    code = cli.main(["reprocess", "--key", "k", "--outputs", str(path)])
    one_line(capsys, code, "--table is required")


@pytest.mark.parametrize(
    ("error", "needles"),
    [
        (NoCredentialsError(), ("no usable AWS credentials",)),
        (EndpointConnectionError(endpoint_url="http://x"), ("cannot reach AWS", "http://x")),
        (
            ClientError(
                {"Error": {"Code": "AccessDenied", "Message": "User: u is not authorized"}},
                "ReceiveMessage",
            ),
            ("access denied", "ReceiveMessage", "not authorized"),
        ),
        (
            ClientError({"Error": {"Code": "ExpiredToken", "Message": "expired"}}, "GetItem"),
            ("rejected the credentials",),
        ),
        (
            ClientError(
                {"Error": {"Code": "ValidationError", "Message": "Stack with id s does not exist"}},
                "DescribeStacks",
            ),
            ("not found", "does not exist"),
        ),
        (StorageUnavailableError("query: ThrottlingException: slow down"), ("try again later",)),
        (json.JSONDecodeError("Expecting value", "x", 0), ("invalid JSON",)),
        (FileNotFoundError(2, "No such file or directory", "f.json"), ("f.json: no such file",)),
        (RuntimeMissing(Path("/x/bin/python")), ("there is none at /x/bin/python", "bootstrap")),
    ],
    ids=lambda e: type(e).__name__ if isinstance(e, BaseException) else "",
)
def test_known_errors_are_explained_in_one_line(
    error: BaseException, needles: tuple[str, ...]
) -> None:
    message = cli.explain(error)
    assert message is not None and "\n" not in message
    for needle in needles:
        assert needle in message


def test_the_botocore_cause_of_a_pipeline_error_is_what_is_explained() -> None:
    try:
        with aws.aws_errors("query"):
            raise EndpointConnectionError(endpoint_url="http://127.0.0.1:9")
    except StorageUnavailableError as exc:
        message = cli.explain(exc)
    assert message is not None and message.startswith("cannot reach AWS")


def test_an_unexpected_error_is_a_bug_with_its_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: object) -> int:
        raise KeyError("oops")

    monkeypatch.setattr(cli, "_local_demo", broken)
    assert cli.main(["local", "demo"]) == cli.EXIT_BUG
    err = capsys.readouterr().err
    assert "Traceback" in err and "KeyError" in err
    assert err.strip().splitlines()[-1].endswith("please report it with the traceback above")
    assert cli.explain(ValueError("a bug, not input")) is None


def test_a_real_process_prints_one_line(tmp_path: Path) -> None:
    """The console script, end to end: stderr is exactly one line, exit 2."""
    bad = tmp_path / "faults.json"
    bad.write_text("{not json")
    done = subprocess.run(
        [sys.executable, "-m", "ingest_tools.cli", "local", "up", "--faults", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == cli.EXIT_CANNOT_RUN, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"ingestctl local up: --faults {bad} is not valid JSON: Expecting property name "
        "enclosed in double quotes at line 1 column 2; fix the file"
    ]
