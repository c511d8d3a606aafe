"""A function's log in CloudWatch Logs, as Lambda writes it (features/lambda_logs.py): its
output framed by START / END / REPORT in its log group (LoggingConfig's LogGroup, else
/aws/lambda/<name>), a stream per execution environment, read with ``aws logs`` as on AWS;
wherever the function runs (threads of the cloud, environment processes)."""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

HANDLER = """\
import logging
import sys
import threading


def structured(event, context):
    logging.getLogger().info("quiet %s", event["tag"])
    logging.getLogger("app").warning("loud %s", event["tag"])
    print("plain", event["tag"])
    return {"request": context.aws_request_id}


def handler(event, context):
    print("hello from", context.function_name, event["tag"])
    print("to stderr", file=sys.stderr)
    thread = threading.Thread(target=lambda: print("from a thread of the handler"))
    thread.start()
    thread.join()
    if event.get("fail"):
        raise ValueError("it went wrong")
    return {"group": context.log_group_name, "stream": context.log_stream_name,
            "request": context.aws_request_id}
"""

TEMPLATE = """\
AWSTemplateFormatVersion: '2010-09-09'
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Runtime: python3.13
    Handler: index.handler
    CodeUri: src/
Resources:
  Talker:
    Type: AWS::Serverless::Function
    Properties:
      FunctionName: logs-talker
  Elsewhere:
    Type: AWS::Serverless::Function
    Properties:
      FunctionName: logs-elsewhere
      LoggingConfig:
        LogGroup: !Ref Shared
  Structured:
    Type: AWS::Serverless::Function
    Properties:
      FunctionName: logs-structured
      Handler: index.structured
      LoggingConfig: {LogFormat: JSON, ApplicationLogLevel: WARN}
  Shared:
    Type: AWS::Logs::LogGroup
    Properties:
      LogGroupName: /shared/functions
"""
STREAM = re.compile(r"\d{4}/\d\d/\d\d/\[\$LATEST\][0-9a-f]{32}")


@pytest.fixture(scope="module")
def cloud(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LocalCloud]:
    path: Path = tmp_path_factory.mktemp("logs") / "template.yaml"
    path.write_text(TEMPLATE)
    (path.parent / "src").mkdir()
    (path.parent / "src" / "index.py").write_text(HANDLER)
    with LocalCloud(path, stack_name="lambda-logs") as running:
        yield running


def invoke(function: str, **event: Any) -> tuple[str, dict[str, Any], Any]:
    """The invocation's tag (in the line it prints), Invoke's reply and its payload."""
    tag = uuid.uuid4().hex
    reply = boto3.client("lambda").invoke(
        FunctionName=function, Payload=json.dumps({"tag": tag, **event})
    )
    return tag, reply, json.loads(reply["Payload"].read())


def events(group: str, tag: str) -> list[dict[str, Any]]:
    """``aws logs filter-log-events``: the events of the invocation tagged ``tag``, from its
    START to its REPORT."""
    found = boto3.client("logs").filter_log_events(logGroupName=group)["events"]
    line = next(i for i, e in enumerate(found) if e["message"].endswith(f" {tag}"))
    start = max(i for i in range(line) if found[i]["message"].startswith("START RequestId: "))
    end = min(i for i in range(line, len(found)) if found[i]["message"].startswith("REPORT "))
    return found[start : end + 1]


def test_a_functions_output_is_in_its_log_group(cloud: LocalCloud) -> None:
    tag, _, answer = invoke("logs-talker")
    logged = events("/aws/lambda/logs-talker", tag)
    messages = [e["message"] for e in logged]
    request_id = messages[0].split()[2]
    assert messages[0] == f"START RequestId: {request_id} Version: $LATEST"
    assert answer["request"] == request_id
    assert f"hello from logs-talker {tag}" in messages
    assert "to stderr" in messages
    assert "from a thread of the handler" in messages
    assert messages[-2] == f"END RequestId: {request_id}"
    assert re.match(rf"REPORT RequestId: {request_id}\tDuration: [\d.]+ ms\t", messages[-1])
    assert "Memory Size: 128 MB" in messages[-1]
    (stream,) = {e["logStreamName"] for e in logged}
    assert STREAM.fullmatch(stream), stream
    # the context's names (in a process: the environment's variables) are where it went
    assert (answer["group"], answer["stream"]) == ("/aws/lambda/logs-talker", stream)
    again, _, _ = invoke("logs-talker")
    assert {e["logStreamName"] for e in events("/aws/lambda/logs-talker", again)} == {stream}


def test_a_function_error_is_logged_as_the_runtime_logs_it(cloud: LocalCloud) -> None:
    tag, reply, error = invoke("logs-talker", fail=True)
    assert reply["FunctionError"] == "Unhandled" and error["errorType"] == "ValueError"
    messages = [e["message"] for e in events("/aws/lambda/logs-talker", tag)]
    assert "[ERROR] ValueError: it went wrong" in messages, messages
    assert "Traceback (most recent call last):" in messages
    assert "Status" not in messages[-1], messages[-1]  # the environment goes on


def test_a_logging_configs_log_group_gets_the_log(cloud: LocalCloud) -> None:
    tag, _, _ = invoke("logs-elsewhere")
    messages = [e["message"] for e in events("/shared/functions", tag)]
    assert f"hello from logs-elsewhere {tag}" in messages
    groups = boto3.client("logs").describe_log_groups(logGroupNamePrefix="/aws/lambda/logs-")
    assert [g["logGroupName"] for g in groups["logGroups"]] == ["/aws/lambda/logs-talker"]


def test_invokes_request_id_is_the_invocations(cloud: LocalCloud) -> None:
    """Invoke answers with the invocation's request id (x-amzn-RequestId): the one the
    function's context, START line and REPORT carry, by which its log is found."""
    tag, reply, answer = invoke("logs-talker")
    assert reply["ResponseMetadata"]["RequestId"] == answer["request"]
    assert events("/aws/lambda/logs-talker", tag)[0]["message"].split()[2] == answer["request"]


def test_log_type_tail_answers_the_last_4_kb_of_the_invocations_log(cloud: LocalCloud) -> None:
    """``aws lambda invoke --log-type Tail``: LogResult, the base64 of the last 4 KB of the
    invocation's log (its own lines, START to REPORT); none without it."""
    tag = uuid.uuid4().hex
    lam = boto3.client("lambda")
    reply = lam.invoke(FunctionName="logs-talker", Payload=json.dumps({"tag": tag}), LogType="Tail")
    log = base64.b64decode(reply["LogResult"]).decode()
    request_id = reply["ResponseMetadata"]["RequestId"]
    assert log.startswith(f"START RequestId: {request_id} ")
    assert f"hello from logs-talker {tag}\n" in log
    assert re.search(rf"\nREPORT RequestId: {request_id}\tDuration: [^\n]*\n$", log)
    long = lam.invoke(
        FunctionName="logs-talker", Payload=json.dumps({"tag": "x" * 9000}), LogType="Tail"
    )
    tail = base64.b64decode(long["LogResult"])
    assert len(tail) == 4096 and tail.endswith(b"\n") and b"REPORT RequestId" in tail
    assert "LogResult" not in lam.invoke(
        FunctionName="logs-talker", Payload=json.dumps({"tag": tag})
    )


def test_a_json_log_format_writes_the_runtimes_records_and_lambdas_events_as_json(
    cloud: LocalCloud,
) -> None:
    """LoggingConfig LogFormat JSON: the runtime writes each logging record as a JSON object,
    those below ApplicationLogLevel left out; print's lines stay as they are; Lambda's START,
    END and REPORT are its platform events (platform.start, .runtimeDone, .report)."""
    tag, reply, answer = invoke("logs-structured")
    request_id = answer["request"]
    found = boto3.client("logs").filter_log_events(logGroupName="/aws/lambda/logs-structured")
    messages = [e["message"] for e in found["events"]]
    start, *lines, done, report = (json.loads(m) if m.startswith("{") else m for m in messages)
    assert start["type"] == "platform.start"
    assert start["record"] == {"requestId": request_id, "version": "$LATEST"}
    assert f"plain {tag}" in lines
    records = [line for line in lines if isinstance(line, dict)]
    assert [(r["level"], r["message"], r["logger"], r["requestId"]) for r in records] == [
        ("WARNING", f"loud {tag}", "app", request_id)
    ]  # the INFO record is below ApplicationLogLevel WARN
    assert (done["type"], done["record"]["status"]) == ("platform.runtimeDone", "success")
    assert report["type"] == "platform.report" and report["record"]["requestId"] == request_id
    assert set(report["record"]["metrics"]) >= {
        "durationMs", "billedDurationMs", "memorySizeMB", "maxMemoryUsedMB"
    }  # fmt: skip
    assert "FunctionError" not in reply
