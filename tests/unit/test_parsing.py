"""ingest_pipeline.parsing: msgspec's refusals as ParseError, every problem with its location.

The Lambdas' inputs, settings and contracts are msgspec Structs; nothing malformed gets through,
and what is refused says where and why.
"""

from __future__ import annotations

import json
import re
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import pytest
from msgspec import Meta, Struct

from ingest_pipeline.errors import ConfigurationError, InvalidEventError
from ingest_pipeline.logic.contracts import Column, ColumnType, Contract, parse_contract
from ingest_pipeline.models import FailureRequest, ObjectRef, ProcessRequest, parse_event
from ingest_pipeline.parsing import ParseError, parse
from tests.support import load_event

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Leaf(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, Meta(min_length=1)]
    colour: Colour = Colour.RED


class Tree(Struct, frozen=True, kw_only=True, rename={"count": "Count"}):
    count: Annotated[int, Meta(ge=1, le=10)]
    label: Annotated[str, Meta(pattern=r"^[a-z]+$", max_length=5)] = "x"
    leaf: Leaf | None = None
    leaves: tuple[Leaf, ...] = ()
    enabled: bool = False

    def __post_init__(self) -> None:
        if self.enabled and not self.leaves:
            raise ValueError("enabled needs leaves")


def problems(cls: type, data: Any) -> list[tuple[str, str]]:
    with pytest.raises(ParseError) as info:
        parse(cls, data)
    return [(p.path, p.msg) for p in info.value.problems]


def test_a_valid_mapping_becomes_the_record_by_its_wire_names() -> None:
    tree = parse(Tree, {"Count": "3", "leaf": {"name": "a", "colour": "blue"}, "other": 1})
    assert tree == Tree(count=3, leaf=Leaf(name="a", colour=Colour.BLUE))
    assert isinstance(parse(Tree, {"Count": 1, "leaves": [{"name": "b"}]}).leaves, tuple)
    assert problems(Tree, {"count": 4}) == [("Count", "Field required")]


def test_every_problem_is_reported_with_its_location() -> None:
    found = problems(
        Tree,
        {"label": "ABC", "leaf": {"colour": "green"}, "leaves": [{"name": "a"}, 7]},
    )
    assert found == [
        ("Count", "Field required"),
        ("label", "Expected `str` matching regex '^[a-z]+$'"),
        ("leaf.name", "Field required"),
        ("leaf.colour", "Invalid enum value 'green'"),
        ("leaves.1", "Expected `object`, got `int`"),
    ]


@pytest.mark.parametrize(
    ("count", "message"),
    [
        (0, "Expected `int` >= 1"),
        (11, "Expected `int` <= 10"),
        (True, "Expected `int`, got `bool`"),
        (2.5, "Expected `int`, got `float`"),
        ("two", "Expected `int`, got `str`"),
        (" 2 ", "Expected `int`, got `str`"),
        (None, "Expected `int`, got `null`"),
        ([], "Expected `int`, got `array`"),
    ],
)
def test_an_integer_field_takes_integers_and_their_digits_only(count: Any, message: str) -> None:
    assert problems(Tree, {"Count": count}) == [("Count", message)]


def test_whole_floats_and_digit_strings_are_integers() -> None:
    assert parse(Tree, {"Count": 2.0}).count == 2
    assert parse(Tree, {"Count": "7"}).count == 7


def test_strings_are_not_coerced() -> None:
    assert problems(Tree, {"Count": 1, "label": 5}) == [("label", "Expected `str`, got `int`")]


def test_a_check_across_fields() -> None:
    assert problems(Tree, {"Count": 1, "enabled": True}) == [("<root>", "enabled needs leaves")]
    assert problems(Tree, {"Count": 1, "leaf": {"name": "a"}, "enabled": "maybe"}) == [
        ("enabled", "Expected `bool`, got `str`")
    ]


def test_forbidden_extras_are_refused_where_the_record_forbids_them() -> None:
    assert problems(Tree, {"Count": 1, "x": 1, "leaves": [{"name": "a", "y": 2}]}) == [
        ("leaves.0.y", "Unknown field")
    ]
    assert problems(Leaf, {"name": "", "z": 1}) == [
        ("name", "Expected `str` of length >= 1"),
        ("z", "Unknown field"),
    ]


def test_not_a_mapping() -> None:
    assert problems(Tree, ["Count", 1]) == [("<root>", "Expected `object`, got `array`")]


def test_the_error_text_lists_every_problem() -> None:
    with pytest.raises(ParseError) as info:
        parse(Tree, {"Count": 0, "label": "abcdefg"})
    assert str(info.value) == (
        "2 validation errors for Tree\n"
        "Count\n  Expected `int` >= 1\n"
        "label\n  Expected `str` of length <= 5"
    )
    assert info.value.summary() == (
        "Count: Expected `int` >= 1; label: Expected `str` of length <= 5"
    )


def test_the_package_ships_the_pinned_msgspec() -> None:
    """functions/Makefile installs the arm64 wheel of requirements.txt's pin, pyproject.toml's
    (the local cloud installs it for this machine when it runs the sources unbuilt)."""
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [p for p in pins if p.startswith("msgspec==")]
    requirements = (ROOT / "functions" / "requirements.txt").read_text()
    assert re.search(rf"^{re.escape(pin)}$", requirements, re.M)
    makefile = (ROOT / "functions" / "Makefile").read_text()
    assert re.search(r"^MSGSPEC := \$\(shell sed .* requirements\.txt\)$", makefile, re.M)


# ---------------------------------------------------------------- the pipeline's own records


def test_the_sample_events_parse_into_the_handlers_requests() -> None:
    process = parse_event(load_event("process/object.json"), ProcessRequest)
    assert isinstance(process.object, ObjectRef) and process.object.key.startswith("incoming/")
    failure = parse_event(load_event("classify-error/states-timeout.json"), FailureRequest)
    assert failure.error.error == "States.Timeout" and failure.attempt >= 1


def test_an_invalid_event_is_a_typed_error_naming_each_field() -> None:
    with pytest.raises(InvalidEventError) as info:
        parse_event({"object": {"bucket": "b", "size": -1}, "attempt": 0}, ProcessRequest)
    assert str(info.value) == (
        "[INVALID_EVENT] invalid ProcessRequest event: "
        "object.bucket: Expected `str` of length >= 3; "
        "object.key: Field required; "
        "object.size: Expected `int` >= 0; "
        "attempt: Expected `int` >= 1"
    )


def test_a_wrong_type_is_named_with_its_location() -> None:
    event = {"object": {"bucket": "bucket", "key": "k", "size": "big"}}
    with pytest.raises(InvalidEventError) as info:
        parse_event(event, ProcessRequest)
    assert str(info.value) == (
        "[INVALID_EVENT] invalid ProcessRequest event: "
        "object.size: Expected `int | null`, got `str`"
    )


CONTRACT = {"dataset": "d", "columns": [{"name": "id", "type": "integer"}]}


def test_a_contract_file_parses_into_its_columns() -> None:
    assert parse_contract(json.dumps(CONTRACT)) == Contract(
        dataset="d", columns=(Column(name="id", type=ColumnType.INTEGER),)
    )


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({**CONTRACT, "colums": []}, "colums\n  Unknown field"),
        (
            {**CONTRACT, "columns": [{"name": "id", "type": "int"}]},
            "columns.0.type\n  Invalid enum value 'int'",
        ),
        ({**CONTRACT, "columns": []}, "columns\n  Expected `array` of length >= 1"),
        (
            {**CONTRACT, "columns": [{"name": "a", "type": "string"}] * 2},
            "columns[1].name 'a' repeats columns[0]",
        ),
    ],
)
def test_a_bad_contract_is_a_configuration_error(document: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid dataset contract") as info:
        parse_contract(json.dumps(document))
    assert problem in str(info.value)


def test_a_contract_that_is_not_json_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="not JSON"):
        parse_contract("{dataset: d")
