"""A layer's external extensions on the local cloud (environments/extensions.py): started with
the environment, registered through the Extensions API, given INVOKE before each invocation
and SHUTDOWN when the environment ends; their Telemetry API subscription gets the function's
log lines and the platform events at ``sandbox:8080``, a fixed port each environment has to
itself; a file that cannot be executed fails the init with Lambda's Extension.LaunchError."""

from __future__ import annotations

import base64
import json
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from serverless_patterns import patterns, steps

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

# Records what it is told in $RECORDS/<pid>.jsonl: its registration, each event, each batch
# of telemetry (posted to the HTTP server it runs on sandbox:8080, as Lambda's samples do).
EXTENSION = """\
#!/usr/bin/env python3
import json, os, sys, threading, urllib.error, urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

API = "http://" + os.environ["AWS_LAMBDA_RUNTIME_API"]
OUT = open(os.path.join(os.environ["RECORDS"], "%d.jsonl" % os.getpid()), "a", buffering=1)

def record(**entry):
    OUT.write(json.dumps(entry) + "\\n")

class Telemetry(BaseHTTPRequestHandler):
    def do_POST(self):
        batch = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.end_headers()
        record(telemetry=batch)
    def log_message(self, *args):
        pass

def call(method, path, body=None, **headers):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(API + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request) as reply:
        return reply.headers, json.loads(reply.read() or b"null") if method != "PUT" else None

server = HTTPServer(("sandbox", 8080), Telemetry)
threading.Thread(target=server.serve_forever, daemon=True).start()
headers, body = call("POST", "/2020-01-01/extension/register", {"events": ["INVOKE", "SHUTDOWN"]},
                     **{"Lambda-Extension-Name": "recorder",
                        "Lambda-Extension-Accept-Feature": "accountId"})
me = headers["Lambda-Extension-Identifier"]
record(registered=body, address=server.server_address[0])
try:  # refused: no such schema
    call("PUT", "/2022-07-01/telemetry", {"schemaVersion": "1999-01-01", "types": ["platform"],
         "destination": {"protocol": "HTTP", "URI": "http://sandbox:8080"}},
         **{"Lambda-Extension-Identifier": me, "Content-Type": "application/json"})
except urllib.error.HTTPError as refused:
    record(refused=refused.code, answer=json.loads(refused.read()))
call("PUT", os.environ.get("SUBSCRIBE", "/2022-07-01/telemetry"), {
    "schemaVersion": "2022-07-01", "types": ["platform", "function"],
    "destination": {"protocol": "HTTP", "URI": "http://sandbox:8080"},
    "buffering": {"timeoutMs": 25, "maxItems": 1000, "maxBytes": 262144},
}, **{"Lambda-Extension-Identifier": me, "Content-Type": "application/json"})
print("recorder: ready", flush=True)
while True:
    _, event = call("GET", "/2020-01-01/extension/event/next",
                    **{"Lambda-Extension-Identifier": me})
    record(event=event)
    if event["eventType"] == "SHUTDOWN":
        sys.exit(0)
"""

HANDLER = """\
import time

def handler(event, context):
    print("handler says hello", context.aws_request_id)
    time.sleep(event.get("sleep", 0))
    return {"request": context.aws_request_id}
"""

TEMPLATE = """\
AWSTemplateFormatVersion: '2010-09-09'
Transform: AWS::Serverless-2016-10-31
Resources:
  Recorded:
    Type: AWS::Serverless::Function
    Properties:
      FunctionName: extensions-recorded
      Runtime: python3.13
      Handler: index.handler
      CodeUri: src/
      Timeout: 10
      Layers: [!Ref Recorder]
      Environment: {Variables: {RECORDS: %(records)s}}
  LogsApi:
    Type: AWS::Serverless::Function
    Properties:
      FunctionName: extensions-logs-api
      Runtime: python3.13
      Handler: index.handler
      CodeUri: src/
      Layers: [!Ref Recorder]
      Environment: {Variables: {RECORDS: %(records)s, SUBSCRIBE: /2020-08-15/logs}}
  Recorder:
    Type: AWS::Serverless::LayerVersion
    Properties: {ContentUri: recorder/}
  Broken:
    Type: AWS::Serverless::Function
    Properties:
      FunctionName: extensions-broken
      Runtime: python3.13
      Handler: index.handler
      CodeUri: src/
      Layers: [!Ref NotExecutable]
  NotExecutable:
    Type: AWS::Serverless::LayerVersion
    Properties: {ContentUri: not-executable/}
  Crashing:
    Type: AWS::Serverless::Function
    Properties:
      FunctionName: extensions-crashing
      Runtime: python3.13
      Handler: index.handler
      CodeUri: src/
      Layers: [!Ref ExitsAtOnce]
  ExitsAtOnce:
    Type: AWS::Serverless::LayerVersion
    Properties: {ContentUri: exits/}
"""


@pytest.fixture
def records(tmp_path: Path) -> Path:
    return tmp_path / "records"


@pytest.fixture
def cloud(tmp_path: Path, records: Path) -> Iterator[LocalCloud]:
    records.mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.py").write_text(HANDLER)
    for layer, code, mode in (
        ("recorder", EXTENSION, 0o755),
        ("not-executable", EXTENSION, 0o644),
        ("exits", "#!/bin/sh\nexit 3\n", 0o755),
    ):
        extension = tmp_path / layer / "extensions" / "recorder"
        extension.parent.mkdir(parents=True)
        extension.write_text(code)
        extension.chmod(mode)
    template = tmp_path / "template.yaml"
    template.write_text(TEMPLATE % {"records": json.dumps(str(records))})
    with LocalCloud(template, stack_name="extensions") as running:
        yield running


def entries(records: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for f in records.glob("*.jsonl") for line in f.read_text().splitlines()
    ]


def wait_for(found: Callable[[], Any], what: str, timeout: float = 20) -> Any:
    until = time.monotonic() + timeout
    while not (result := found()):
        assert time.monotonic() < until, f"no {what}"
        time.sleep(0.05)
    return result


def invoke(function: str, **event: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    reply = boto3.client("lambda").invoke(
        FunctionName=function, Payload=json.dumps(event), LogType="Tail"
    )
    return reply, json.loads(reply["Payload"].read())


def test_an_extension_is_told_of_each_invocation_and_gets_its_telemetry(
    cloud: LocalCloud, records: Path
) -> None:
    first, answer = invoke("extensions-recorded")
    assert "FunctionError" not in first, answer
    log = base64.b64decode(first["LogResult"]).decode()
    assert "EXTENSION\tName: recorder\tState: Ready\tEvents: [INVOKE,SHUTDOWN]" in log
    assert "recorder: ready" in log  # its output is in the function's log
    requests = [answer["request"], invoke("extensions-recorded")[1]["request"]]

    seen = entries(records)
    registered = next(e["registered"] for e in seen if "registered" in e)
    assert registered == {
        "functionName": "extensions-recorded",
        "functionVersion": "$LATEST",
        "handler": "index.handler",
        "accountId": "123456789012",
    }
    refused = next(e for e in seen if "refused" in e)
    assert (refused["refused"], refused["answer"]["errorType"]) == (400, "ValidationError")
    assert "schemaVersion" in refused["answer"]["errorMessage"]
    invokes = [e["event"] for e in seen if e.get("event", {}).get("eventType") == "INVOKE"]
    assert [e["requestId"] for e in invokes] == requests  # before each invocation, in order
    assert invokes[0]["invokedFunctionArn"].endswith(":function:extensions-recorded")
    assert invokes[0]["deadlineMs"] > time.time() * 1000 - 60_000

    def telemetry() -> list[dict[str, Any]]:
        return [event for e in entries(records) for event in e.get("telemetry", [])]

    wait_for(
        lambda: (
            {"platform.report"}
            <= {e["type"] for e in telemetry() if requests[1] in json.dumps(e["record"])}
        ),
        "platform.report of the second invocation",
    )
    events = telemetry()
    lines = [e["record"] for e in events if e["type"] == "function"]
    assert [f"handler says hello {r}" in lines for r in requests] == [True, True]
    kinds = [e["type"] for e in events]
    for kind in ("platform.initStart", "platform.initReport", "platform.start",
                 "platform.runtimeDone", "platform.report"):  # fmt: skip
        assert kind in kinds, kinds
    assert "extension" not in kinds  # not subscribed: its own output is not sent back to it
    report = next(e["record"] for e in events if e["type"] == "platform.report")
    assert report["requestId"] == requests[0] and report["status"] == "success"
    assert report["metrics"]["initDurationMs"] > 0
    assert report["metrics"]["memorySizeMB"] == 128


def test_a_logs_api_subscription_gets_that_apis_events(cloud: LocalCloud, records: Path) -> None:
    """The Logs API (2020-08-15), which the Telemetry API supersedes: the same lines and
    reports, in its own schema."""
    request = invoke("extensions-logs-api")[1]["request"]

    def events() -> list[dict[str, Any]]:
        return [event for e in entries(records) for event in e.get("telemetry", [])]

    wait_for(lambda: "platform.report" in {e["type"] for e in events()}, "platform.report")
    got = events()
    kinds = {e["type"] for e in got}
    assert {"platform.start", "platform.end", "platform.report", "function"} <= kinds
    assert not any(k.startswith("platform.init") or k == "platform.runtimeDone" for k in kinds)
    assert {"type": "function", "record": f"handler says hello {request}\n"} in [
        {"type": e["type"], "record": e["record"]} for e in got
    ]
    report = next(e["record"] for e in got if e["type"] == "platform.report")
    assert set(report) == {"requestId", "metrics"} and report["requestId"] == request
    end = next(e["record"] for e in got if e["type"] == "platform.end")
    assert end == {"requestId": request}


def test_each_environment_has_its_sandbox_and_extensions_are_shut_down(
    cloud: LocalCloud, records: Path
) -> None:
    """Two environments at once: each extension listens on sandbox:8080 of its own. When the
    cloud stops, each is sent SHUTDOWN and exits."""
    answers: list[Any] = []
    threads = [
        threading.Thread(target=lambda: answers.append(invoke("extensions-recorded", sleep=1)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(answers) == 2 and all("FunctionError" not in reply for reply, _ in answers)
    addresses = {e["address"] for e in entries(records) if "registered" in e}
    assert len(addresses) == 2, addresses  # two environments, two sandboxes
    cloud.stop()
    shutdowns = [
        e["event"] for e in entries(records) if e.get("event", {}).get("eventType") == "SHUTDOWN"
    ]
    assert len(shutdowns) == 2
    assert {e["shutdownReason"] for e in shutdowns} == {"spindown"}


def test_an_extension_that_exits_before_it_registers_fails_the_init(cloud: LocalCloud) -> None:
    reply, answer = invoke("extensions-crashing")
    assert reply["FunctionError"] == "Unhandled"
    assert answer == {"errorType": "Extension.Crash", "errorMessage": "Error: exit status 3"}


def test_an_extension_that_cannot_be_executed_fails_the_init(cloud: LocalCloud) -> None:
    reply, answer = invoke("extensions-broken")
    assert reply["FunctionError"] == "Unhandled"
    assert answer["errorType"] == "Extension.LaunchError"
    assert answer["errorMessage"].endswith("fork/exec /opt/extensions/recorder: permission denied")
    log = base64.b64decode(reply["LogResult"]).decode()
    assert (
        "EXTENSION\tName: recorder\tState: LaunchError\tEvents: []\tError Type: PermissionDenied"
        in log
    )


def test_the_published_telemetry_extension_runs_once_it_is_executable(tmp_path: Path) -> None:
    """serverless-patterns' lambda-extension-telemetryapi-s3: its extension (Python, on
    sandbox:8080) gets the function's lines through the Telemetry API and stores them in the
    bucket at each INVOKE. Published without its execute bit, it is refused as Lambda refuses
    it (corpus: pending); with it, its README's steps pass."""
    name = "lambda-extension-telemetryapi-s3"
    pattern = patterns()[name]
    copy = tmp_path / name
    shutil.copytree(pattern.dir, copy)
    (copy / "extensionsrc" / "extensions" / "telemetryapi-s3-extension.py").chmod(0o755)
    with LocalCloud(next(copy.glob("template.y*ml")), stack_name="telemetry-s3") as cloud:
        steps("PENDING")[name][0](cloud, pattern)
