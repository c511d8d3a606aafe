"""The ASL's ErrorEquals and the Python taxonomy name exactly the same errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ingest_pipeline import errors
from ingest_pipeline.errors import ErrorClass, error_names

pytestmark = pytest.mark.unit

STATEMACHINES = Path(__file__).parents[2] / "statemachines"
# Both workflows' states (the ones they share are identical: tests/unit/test_asl_source.py).
ASL = {
    "States": {
        name: state
        for workflow in ("pipeline", "large-object")
        for name, state in json.loads((STATEMACHINES / f"{workflow}.asl.json").read_text())[
            "States"
        ].items()
    }
}
CATCH_TARGET = {
    ErrorClass.TRANSIENT: "DescribeTransientFailure",
    ErrorClass.CONFIGURATION: "DescribeConfigurationFailure",
    ErrorClass.PERMANENT: "QuarantineObject",
}


def tasks() -> dict[str, dict[str, Any]]:
    return {n: s for n, s in ASL["States"].items() if s["Type"] == "Task"}


@pytest.mark.parametrize("error_class", list(ErrorClass))
def test_process_catch_routes_each_family_by_name(error_class: ErrorClass) -> None:
    catches = tasks()["ProcessObject"]["Catch"]
    routed = [
        c
        for c in catches
        if c["Next"] == CATCH_TARGET[error_class]
        and not any(e.startswith(("States.", "Sandbox.")) for e in c["ErrorEquals"])
    ]
    assert len(routed) == 1
    assert sorted(routed[0]["ErrorEquals"]) == error_names(error_class)


def test_a_process_timeout_after_its_one_retry_is_a_configuration_problem() -> None:
    """Not TRANSIENT: the reconciler would retry an object that cannot fit, for hours."""
    process = tasks()["ProcessObject"]
    timeouts = {"States.Timeout", "Sandbox.Timedout"}
    (retry,) = [r for r in process["Retry"] if timeouts & set(r["ErrorEquals"])]
    assert set(retry["ErrorEquals"]) == timeouts and retry["MaxAttempts"] == 1
    (catch,) = [c for c in process["Catch"] if timeouts & set(c["ErrorEquals"])]
    assert set(catch["ErrorEquals"]) == timeouts
    assert catch["Next"] == CATCH_TARGET[ErrorClass.CONFIGURATION]
    assert process["Catch"].index(catch) < len(process["Catch"]) - 1  # before States.ALL


def test_process_retries_exactly_the_transient_family_and_lambda_service_errors() -> None:
    retried = {e for r in tasks()["ProcessObject"]["Retry"] for e in r["ErrorEquals"]}
    ours = {e for e in retried if not e.startswith(("Lambda.", "States.", "Sandbox."))}
    assert ours == set(error_names(ErrorClass.TRANSIENT))


def test_every_exception_class_belongs_to_exactly_one_family() -> None:
    declared = {
        name
        for name, obj in vars(errors).items()
        if isinstance(obj, type)
        and issubclass(obj, errors.PipelineError)
        and obj is not errors.PipelineError
    }
    families = [set(error_names(c)) for c in ErrorClass]
    assert set().union(*families) == declared
    assert sum(len(f) for f in families) == len(declared)


def test_every_task_has_retry_with_full_jitter_and_a_catch() -> None:
    for name, state in tasks().items():
        assert state.get("Retry"), name
        assert state.get("Catch"), name
        for rule in state["Retry"]:
            assert rule["JitterStrategy"] == "FULL", name
            assert rule["MaxDelaySeconds"] > 0, name
        assert state["Catch"][-1]["ErrorEquals"] == ["States.ALL"], name


def test_no_catch_turns_states_all_into_success() -> None:
    # Catching everything must lead to a failure path, never to a Succeed state.
    succeed = {n for n, s in ASL["States"].items() if s["Type"] == "Succeed"}
    for name, state in tasks().items():
        for catch in state["Catch"]:
            if catch["ErrorEquals"] == ["States.ALL"] and name != "SkipDuplicateObject":
                assert catch["Next"] not in succeed, name


def chunk_states() -> dict[str, dict[str, Any]]:
    states: dict[str, dict[str, Any]] = ASL["States"]["ProcessChunks"]["ItemProcessor"]["States"]
    return states


def test_a_chunk_reports_every_error_of_the_taxonomy_for_assemble_output_to_raise() -> None:
    """ProcessChunk's child execution catches each of our errors by name (and a timeout
    after its retry); AssembleOutput raises the first again by that name. Anything else
    fails the Map."""
    catches = chunk_states()["ProcessChunk"]["Catch"]
    ours = [c for c in catches if c["Next"] == "ReportChunkFailure"]
    names = {e for c in ours for e in c["ErrorEquals"]}
    everything = {n for error_class in ErrorClass for n in error_names(error_class)}
    assert names == everything | {"States.Timeout", "Sandbox.Timedout"}
    assert catches[-1] == {
        "ErrorEquals": ["States.ALL"],
        "ResultPath": "$.error",
        "Next": "FailChunk",
    }


HANDOVER = {
    "ErrorEquals": ["SplitRequiredError"],
    "ResultPath": "$.splitRequired",
    "Next": "StartLargeObjectWorkflow",
}


def test_split_and_assemble_route_errors_as_process_does() -> None:
    """The same catches, but for ProcessObject's first: the hand-over to the large-object
    workflow (which has no StartLargeObjectWorkflow; there it is a configuration error)."""
    first, *process = tasks()["ProcessObject"]["Catch"]
    assert first == HANDOVER
    assert tasks()["SplitObject"]["Catch"] == process
    assert tasks()["AssembleOutput"]["Catch"] == process


def test_an_object_too_big_for_one_function_leaves_process_by_a_typed_error() -> None:
    """SplitRequiredError is our error (the taxonomy, CONFIGURATION where nothing routes it
    first), never retried, and routed by ProcessObject's first Catch, before the taxonomy's
    own catches (Step Functions takes the first Catch that matches)."""
    assert errors.class_of_error_name("SplitRequiredError") is ErrorClass.CONFIGURATION
    process = tasks()["ProcessObject"]
    assert process["Catch"][0] == HANDOVER
    others = [c for c in process["Catch"][1:] if "SplitRequiredError" in c["ErrorEquals"]]
    assert [c["Next"] for c in others] == [CATCH_TARGET[ErrorClass.CONFIGURATION]]
    retried = {e for r in process["Retry"] for e in r["ErrorEquals"]}
    assert "SplitRequiredError" not in retried and "States.ALL" not in retried
    # no Choice on ProcessObject's result: RecordSuccess follows it directly
    assert process["Next"] == "RecordSuccess"


def test_chunk_tasks_retry_with_full_jitter() -> None:
    chunk = chunk_states()["ProcessChunk"]
    retried = {e for r in chunk["Retry"] for e in r["ErrorEquals"]}
    assert set(error_names(ErrorClass.TRANSIENT)) <= retried
    for rule in chunk["Retry"]:
        assert rule["JitterStrategy"] == "FULL" and rule["MaxDelaySeconds"] > 0
