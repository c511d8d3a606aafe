"""Lambda durable functions as the Lambda service runs them (features/lambda_durable.py,
lambda_durable_api.py), with handlers of aws-durable-execution-sdk-python: a qualified
invocation starts a durable execution; waits and step retries suspend it and it is replayed
(on the virtual clock), completed steps are not run again; a callback is completed with
SendDurableExecutionCallbackSuccess; a chained invoke runs another function; a failing step
fails the execution; ExecutionTimeout times it out; the SDK's checkpoints are authorized
against the execution's ARN."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud
from localcloud.features.lambda_durable import durable_service
from localcloud.stack.base import StackDeployError

pytestmark = [pytest.mark.e2e]

TEMPLATE = Path(__file__).parent / "templates" / "lambda_durable" / "template.yaml"


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(TEMPLATE, stack_name="lambda-durable") as running:
        yield running


def invoke(function: str, event: Any, **kwargs: Any) -> tuple[dict[str, Any], Any]:
    reply = boto3.client("lambda").invoke(
        FunctionName=function, Payload=json.dumps(event).encode(), **kwargs
    )
    return reply, json.loads(reply["Payload"].read() or "null")


def history(arn: str) -> list[tuple[str, str | None]]:
    events = boto3.client("lambda").get_durable_execution_history(DurableExecutionArn=arn)
    return [(e["EventType"], e.get("Name")) for e in events["Events"]]


@contextlib.contextmanager
def printed() -> Iterator[io.StringIO]:
    """What the handlers print meanwhile (the SDK runs their code on threads of its own)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        yield out


def invocations(cloud: LocalCloud, function: str) -> int:
    """How many times the service has invoked ``function`` (physical name) so far."""
    return sum(1 for r in cloud.runtime.invocations if r["function"] == function)


def test_what_is_not_run_is_refused_at_deploy_by_name(tmp_path: Path) -> None:
    """First: the module's cloud starts with the next test (one cloud per process)."""
    source = TEMPLATE.read_text().replace(
        "        ExecutionTimeout: 60\n",
        "        ExecutionTimeout: 60\n"
        "        KMSKeyArn: arn:aws:kms:us-east-1:123456789012:key/k\n",
    )
    (tmp_path / "template.yaml").write_text(source)
    with (
        pytest.raises(StackDeployError, match=r"DurableConfig\.KMSKeyArn is not run locally"),
        LocalCloud(tmp_path / "template.yaml", stack_name="durable-kms"),
    ):
        pass


def test_a_wait_is_replayed_and_steps_run_once(cloud: LocalCloud) -> None:
    slept, before = cloud.clock.slept, invocations(cloud, "durable-steps")
    with printed() as out:
        reply, answer = invoke("durable-steps:live", {"n": 4, "wait": 600})
    assert answer == {"first": 5, "second": 50}
    assert reply["ExecutedVersion"] == "1"
    # two invocations: the first runs step one and suspends on the wait, the replay skips it
    assert invocations(cloud, "durable-steps") - before == 2
    # the function's own lines (in environment processes they come framed by START / END /
    # REPORT, as in its log)
    lines = [x for x in out.getvalue().splitlines() if not x.startswith(("START", "END", "REP"))]
    assert lines == ["invocation", "step one runs", "invocation", "step two runs"], lines
    assert cloud.clock.slept - slept == pytest.approx(600, abs=2)  # the wait, virtual clock
    stamps = {e["EventType"]: e["EventTimestamp"] for e in boto3.client(
        "lambda").get_durable_execution_history(DurableExecutionArn=reply["DurableExecutionArn"])[
        "Events"]}  # fmt: skip
    waited = (stamps["WaitSucceeded"] - stamps["WaitStarted"]).total_seconds()
    assert waited == pytest.approx(600, abs=2)  # and its history shows it
    arn = reply["DurableExecutionArn"]
    assert arn.startswith(
        "arn:aws:lambda:us-east-1:123456789012:function:durable-steps:1/durable-execution/"
    )
    assert history(arn) == [
        ("ExecutionStarted", arn.split("/")[-2]),
        ("StepStarted", "one"),
        ("StepSucceeded", "one"),
        ("WaitStarted", "pause"),
        ("WaitSucceeded", "pause"),
        ("StepStarted", "two"),
        ("StepSucceeded", "two"),
        ("ExecutionSucceeded", arn.split("/")[-2]),
    ]
    # the EXECUTION operation's id is the one the ARN ends with (SDK 3 finds its input so)
    events = boto3.client("lambda").get_durable_execution_history(DurableExecutionArn=arn)
    assert events["Events"][0]["Id"] == arn.split("/")[-1]
    described = boto3.client("lambda").get_durable_execution(DurableExecutionArn=arn)
    assert described["Status"] == "SUCCEEDED"
    assert json.loads(described["Result"]) == answer
    assert json.loads(described["InputPayload"]) == {"n": 4, "wait": 600}
    assert described["FunctionArn"].endswith(":function:durable-steps:1")


def test_a_durable_function_must_be_invoked_qualified(cloud: LocalCloud) -> None:
    with pytest.raises(ClientError) as refused:
        invoke("durable-steps", {"n": 1})
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValueException"
    _, answer = invoke("durable-steps:$LATEST", {"n": 1, "wait": 1})
    assert answer == {"first": 2, "second": 20}


def test_a_failing_step_is_retried_after_its_delay(cloud: LocalCloud) -> None:
    slept, began = cloud.clock.slept, time.monotonic()
    reply, answer = invoke("durable-retried:live", {"key": "a", "failures": 2})
    assert answer == {"attempts": 3}
    # two retry delays (jittered, at least 1 s each) on the execution's clock: what it slept
    # on the cloud's virtual clock and the real time that went by meanwhile (a loaded machine
    # takes part of each delay in real time)
    assert cloud.clock.slept - slept + time.monotonic() - began >= 2
    # and its history shows them: the events are stamped on the execution's clock
    events = boto3.client("lambda").get_durable_execution_history(
        DurableExecutionArn=reply["DurableExecutionArn"]
    )["Events"]
    ends = [
        e["EventTimestamp"] for e in events if e["EventType"] in {"StepFailed", "StepSucceeded"}
    ]
    assert [(b - a).total_seconds() >= 1 for a, b in itertools.pairwise(ends)] == [True, True]
    assert history(reply["DurableExecutionArn"])[1:-1] == [
        ("StepStarted", "flaky"),
        ("StepFailed", "flaky"),
        ("StepFailed", "flaky"),
        ("StepSucceeded", "flaky"),
    ]


def test_a_failed_step_fails_the_execution(cloud: LocalCloud) -> None:
    reply, error = invoke("durable-failing:live", {"order": 7})
    assert reply["FunctionError"] == "Unhandled"
    # the SDK raises a step's failure as CallableRuntimeError, which fails the execution
    assert error["errorType"] == "CallableRuntimeError"
    assert error["errorMessage"] == "order 7 rejected"
    described = boto3.client("lambda").get_durable_execution(
        DurableExecutionArn=reply["DurableExecutionArn"]
    )
    assert described["Status"] == "FAILED"
    assert described["Error"]["ErrorMessage"] == "order 7 rejected"


def test_a_callback_is_completed_by_send_callback_success(cloud: LocalCloud) -> None:
    lam = boto3.client("lambda")
    with printed() as out:
        reply = lam.invoke(
            FunctionName="durable-approval:live",
            InvocationType="Event",
            Payload=json.dumps({"request": "r-1"}).encode(),
        )
        assert reply["StatusCode"] == 202

        def asked() -> str | None:
            lines = [x for x in out.getvalue().splitlines() if x.startswith("approve with ")]
            return lines[0].removeprefix("approve with ") if lines else None

        callback_id = _poll(asked)
    service = durable_service(cloud.runtime)
    (execution,) = service.of("durable-approval")
    running = lam.list_durable_executions_by_function(FunctionName="durable-approval")
    assert [e["Status"] for e in running["DurableExecutions"]] == ["RUNNING"]
    lam.send_durable_execution_callback_success(
        CallbackId=callback_id, Result=json.dumps({"approved": True}).encode()
    )
    assert service.wait(execution, 30)
    described = lam.get_durable_execution(DurableExecutionArn=execution.arn)
    assert described["Status"] == "SUCCEEDED"
    assert json.loads(described["Result"]) == {"request": "r-1", "answer": '{"approved": true}'}
    with pytest.raises(ClientError) as closed:
        lam.send_durable_execution_callback_success(CallbackId=callback_id, Result=b"{}")
    assert closed.value.response["Error"]["Code"] == "InvalidParameterValueException"


def test_a_chained_invoke_runs_the_other_function(cloud: LocalCloud) -> None:
    _, answer = invoke("durable-chain:live", {"n": 21})
    assert answer == {"worker": {"doubled": 42}}
    reply, error = invoke("durable-chain:live", {"n": 3, "fail": True})
    assert reply["FunctionError"] == "Unhandled"
    assert error["errorType"] == "CallableRuntimeError"
    assert error["errorMessage"] == "cannot process 3"


def test_the_execution_timeout_ends_a_long_wait(cloud: LocalCloud) -> None:
    reply, error = invoke("durable-timeboxed:live", {})
    assert error["errorType"] == "Execution.TimedOut", error
    assert reply["FunctionError"] == "Unhandled"
    described = boto3.client("lambda").get_durable_execution(
        DurableExecutionArn=reply["DurableExecutionArn"]
    )
    assert described["Status"] == "TIMED_OUT"


def test_checkpoints_need_the_durable_execution_permissions(cloud: LocalCloud) -> None:
    reply, error = invoke("durable-unprivileged:live", {})
    assert reply["FunctionError"] == "Unhandled"
    assert "AccessDeniedException" in error["errorMessage"], error
    assert (
        "is not authorized to perform: lambda:CheckpointDurableExecution" in (error["errorMessage"])
    ), error


def _poll(probe: Any, timeout: float = 30) -> Any:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("timed out")
