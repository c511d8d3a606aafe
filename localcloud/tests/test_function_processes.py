"""Each function runs in environment processes of its own (features/lambda_processes.py):
its own variables, its role's credentials judged over HTTP, its configuration as it is now."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud
from localcloud.environments import RuntimeMissing, default_runtime_python, runtimes
from localcloud.faults import named_error
from localcloud.features import lambda_processes

pytestmark = [pytest.mark.e2e]

CODE = """\
import os
import subprocess
import sys
import threading
import time
import boto3
def handler(event, context):
    try:
        found = boto3.client("s3").list_objects_v2(Bucket=os.environ["BUCKET"])
        listed = len(found.get("Contents", []))
    except Exception as exc:
        listed = type(exc).__name__ + ": " + str(exc)
    return {"queue": os.environ["QUEUE_URL"], "listed": listed,
            "function": os.environ["AWS_LAMBDA_FUNCTION_NAME"]}
def slow(event, context):
    time.sleep(event.get("sleep", 0.3))
    if event.get("then_put"):  # after a sleep past the timeout: must never happen
        boto3.client("s3").put_object(Bucket=os.environ["BUCKET"], Key="late", Body=b"x")
    return {"pid": os.getpid()}
def aside(event, context):  # the function's credentials, from a thread and a subprocess
    listing = "import boto3, os; boto3.client('s3').list_objects_v2(Bucket=os.environ['BUCKET'])"
    seen = []
    thread = threading.Thread(target=lambda: seen.append(_outcome(listing)))
    thread.start()
    thread.join()
    child = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True)
    return {"thread": seen[0], "subprocess": "AccessDenied" in child.stderr or child.returncode}
def version(event, context):
    return {"python": "%d.%d" % sys.version_info[:2]}
def _outcome(code):
    try:
        exec(code, {})
        return "allowed"
    except Exception as exc:
        return type(exc).__name__ + str(exc)[:60]
"""
STAGED = """\
import os
import time
import boto3
import staged  # at init: a library the first environment reports
LOADED = getattr(getattr(boto3.DEFAULT_SESSION, "_loader", None), "_cache", {})
S3_DATA_AT_INIT = any(key[:2] == ("load_service_model", "s3") for key in LOADED)
def stage(event, context):
    time.sleep(event.get("sleep", 0))
    s3 = boto3.client("s3")  # from the default session
    own = (s3._request_signer._credentials.access_key == os.environ["AWS_ACCESS_KEY_ID"]
           and s3.meta.endpoint_url == os.environ["AWS_ENDPOINT_URL"])
    return {"stage": staged.STAGE, "imported_here": staged.PID == os.getpid(),
            "s3_data_at_init": S3_DATA_AT_INIT, "own_credentials_and_endpoint": own}
"""
POINTER = """\
import jsonpointer
def pointer(event, context):
    return {"resolved": jsonpointer.resolve_pointer({"a": [1, 2]}, "/a/1"),
            "from": jsonpointer.__file__}
"""
DURABLE = """\
from aws_durable_execution_sdk_python import durable_execution
from aws_durable_execution_sdk_python.config import Duration
@durable_execution
def handler(event, context):
    print("invocation")
    first = context.step(lambda _: event["n"] + 1, name="one")
    context.wait(Duration.from_seconds(600), name="pause")
    return {"first": first, "second": context.step(lambda _: first * 10, name="two")}
"""
TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Runtime: python3.13
    Handler: index.handler
    CodeUri: src/
Resources:
  Box:
    Type: AWS::S3::Bucket
  Reader:
    Type: AWS::Serverless::Function
    Properties:
      Environment: {Variables: {QUEUE_URL: first, BUCKET: !Ref Box}}
      Policies: [{S3ReadPolicy: {BucketName: !Ref Box}}]
  Other:
    Type: AWS::Serverless::Function
    Properties:
      Environment: {Variables: {QUEUE_URL: second, BUCKET: !Ref Box}}
  Aside:
    Type: AWS::Serverless::Function
    Properties:
      Handler: index.aside
      Environment: {Variables: {BUCKET: !Ref Box}}
  Slow:
    Type: AWS::Serverless::Function
    Properties:
      Handler: index.slow
      Timeout: 1
      Environment: {Variables: {BUCKET: !Ref Box}}
      Policies: [{S3CrudPolicy: {BucketName: !Ref Box}}]
  Needs:  # an unbuilt CodeUri whose requirements.txt names a package the runtime has not
    Type: AWS::Serverless::Function
    Properties: {CodeUri: needs/, Handler: index.pointer}
  Missing:  # the same code without requirements.txt
    Type: AWS::Serverless::Function
    Properties: {CodeUri: missing/, Handler: index.pointer}
  Shared:
    Type: AWS::Serverless::LayerVersion
    Properties: {ContentUri: shared/}
  Blue:  # a library of a layer that reads a variable when imported, in two functions
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: staged/
      Handler: index.stage
      Layers: [!Ref Shared]
      Environment: {Variables: {STAGE: blue}}
  Green:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: staged/
      Handler: index.stage
      Layers: [!Ref Shared]
      Environment: {Variables: {STAGE: green}}
  Single:
    Type: AWS::Serverless::Function
    Properties:
      Handler: index.slow
      ReservedConcurrentExecutions: 1
  Durable:  # its SDK (3.x, as sam build installs it) calls the durable APIs at the endpoint
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: durable/
      Handler: index.handler
      Timeout: 30
      DurableConfig: {ExecutionTimeout: 900}
  Fan:
    Type: AWS::Serverless::StateMachine
    Properties:
      Policies: [{LambdaInvokePolicy: {FunctionName: !Ref Slow}},
                 {LambdaInvokePolicy: {FunctionName: !Ref Single}}]
      Definition:
        StartAt: Each
        States:
          Each:
            Type: Map
            ItemsPath: $.items
            MaxConcurrency: 0
            ItemProcessor:
              StartAt: Call
              States:
                Call:
                  Type: Task
                  Resource: arn:aws:states:::lambda:invoke
                  Parameters: {FunctionName.$: $.function, Payload: {sleep: 0.3}}
                  OutputPath: $.Payload
                  Retry:
                    - ErrorEquals: [Lambda.TooManyRequestsException]
                      IntervalSeconds: 1
                      MaxAttempts: 99
                      BackoffRate: 1
                  End: true
            End: true
  Older:
    Type: AWS::Serverless::Function
    Properties: {Runtime: python3.12, Handler: index.version}
  Newer:
    Type: AWS::Serverless::Function
    Properties: {Runtime: python3.14, Handler: index.version}
  Late:
    Type: AWS::Serverless::StateMachine
    Properties:
      Policies: [{LambdaInvokePolicy: {FunctionName: !Ref Slow}}]
      Definition:
        StartAt: Call
        States:
          Call:
            Type: Task
            Resource: arn:aws:states:::lambda:invoke
            Parameters: {FunctionName: !Ref Slow, Payload: {sleep: 3, then_put: true}}
            End: true
"""


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    template: Path = tmp_path_factory.mktemp("processes") / "template.yaml"
    template.write_text(TEMPLATE)
    (template.parent / "src").mkdir()
    (template.parent / "src" / "index.py").write_text(CODE)
    for name in ("needs", "missing"):
        (template.parent / name).mkdir()
        (template.parent / name / "index.py").write_text(POINTER)
    (template.parent / "needs" / "requirements.txt").write_text("jsonpointer==3.12\n")
    (template.parent / "durable").mkdir()
    (template.parent / "durable" / "index.py").write_text(DURABLE)
    (template.parent / "durable" / "requirements.txt").write_text(
        "aws-durable-execution-sdk-python==3.0.0\n"
    )
    (template.parent / "staged").mkdir()
    (template.parent / "staged" / "index.py").write_text(STAGED)
    (template.parent / "shared" / "python").mkdir(parents=True)
    (template.parent / "shared" / "python" / "staged.py").write_text(
        "import os\nSTAGE, PID = os.environ['STAGE'], os.getpid()\n"
    )
    with LocalCloud(template, stack_name="processes") as running:
        yield running


def call(cloud: LocalCloud, function: str) -> dict[str, object]:
    reply = boto3.client("lambda").invoke(FunctionName=cloud.functions[function])
    assert "FunctionError" not in reply, reply["Payload"].read()
    return dict(json.loads(reply["Payload"].read()))


def test_each_function_has_its_own_variables_and_credentials(cloud: LocalCloud) -> None:
    reader, other = call(cloud, "Reader"), call(cloud, "Other")
    assert (reader["queue"], other["queue"]) == ("first", "second")
    assert reader["listed"] == 0  # its role may list the bucket
    assert "AccessDenied" in str(other["listed"])  # judged by its own role's credentials
    assert "assumed-role" in str(other["listed"])


def test_a_function_runs_on_its_runtimes_python_else_the_nearest_with_a_warning(
    cloud: LocalCloud, caplog: pytest.LogCaptureFixture
) -> None:
    """Runtime python3.12 runs on this machine's Python 3.12 (a runtime environment made for
    it once); python3.14, which this machine has not, on the nearest, Python 3.13, saying so."""
    with caplog.at_level(logging.WARNING, logger="localcloud"):
        newer = call(cloud, "Newer")["python"]
        older = call(cloud, "Older")["python"]
    assert f"{cloud.functions['Newer']}: Runtime python3.14 runs on Python {newer}" in caplog.text
    assert newer == "3.13" or not default_runtime_python().resolve().name.startswith("python3.13")
    assert "Runtime python3.13" not in caplog.text
    # on 3.12 where this machine has one and its runtime could be made (else the nearest, said)
    said = f"{cloud.functions['Older']}: Runtime python3.12 runs on Python {older}"
    assert (
        older == "3.12"
        if runtimes.interpreter(12) and said not in caplog.text
        else said in caplog.text
    )


def test_a_configuration_update_reaches_the_next_environment(cloud: LocalCloud) -> None:
    name = cloud.functions["Other"]
    boto3.client("lambda").update_function_configuration(
        FunctionName=name, Environment={"Variables": {"QUEUE_URL": "third", "BUCKET": "x"}}
    )
    assert call(cloud, "Other")["queue"] == "third"


TRUST = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
    "Action": "sts:AssumeRole", "Principal": {"Service": "lambda.amazonaws.com"}}]})  # fmt: skip


def _zip(source: str) -> bytes:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as code:
        code.writestr("index.py", source)
    return archive.getvalue()


def test_code_given_to_the_lambda_api_is_the_code_that_runs(cloud: LocalCloud) -> None:
    """CreateFunction's zip runs (moto echoes the payload); UpdateFunctionCode's runs from
    the next invocation; a version published before keeps its own code."""
    lam, iam = boto3.client("lambda"), boto3.client("iam")
    role = iam.create_role(RoleName="api-code", AssumeRolePolicyDocument=TRUST)
    first = "def handler(event, context):\n    return {'code': 1, 'got': event}\n"
    lam.create_function(
        FunctionName="api-code",
        Role=role["Role"]["Arn"],
        Runtime="python3.13",
        Handler="index.handler",
        Code={"ZipFile": _zip(first)},
        Publish=True,
    )

    def invoke(**qualifier: str) -> Any:
        reply = lam.invoke(FunctionName="api-code", Payload=b'{"n": 7}', **qualifier)
        return json.loads(reply["Payload"].read())

    assert invoke() == {"code": 1, "got": {"n": 7}}
    lam.update_function_code(FunctionName="api-code", ZipFile=_zip(first.replace("1", "2")))
    assert invoke() == {"code": 2, "got": {"n": 7}}
    assert invoke(Qualifier="1") == {"code": 1, "got": {"n": 7}}


def test_a_zip_with_an_entry_outside_it_is_lambdas_invalid_zip_file(cloud: LocalCloud) -> None:
    lam = boto3.client("lambda")
    role = boto3.client("iam").create_role(RoleName="outside", AssumeRolePolicyDocument=TRUST)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as code:
        code.writestr("../index.py", "def handler(event, context):\n    return {}\n")
    lam.create_function(FunctionName="outside", Role=role["Role"]["Arn"], Runtime="python3.13",
                        Handler="index.handler", Code={"ZipFile": archive.getvalue()})  # fmt: skip
    with pytest.raises(ClientError) as refused:
        lam.invoke(FunctionName="outside", Payload=b"{}")
    error = refused.value.response
    assert (error["Error"]["Code"], error["ResponseMetadata"]["HTTPStatusCode"]) == (
        "InvalidZipFileException", 502)  # fmt: skip
    assert "outside its directory" in error["Error"]["Message"]


def run(cloud: LocalCloud, machine: str, execution_input: dict[str, object]) -> dict[str, Any]:
    sfn = boto3.client("stepfunctions")
    arn = sfn.start_execution(stateMachineArn=cloud.outputs.get(machine) or _machine(machine),
                              input=json.dumps(execution_input))["executionArn"]  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        described = sfn.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING":
            return dict(described)
        time.sleep(0.1)
    raise AssertionError(f"{arn} still running")


def _machine(logical_id: str) -> str:
    machines = boto3.client("stepfunctions").list_state_machines()["stateMachines"]
    return next(m["stateMachineArn"] for m in machines if logical_id in m["name"])


def test_concurrent_calls_run_in_environments_of_their_own(cloud: LocalCloud) -> None:
    """20 calls at once: several environments of Slow; Single (ReservedConcurrentExecutions
    1) throttles the others (Lambda.TooManyRequestsException) and the Retry gets each done:
    every item once, one environment."""
    items = [{"function": cloud.functions["Slow"]}] * 10 + [
        {"function": cloud.functions["Single"]}] * 10  # fmt: skip
    cloud.clock.scale = 0.05  # the Retry's 1 s waits really wait (50 ms) for the busy one
    try:
        done = run(cloud, "Fan", {"items": items})
    finally:
        cloud.clock.scale = 0.0
    assert done["status"] == "SUCCEEDED", (done.get("error"), done.get("cause"))
    pids = [r["pid"] for r in json.loads(done["output"])]
    assert len(pids) == 20
    assert len(set(pids[:10])) > 1  # Slow: calls ran at once, each in an environment
    assert len(set(pids[10:])) == 1  # Single: one environment, never two calls at once
    history = boto3.client("stepfunctions").get_execution_history(
        executionArn=done["executionArn"], maxResults=1000)["events"]  # fmt: skip
    errors = [e["taskFailedEventDetails"]["error"] for e in history if e["type"] == "TaskFailed"]
    assert "Lambda.TooManyRequestsException" in errors


def test_the_account_concurrency_throttles_what_no_reservation_covers(
    cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An account of 2 concurrent executions, 1 reserved by Single: while Slow runs, another
    function without a reservation is throttled (TooManyRequestsException), Single is not."""
    monkeypatch.setattr(cloud.runtime.processes, "account_concurrency", 2)
    client = boto3.client("lambda")
    slow = {"FunctionName": cloud.functions["Slow"], "Payload": json.dumps({"sleep": 0.9})}
    busy = threading.Thread(target=client.invoke, kwargs=slow)
    busy.start()
    time.sleep(0.4)  # Slow is running (Timeout 1 s)
    with pytest.raises(client.exceptions.TooManyRequestsException):
        client.invoke(FunctionName=cloud.functions["Reader"])
    assert "FunctionError" not in client.invoke(FunctionName=cloud.functions["Single"])
    busy.join(10)
    assert call(cloud, "Reader")["queue"] == "first"  # the account's concurrency is free again


def test_a_timed_out_call_is_stopped_with_what_it_would_have_done(cloud: LocalCloud) -> None:
    done = run(cloud, "Late", {})
    assert done["status"] == "FAILED"
    assert done["error"] == "Sandbox.Timedout", done
    time.sleep(2.5)  # past the handler's own sleep: the environment was stopped, no write
    listed = boto3.client("s3").list_objects_v2(Bucket=cloud.outputs.get("Box") or _box())
    assert "Contents" not in listed


def _box() -> str:
    return next(
        b["Name"] for b in boto3.client("s3").list_buckets()["Buckets"] if "box" in b["Name"]
    )


def test_threads_and_subprocesses_call_with_the_functions_credentials(cloud: LocalCloud) -> None:
    reply = call(cloud, "Aside")
    assert reply["thread"].startswith("AccessDenied")
    assert reply["subprocess"] is True


def test_injected_faults_answer_before_the_environment(cloud: LocalCloud) -> None:
    """``fail_next``, a timeout and a gate act on process functions as on in-process ones: the
    error document Lambda's Python runtime writes (errorType the exception's name), then the
    next call runs the handler again; a held call waits until released."""
    lam, name = boto3.client("lambda"), cloud.functions["Reader"]
    cloud.fail_next("Reader", named_error("StorageUnavailableError", "S3 SlowDown"))
    failed = lam.invoke(FunctionName=name)
    assert failed["FunctionError"] == "Unhandled"
    document = json.loads(failed["Payload"].read())
    assert (document["errorType"], document["errorMessage"]) == (
        "StorageUnavailableError", "S3 SlowDown")  # fmt: skip
    cloud.faults.timeout(name, start=cloud.invocation_count(name) + 1)
    timed_out = json.loads(lam.invoke(FunctionName=name)["Payload"].read())
    assert timed_out["errorType"] == "Sandbox.Timedout"
    assert call(cloud, "Reader")["queue"] == "first"

    gate = cloud.faults.gate(name, invocation=cloud.invocation_count(name) + 1)
    answers: list[dict[str, object]] = []

    held = threading.Thread(target=lambda: answers.append(call(cloud, "Reader")))
    held.start()
    assert gate.entered.wait(10)
    held.join(0.3)
    assert held.is_alive() and not answers  # held before its environment
    gate.release()
    held.join(10)
    assert answers and answers[0]["queue"] == "first"


def test_an_unbuilt_functions_requirements_are_installed_and_without_them_it_fails_to_import(
    cloud: LocalCloud,
) -> None:
    """As sam build's Python builder would: CodeUri's requirements.txt installed for this
    machine (cached, outside the local cloud's own packages); without it the import fails as
    on Lambda, ``Runtime.ImportModuleError``."""
    needs = call(cloud, "Needs")
    assert needs["resolved"] == 2
    assert "host-builds" in str(needs["from"])
    reply = boto3.client("lambda").invoke(FunctionName=cloud.functions["Missing"])
    assert reply["FunctionError"] == "Unhandled"
    document = json.loads(reply["Payload"].read())
    assert document["errorType"] == "Runtime.ImportModuleError"
    assert "No module named 'jsonpointer'" in document["errorMessage"]


def test_a_function_whose_packages_are_being_built_holds_up_no_other(
    cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A function's first environment waits for its host build (uv installing its packages:
    minutes, the first time); the other functions' invocations run meanwhile."""
    building, release = threading.Event(), threading.Event()
    build = lambda_processes.requirements_build

    def slow_build(directory: Path, python: Path, **kwargs: Any) -> Path | None:
        if directory.name == "needs":
            building.set()
            release.wait(60)
        return build(directory, python, **kwargs)

    monkeypatch.setattr(lambda_processes, "requirements_build", slow_build)
    boto3.client("lambda").update_function_configuration(  # a new configuration: built again
        FunctionName=cloud.functions["Needs"], Environment={"Variables": {"RUN": str(time.time())}}
    )
    outcome: dict[str, dict[str, object]] = {}
    needs = threading.Thread(target=lambda: outcome.update(needs=call(cloud, "Needs")))
    needs.start()
    try:
        assert building.wait(30)
        reader = threading.Thread(target=lambda: outcome.update(reader=call(cloud, "Reader")))
        reader.start()
        reader.join(20)
        assert outcome.get("reader", {}).get("queue") == "first", "held up by another's build"
    finally:
        release.set()
        needs.join(60)
    assert outcome["needs"]["resolved"] == 2


def test_a_function_whose_zip_is_being_unpacked_holds_up_no_other(
    cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A function's new code is unpacked at its first invocation (about a second for a large
    zip); the other functions' invocations run meanwhile; its own unpack it once."""
    lam = boto3.client("lambda")
    role = boto3.client("iam").create_role(RoleName="unpacking", AssumeRolePolicyDocument=TRUST)
    code = "def handler(event, context):\n    return {'unpacked': True}\n"
    lam.create_function(FunctionName="unpacking", Role=role["Role"]["Arn"], Runtime="python3.13",
                        Handler="index.handler", Code={"ZipFile": _zip(code)})  # fmt: skip
    call(cloud, "Reader")  # its code unpacked before
    unpacking, release, calls, answers = threading.Event(), threading.Event(), [], []
    unpack = lambda_processes.unpacked

    def slow_unpack(body: bytes, *args: Any) -> Path:
        if b"'unpacked'" in body:  # this function's zip (stored, not compressed)
            calls.append(1)
            unpacking.set()
            release.wait(60)
        return unpack(body, *args)

    def invoke() -> None:
        answers.append(json.loads(lam.invoke(FunctionName="unpacking")["Payload"].read()))

    monkeypatch.setattr(lambda_processes, "unpacked", slow_unpack)
    first, second = threading.Thread(target=invoke), threading.Thread(target=invoke)
    first.start()
    try:
        assert unpacking.wait(30)
        second.start()
        reader: dict[str, object] = {}
        waiting = threading.Thread(target=lambda: reader.update(call(cloud, "Reader")))
        waiting.start()
        waiting.join(20)
        assert reader.get("queue") == "first", "held up by another function's unpacking"
    finally:
        release.set()
        first.join(60)
        second.join(60)
    assert (answers, len(calls)) == ([{"unpacked": True}] * 2, 1)


def test_the_next_environments_start_with_the_libraries_imported_with_their_own_variables(
    cloud: LocalCloud,
) -> None:
    """The first environment of a function imports everything; the next ones are forked from
    a fork server that imported the libraries the first one reported (not the function's own
    code), with that function's variables: a library reads its function's own value. So is
    the first environment of another function of the same code and layers (Green after Blue):
    its server imports what Blue's reported, with Green's variables."""
    lam = boto3.client("lambda")

    def stage(function: str, sleep: float = 0.0) -> dict[str, Any]:
        reply = lam.invoke(FunctionName=cloud.functions[function],
                           Payload=json.dumps({"sleep": sleep}))  # fmt: skip
        return dict(json.loads(reply["Payload"].read()))

    for function, value, learned in (("Blue", "blue", False), ("Green", "green", True)):
        first = stage(function)
        assert first == {
            "stage": value,
            "imported_here": not learned,
            "s3_data_at_init": learned,
            "own_credentials_and_endpoint": True,
        }
        answers: list[dict[str, Any]] = []
        busy = threading.Thread(target=lambda f=function, a=answers: a.append(stage(f, 1.0)))
        busy.start()  # the warm environment is busy: the next call starts another
        time.sleep(0.3)
        answers.append(stage(function))
        busy.join(10)
        assert {a["stage"] for a in answers} == {value}
        assert sorted(a["imported_here"] for a in answers) == sorted([False, not learned])
        # and the S3 client the first one made is made from SDK data the server loaded, with
        # the environment's own credentials and endpoint (the preloaded session has none)
        assert sorted(a["s3_data_at_init"] for a in answers) == sorted([True, learned])
        assert all(a["own_credentials_and_endpoint"] for a in answers)


def test_a_durable_function_runs_its_execution_in_environments(cloud: LocalCloud) -> None:
    """A durable function's execution invokes it in its environments: the first invocation
    runs step one and suspends on the wait (virtual clock), the replay skips it; the SDK's
    checkpoints reach the served endpoint with the function's credentials, and it reads the
    execution's input from the EXECUTION operation (whose id ends the execution's ARN)."""
    name = cloud.functions["Durable"]
    before = cloud.invocation_count(name)
    reply = boto3.client("lambda").invoke(
        FunctionName=f"{name}:$LATEST", Payload=json.dumps({"n": 4})
    )
    assert "FunctionError" not in reply, reply["Payload"].read()
    assert json.loads(reply["Payload"].read()) == {"first": 5, "second": 50}
    assert cloud.invocation_count(name) - before == 2  # suspended on the wait, then replayed
    described = boto3.client("lambda").get_durable_execution(
        DurableExecutionArn=reply["DurableExecutionArn"]
    )
    assert described["Status"] == "SUCCEEDED"


def test_without_a_lambda_runtime_the_cloud_says_how_to_make_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No runtime to run the functions in: a typed error before anything is deployed, and
    ``localcloud up`` exits 2 with it, no traceback."""
    from localcloud.cli import main

    template = tmp_path / "template.yaml"
    template.write_text("Resources: {}\n")
    missing = tmp_path / "no-runtime" / "bin" / "python"
    monkeypatch.setenv("LOCALCLOUD_RUNTIME_PYTHON", str(missing))
    with pytest.raises(RuntimeMissing, match="make bootstrap") as refused:
        LocalCloud(template).start()
    assert refused.value.python == missing
    assert main(["up", "--template", str(template), "--port", "0"]) == 2
    assert f"there is none at {missing}" in capsys.readouterr().err
