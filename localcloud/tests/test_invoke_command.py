"""``localcloud invoke``: one function of a template, one event, no Docker; printed and exited
as ``sam local invoke`` does (response on stdout, logs on stderr, --env-vars as SAM reads it)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from localcloud.cli import main

pytestmark = [pytest.mark.e2e]

TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Runtime: python3.13
    Handler: index.handler
Resources:
  Greeter:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables: {GREETING: hello, STAGE: prod}
      InlineCode: |
        import os
        def handler(event, context):
            print("greeting", event.get("name"), "request", context.aws_request_id)
            if event.get("fail"):
                raise ValueError("asked to fail")
            return {"greeting": os.environ["GREETING"], "stage": os.environ["STAGE"],
                    "name": event.get("name"), "undeclared": os.environ.get("UNDECLARED")}
  Other:
    Type: AWS::Serverless::Function
    Properties:
      InlineCode: "def handler(event, context):\\n    return 1\\n"
"""


@pytest.fixture
def template(tmp_path: Path) -> Path:
    path = tmp_path / "template.yaml"
    path.write_text(TEMPLATE)
    return path


def run(args: list[str], monkeypatch: pytest.MonkeyPatch, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    status = main(["invoke", *args])
    return status, out.getvalue(), err.getvalue()


def test_the_response_on_stdout_the_logs_between_start_and_report_on_stderr(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"name": "Ada"}))
    env = tmp_path / "env.json"  # SAM's format: per function, then for all
    env.write_text(json.dumps({"Greeter": {"GREETING": "bonjour"}, "Parameters": {
        "GREETING": "hi", "STAGE": "dev", "UNDECLARED": "x"}}))  # fmt: skip
    status, out, err = run(
        ["Greeter", "-t", str(template), "-e", str(event), "--env-vars", str(env)], monkeypatch
    )
    assert status == 0, err
    assert json.loads(out) == {"greeting": "bonjour", "stage": "dev", "name": "Ada",
                               "undeclared": None}  # fmt: skip
    request_id = re.search(r"^START RequestId: (\S+) Version: \$LATEST$", err, re.M)
    assert request_id, err
    assert f"greeting Ada request {request_id[1]}" in err  # the function's print, its context
    assert re.search(rf"^REPORT RequestId: {request_id[1]}\tDuration: ", err, re.M), err
    assert err.index("START") < err.index("greeting Ada") < err.index("END RequestId")
    assert [err.count(f"{frame} RequestId: ") for frame in ("START", "END", "REPORT")] == [1] * 3


def test_a_function_error_is_the_response_and_exit_status_1(
    template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, _ = run(["Greeter", "-t", str(template), "-e", "-"], monkeypatch, '{"fail": 1}')
    assert status == 1
    error = json.loads(out)
    assert (error["errorType"], error["errorMessage"]) == ("ValueError", "asked to fail")


def test_a_function_that_is_not_in_the_template_is_a_usage_error(
    template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, err = run(["Nope", "-t", str(template)], monkeypatch)
    assert (status, out) == (2, "")
    assert "Nope is not a function of the template; its functions: Greeter, Other" in err
    status, _, err = run(["-t", str(template)], monkeypatch)  # two functions: name one
    assert status == 2 and "name the function to invoke, one of: Greeter, Other" in err
