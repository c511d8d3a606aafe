"""The cases of tests/statemachine/test_test_state_cli.py: every state of both workflows, its
input built from the paths it reads, a mocked result or error for each branch, and the answer
the TestState API reference gives for it (see that module's docstring)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.statemachine.teststate_inputs import (
    ACCOUNT,
    INPUTS,
    REGION,
    UNCHECKED,
    build,
    choice_input,
    get,
    paths_in,
    read_paths,
    resolve,
    with_result,
)
from tests.support import ROOT

WORKFLOWS = {
    "PipelineStateMachine": "pipeline.asl.json",
    "LargeObjectStateMachine": "large-object.asl.json",
}


def substitution(name: str) -> str:
    """A plausible value for a DefinitionSubstitutions entry of template.yaml."""
    fixed = {
        "ObjectStateTable": "ObjectState",
        "IngestBucketName": "ingest",
        "LeaseSeconds": "3600",
    }
    if name in fixed:
        return fixed[name]
    base = name.removesuffix("Arn")
    if name.endswith("FunctionArn"):
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{base}"
    if name.endswith("TopicArn"):
        return f"arn:aws:sns:{REGION}:{ACCOUNT}:{base}"
    if name.endswith("StateMachineArn"):
        return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{base}"
    raise AssertionError(f"no value for the substitution ${{{name}}}")


def definition(workflow: str) -> dict[str, Any]:
    text = (ROOT / "statemachines" / WORKFLOWS[workflow]).read_text()
    return dict(json.loads(re.sub(r"\$\{(\w+)\}", lambda m: substitution(m.group(1)), text)))


def all_states(states: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, state) of every state, those of Map processors and Parallel branches too."""
    for name, state in states.items():
        yield prefix + name, state
        for branch in state.get("Branches") or ():
            yield from all_states(branch["States"], f"{prefix}{name}/")
        for key in ("ItemProcessor", "Iterator"):
            if key in state:
                yield from all_states(state[key]["States"], f"{prefix}{name}/")


# --- documents built from the JSONPaths a state reads ----------------------------------------
# A reference path: $ then .name / [n] steps; not a context path ($$.).

# A leaf's value by its last two path steps, else by its last one, else "<name>-value".
CONCRETE = {
    "lambda": "Lambda.Unknown",
    "dynamodb": "DynamoDB.ResourceNotFoundException",
    "sns": "SNS.NotFoundException",
    "states": "StepFunctions.StateMachineDoesNotExistException",
    "Map": "States.ExceedToleratedFailureThreshold",
    "Parallel": "States.BranchFailed",
}
# A mocked result by resource: the service's answer, before the paths ResultSelector reads
RESULTS: dict[str, Any] = {
    "arn:aws:states:::lambda:invoke": {
        "ExecutedVersion": "$LATEST",
        "Payload": {},
        "StatusCode": 200,
    },
    "arn:aws:states:::dynamodb:updateItem": {"Attributes": {}},
    "arn:aws:states:::sns:publish": {"MessageId": "5b2e8c2e-0000-4000-8000-000000000001"},
    "arn:aws:states:::states:startExecution": {
        "ExecutionArn": f"arn:aws:states:{REGION}:{ACCOUNT}:execution:LargeObject:h-1",
        "StartDate": "2026-11-21T12:00:02.000Z",
    },
    "Map": {
        "MapRunArn": f"arn:aws:states:{REGION}:{ACCOUNT}:mapRun:LargeObject/Chunks:1",
        "ResultWriterDetails": {"Bucket": "ingest", "Key": "work/map-results/manifest.json"},
    },
    "Parallel": [],
}


def matches(error: str, equals: list[str], *, retry: bool) -> bool:
    """ErrorEquals as the ASL defines it: States.ALL any error (a retrier never retries
    States.Runtime), States.TaskFailed any but States.Timeout."""
    if error in equals:
        return True
    if "States.ALL" in equals:
        return not (retry and error in {"States.Runtime", "States.DataLimitExceeded"})
    return "States.TaskFailed" in equals and error not in {"States.Timeout", "States.Runtime"}


def integration(state: dict[str, Any]) -> str:
    if state["Type"] != "Task":
        return str(state["Type"])
    return str(state["Resource"]).split(":::")[-1].split(":")[0]


WILDCARDS = {"States.ALL", "States.TaskFailed"}


def concrete(state: dict[str, Any], equals: list[str]) -> list[str]:
    """The names in ``equals``, a wildcard replaced by an error of the state's service."""
    return [CONCRETE[integration(state)] if e in WILDCARDS else e for e in equals]


def first_retrier(state: dict[str, Any], error: str) -> int | None:
    retriers = state.get("Retry") or ()
    return next(
        (i for i, r in enumerate(retriers) if matches(error, r["ErrorEquals"], retry=True)), None
    )


def first_catcher(state: dict[str, Any], error: str) -> int | None:
    catchers = state.get("Catch") or ()
    return next(
        (i for i, c in enumerate(catchers) if matches(error, c["ErrorEquals"], retry=False)), None
    )


# --- the cases ----------------------------------------------------------------------------------
@dataclass
class Case:
    id: str
    state: dict[str, Any]
    input: Any
    status: str
    next_state: str | None = None
    mock: dict[str, Any] | None = None
    configuration: dict[str, Any] | None = None
    error: str | None = None
    cause: str | None = None
    retry_index: int | None = None
    backoff_at_most: float | None = None
    catch_index: int | None = None
    output: Any = UNCHECKED
    argv: list[str] = field(default_factory=list)

    def command(self, endpoint: str) -> list[str]:
        argv = [
            "stepfunctions",
            "test-state",
            "--endpoint-url",
            endpoint,
            "--output",
            "json",
            "--definition",
            json.dumps(self.state),
            "--input",
            json.dumps(self.input),
            "--inspection-level",
            "DEBUG",
        ]
        if self.mock is not None:
            argv += ["--mock", json.dumps(self.mock)]
        if self.configuration is not None:
            argv += ["--state-configuration", json.dumps(self.configuration)]
        return argv


def mocked_result(state: dict[str, Any]) -> Any:
    base = RESULTS[state.get("Resource", state["Type"])]
    return build(base, list(paths_in(state.get("ResultSelector"))))


def error_cases(name: str, state: dict[str, Any], doc: Any) -> Iterator[Case]:
    """One RETRIABLE case per Retry rule, one CAUGHT_ERROR case per Catch rule (two for a
    wildcard catcher: an error no retrier matches, and one whose retrier is spent)."""
    retriers, catchers = state.get("Retry") or [], state.get("Catch") or []

    def outcome(error: str, case_id: str) -> Case:
        """The mocked ``error`` once the retrier that matches it (if one does) is spent."""
        retrier = first_retrier(state, error)
        spent = None
        if retrier is not None:
            spent = {"retrierRetryCount": int(retriers[retrier].get("MaxAttempts", 3))}
        cause = f"mocked {error}"
        catcher = first_catcher(state, error)
        caught = catchers[catcher] if catcher is not None else None
        return Case(
            case_id,
            state,
            doc,
            "CAUGHT_ERROR" if caught else "FAILED",
            next_state=caught["Next"] if caught else None,
            mock={"errorOutput": {"error": error, "cause": cause}},
            configuration=spent,
            error=error,
            cause=cause,
            catch_index=catcher,
            output=with_result(doc, caught.get("ResultPath", "$"), {"Error": error, "Cause": cause})
            if caught
            else UNCHECKED,
        )

    for index, retrier in enumerate(retriers):
        attempts = int(retrier.get("MaxAttempts", 3))
        if attempts == 0:
            continue  # a retrier that never retries: its error goes to the catchers
        count = attempts - 1
        backoff = retrier.get("IntervalSeconds", 1) * retrier.get("BackoffRate", 2.0) ** count
        mine = [
            e for e in concrete(state, retrier["ErrorEquals"]) if first_retrier(state, e) == index
        ]
        for error, suffix in chosen_errors(mine):
            yield Case(
                f"{name}/retry-{index}{suffix}",
                state,
                doc,
                "RETRIABLE",
                mock={"errorOutput": {"error": error, "cause": f"mocked {error}"}},
                configuration={"retrierRetryCount": count},
                error=error,
                cause=f"mocked {error}",
                retry_index=index,
                backoff_at_most=min(backoff, retrier.get("MaxDelaySeconds", backoff)),
            )
    for index, catcher in enumerate(catchers):
        mine = [
            e for e in concrete(state, catcher["ErrorEquals"]) if first_catcher(state, e) == index
        ]
        for error, suffix in chosen_errors(mine):
            yield outcome(error, f"{name}/catch-{index}{suffix}")
        if WILDCARDS & set(catcher["ErrorEquals"]):
            spent = next(
                (
                    e
                    for r in retriers
                    for e in r["ErrorEquals"]
                    if e not in WILDCARDS and first_catcher(state, e) == index
                ),
                None,
            )
            if spent is not None:
                yield outcome(spent, f"{name}/catch-{index}-retries-spent")


def chosen_errors(candidates: list[str]) -> list[tuple[str, str]]:
    """The rule's first error (case id suffix ""), and when that is a States.* error, also
    its first other one (suffix "-<error>"), so that the rule is tested without the engine's
    known defect (see ENGINE_DEFECTS)."""
    first = [(candidates[0], "")]
    other = next((e for e in candidates if not e.startswith("States.")), None)
    if candidates[0].startswith("States.") and other is not None:
        first.append((other, f"-{other}"))
    return first


def state_cases(workflow: str, path: str, state: dict[str, Any]) -> Iterator[Case]:
    name = f"{workflow}/{path}"
    base = INPUTS[workflow]
    kind = state["Type"]
    doc = build(base, read_paths(state))
    nxt = state.get("Next")
    if kind == "Succeed":
        yield Case(f"{name}/succeed", state, doc, "SUCCEEDED", output=doc)
    elif kind == "Fail":
        error = state.get("Error") or get(doc, state["ErrorPath"])
        cause = state.get("Cause") or (
            get(doc, state["CausePath"]) if "CausePath" in state else None
        )
        yield Case(f"{name}/fail", state, doc, "FAILED", error=error, cause=cause)
    elif kind == "Pass":
        effective = get(doc, state.get("InputPath") or "$")
        if "Parameters" in state:
            result = resolve(state["Parameters"], effective)
        else:
            result = state.get("Result", effective)
        output = with_result(doc, state.get("ResultPath", "$"), result)
        yield Case(f"{name}/pass", state, doc, "SUCCEEDED", next_state=nxt, output=output)
    elif kind == "Wait":
        yield Case(f"{name}/wait", state, doc, "SUCCEEDED", next_state=nxt, output=doc)
    elif kind == "Choice":
        for index, rule in enumerate(state["Choices"]):
            chosen = choice_input(state, base, index)
            yield Case(
                f"{name}/choice-{index}", state, chosen, "SUCCEEDED", rule["Next"], output=chosen
            )
        if "Default" in state:
            other = choice_input(state, base, None)
            yield Case(f"{name}/default", state, other, "SUCCEEDED", state["Default"], output=other)
    elif kind in {"Task", "Map", "Parallel"}:
        result = mocked_result(state)
        selected = resolve(state["ResultSelector"], result) if "ResultSelector" in state else result
        yield Case(
            f"{name}/result",
            state,
            doc,
            "SUCCEEDED",
            next_state=nxt,
            mock={"result": json.dumps(result)},
            output=with_result(doc, state.get("ResultPath", "$"), selected)
            if "OutputPath" not in state
            else UNCHECKED,
        )
        yield from error_cases(name, state, doc)
        tolerated = state.get("ToleratedFailureCount")
        if kind == "Map" and (
            tolerated is not None or state.get("ToleratedFailurePercentage") == 0
        ):
            error = "States.ExceedToleratedFailureThreshold"
            catcher = first_catcher(state, error)
            caught = (state.get("Catch") or [])[catcher] if catcher is not None else None
            yield Case(
                f"{name}/failures-above-tolerance",
                state,
                doc,
                "CAUGHT_ERROR" if caught else "FAILED",
                next_state=caught["Next"] if caught else None,
                mock={"result": json.dumps(result)},
                configuration={"mapIterationFailureCount": int(tolerated or 0) + 1},
                error=error,
                catch_index=catcher,
            )
    else:
        raise AssertionError(f"{name}: no cases for a {kind} state")


def workflow_cases(workflow: str) -> list[Case]:
    states = definition(workflow)["States"]
    return [
        case for path, state in all_states(states) for case in state_cases(workflow, path, state)
    ]


CASES = {case.id: case for workflow in WORKFLOWS for case in workflow_cases(workflow)}
# The command also run as an ``aws`` process: one whose answer holds no context value
# ($$.Execution.Id, $$.State.EnteredTime differ from call to call), with a caught error.
