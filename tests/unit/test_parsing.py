"""ingest_pipeline.parsing: the typed records of the Lambdas' inputs, settings and contracts.

Every refusal names where and why (pydantic's words); nothing malformed gets through.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import pytest

from ingest_pipeline.errors import ConfigurationError, InvalidEventError
from ingest_pipeline.logic.contracts import Column, ColumnType, Contract, parse_contract
from ingest_pipeline.models import FailureRequest, ObjectRef, ProcessRequest, parse_event
from ingest_pipeline.parsing import ParseError, parse, rules
from tests.support import load_event

pytestmark = pytest.mark.unit


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True, kw_only=True)
class Leaf:
    name: str = field(metadata=rules(min_length=1))
    colour: Colour = Colour.RED


def _no_placeholder(value: Any) -> Any:
    if value == "<placeholder>":
        raise ValueError("was not substituted")
    return value


@dataclass(frozen=True, kw_only=True)
class Tree:
    count: int = field(metadata=rules(alias="Count", ge=1, le=10))
    label: str = field(
        default="x", metadata=rules(pattern=r"^[a-z]+$", max_length=5, before=_no_placeholder)
    )
    leaf: Leaf | None = None
    leaves: tuple[Leaf, ...] = ()
    enabled: bool = False

    def __post_init__(self) -> None:
        if self.enabled and not self.leaves:
            raise ValueError("enabled needs leaves")


def problems(cls: type, data: Any, **options: Any) -> list[tuple[str, str]]:
    with pytest.raises(ParseError) as info:
        parse(cls, data, **options)
    return [(p.path, p.msg) for p in info.value.problems]


def test_a_valid_mapping_becomes_the_record_by_alias_or_by_name() -> None:
    tree = parse(Tree, {"Count": "3", "leaf": {"name": "a", "colour": "blue"}, "other": 1})
    assert tree == Tree(count=3, leaf=Leaf(name="a", colour=Colour.BLUE))
    assert parse(Tree, {"count": 4}).count == 4  # the field's own name is read too
    assert isinstance(parse(Tree, {"Count": 1, "leaves": [{"name": "b"}]}).leaves, tuple)


def test_every_problem_is_reported_with_its_location() -> None:
    found = problems(
        Tree,
        {"label": "ABC", "leaf": {"colour": "green"}, "leaves": [{"name": ""}, 7]},
    )
    assert found == [
        ("Count", "Field required"),
        ("label", "String should match pattern '^[a-z]+$'"),
        ("leaf.name", "Field required"),
        ("leaf.colour", "Input should be 'red' or 'blue'"),
        ("leaves.0.name", "String should have at least 1 character"),
        ("leaves.1", "Input should be an object (Leaf)"),
    ]


@pytest.mark.parametrize(
    ("count", "message"),
    [
        (0, "Input should be greater than or equal to 1"),
        (11, "Input should be less than or equal to 10"),
        (True, "Input should be a valid integer"),
        (2.5, "Input should be a valid integer, got a number with a fractional part"),
        ("two", "Input should be a valid integer, unable to parse string as an integer"),
        ("1.0", "Input should be a valid integer, unable to parse string as an integer"),
        (None, "Input should be a valid integer"),
        ([], "Input should be a valid integer"),
    ],
)
def test_an_integer_field_takes_integers_and_their_digits_only(count: Any, message: str) -> None:
    assert problems(Tree, {"Count": count}) == [("Count", message)]


def test_whole_floats_and_digit_strings_are_integers() -> None:
    assert parse(Tree, {"Count": 2.0}).count == 2
    assert parse(Tree, {"Count": "+7"}).count == 7


def test_strings_are_not_coerced_and_are_stripped_only_when_asked() -> None:
    assert problems(Tree, {"Count": 1, "label": 5}) == [("label", "Input should be a valid string")]
    assert problems(Tree, {"Count": " 2 ", "label": " ab "}) == [
        ("Count", "Input should be a valid integer, unable to parse string as an integer"),
        ("label", "String should match pattern '^[a-z]+$'"),
    ]
    stripped = parse(Tree, {"Count": " 2 ", "label": " ab "}, strip_whitespace=True)
    assert (stripped.count, stripped.label) == (2, "ab")


def test_a_check_before_the_type_and_one_across_fields() -> None:
    assert problems(Tree, {"Count": 1, "label": "<placeholder>"}) == [
        ("label", "Value error, was not substituted")
    ]
    assert problems(Tree, {"Count": 1, "enabled": "yes"}) == [("<root>", "enabled needs leaves")]
    assert problems(Tree, {"Count": 1, "enabled": "maybe"}) == [
        ("enabled", "Input should be a valid boolean")
    ]


def test_forbidden_extras_are_refused_in_nested_records_too() -> None:
    found = problems(Tree, {"Count": 1, "x": 1, "leaves": [{"name": "a", "y": 2}]}, extra="forbid")
    assert found == [
        ("leaves.0.y", "Extra inputs are not permitted"),
        ("x", "Extra inputs are not permitted"),
    ]


def test_not_a_mapping() -> None:
    assert problems(Tree, ["Count", 1]) == [("<root>", "Input should be an object (Tree)")]


def test_a_field_type_it_cannot_check_is_a_programming_error() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Odd:
        values: list[int]

    with pytest.raises(TypeError, match="unsupported field type"):
        parse(Odd, {"values": [1]})


def test_the_error_text_lists_every_problem() -> None:
    with pytest.raises(ParseError) as info:
        parse(Tree, {"Count": 0, "label": "ABCDEFG"})
    assert str(info.value) == (
        "2 validation errors for Tree\n"
        "Count\n  Input should be greater than or equal to 1\n"
        "label\n  String should have at most 5 characters"
    )
    assert info.value.summary() == (
        "Count: Input should be greater than or equal to 1; "
        "label: String should have at most 5 characters"
    )


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
        "object.bucket: String should have at least 3 characters; "
        "object.key: Field required; "
        "object.size: Input should be greater than or equal to 0; "
        "attempt: Input should be greater than or equal to 1"
    )


CONTRACT = {"dataset": "d", "columns": [{"name": "id", "type": "integer"}]}


def test_a_contract_file_parses_into_its_columns() -> None:
    assert parse_contract(json.dumps(CONTRACT)) == Contract(
        dataset="d", columns=(Column(name="id", type=ColumnType.INTEGER),)
    )


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({**CONTRACT, "colums": []}, "colums\n  Extra inputs are not permitted"),
        (
            {**CONTRACT, "columns": [{"name": "id", "type": "int"}]},
            "columns.0.type\n  Input should be 'string', 'integer',",
        ),
        ({**CONTRACT, "columns": []}, "columns\n  List should have at least 1 item"),
        (
            {**CONTRACT, "columns": [{"name": "a", "type": "string"}] * 2},
            "duplicate column names in ['a', 'a']",
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
