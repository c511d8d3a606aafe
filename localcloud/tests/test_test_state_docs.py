"""The examples of the AWS documentation of TestState, run against the local cloud over HTTP.

Each fixture in published/teststate-docs/ (SOURCE.md names the pages) holds one example's
request and the answer the page shows (or states): fields the page leaves out are not
asserted. ``definition``, ``input`` and ``context`` are kept as JSON and sent as the strings
the API takes; ``output`` and the inspectionData strings are compared as JSON. A fixture with
``skip`` cannot run locally, one with ``xfail`` is a known difference of the engine.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

PATTERN = Path(__file__).parent / "published" / "s3-eventbridge-sfn" / "template.yaml"
FIXTURES = sorted((Path(__file__).parent / "published" / "teststate-docs").glob("*.json"))
STATES = {"Task", "Pass", "Wait", "Choice", "Succeed", "Fail", "Map", "Parallel"}


def load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def case(path: Path) -> Any:
    example = load(path)
    marks: list[Any] = []
    if "skip" in example:
        marks.append(pytest.mark.skip(reason=example["skip"]))
    if "xfail" in example:
        marks.append(pytest.mark.xfail(strict=True, reason=example["xfail"]))
    return pytest.param(example, id=path.stem, marks=marks)


@pytest.fixture(scope="module")
def sfn() -> Iterator[Any]:
    with LocalCloud(PATTERN, stack_name="test-state-docs") as cloud:
        cloud.serve(port=0)
        # TestState's endpoint is sync-states.<region>: a local endpoint takes no host prefix.
        yield boto3.client(
            "stepfunctions",
            endpoint_url=cloud.describe()["endpoint"],
            config=Config(inject_host_prefix=False, retries={"max_attempts": 1}),
        )


def request(example: dict[str, Any]) -> dict[str, Any]:
    params = dict(example["request"])
    for key in ("definition", "input", "context"):
        if key in params:
            params[key] = json.dumps(params[key])
    return params


def assert_inspection(got: dict[str, Any], documented: dict[str, Any]) -> None:
    for key, value in documented.items():
        assert key in got, f"inspectionData.{key} missing: {got}"
        if isinstance(value, dict):
            assert {k: got[key].get(k) for k in value} == value, key
        elif isinstance(value, str):
            assert json.loads(got[key]) == json.loads(value), key
        else:
            assert got[key] == value, key


@pytest.mark.parametrize("example", [case(path) for path in FIXTURES])
def test_the_documented_answer(sfn: Any, example: dict[str, Any]) -> None:
    answer = sfn.test_state(**request(example))
    documented = example["answer"]
    assert answer["status"] in {"SUCCEEDED", "FAILED", "RETRIABLE", "CAUGHT_ERROR"}
    for key in ("status", "nextState", "error", "cause"):
        if key in documented:
            assert answer.get(key) == documented[key], key
    if "output" in documented:
        assert json.loads(answer["output"]) == json.loads(documented["output"])
    if "inspectionData" in documented:
        assert_inspection(answer.get("inspectionData", {}), documented["inspectionData"])
    elif example["answer_from"] == "the response shown on the page":
        assert "inspectionData" not in answer  # INFO shows the final state output only


def test_every_state_type_has_a_documented_example() -> None:
    covered = set()
    for path in FIXTURES:
        example = load(path)
        definition = example["request"]["definition"]
        if "States" in definition:
            definition = definition["States"][example["request"]["stateName"]]
        if "skip" not in example:
            covered.add(definition["Type"])
    assert covered == STATES
