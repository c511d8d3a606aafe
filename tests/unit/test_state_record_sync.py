"""The ASL, template.yaml and the code name the state record's key and attributes alike.

``ingest_pipeline.models`` defines the record once (PK_FORMAT / SK_FORMAT, ``Attr``, the status
values, the open-state index); the state machine spells the same names in its DynamoDB tasks
and template.yaml in the table's key schema and index projection. A rename in one place only
fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from ingest_pipeline.dal.state import open_record
from ingest_pipeline.models import (
    OPEN_INDEX_PROJECTION,
    OPEN_STATE_INDEX,
    PK_FORMAT,
    SK_FORMAT,
    Attr,
    OpenState,
    Status,
    state_pk,
    state_sk,
)

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
# Both workflows' states (the ones they share are identical: tests/unit/test_asl_source.py).
ASL = {
    "States": {
        name: state
        for workflow in ("pipeline", "large-object")
        for name, state in json.loads(
            (ROOT / "statemachines" / f"{workflow}.asl.json").read_text()
        )["States"].items()
    }
}

# What the key expressions format, in the order PK_FORMAT / SK_FORMAT take them.
PK_ARGS = ("$.object.bucket", "$.object.key")
SK_ARGS = ("$.object.versionId",)
# Written only by the reconciler (dal.state.escalate), never by the state machine.
NOT_IN_ASL = {Attr.ESCALATION_REASON}

EXPRESSIONS = (
    "ConditionExpression",
    "UpdateExpression",
    "ProjectionExpression",
    "KeyConditionExpression",
    "FilterExpression",
)
KEYWORDS = {"SET", "REMOVE", "ADD", "DELETE", "AND", "OR", "NOT", "BETWEEN", "IN"}
FUNCTIONS = {
    "attribute_exists",
    "attribute_not_exists",
    "attribute_type",
    "begins_with",
    "contains",
    "size",
    "if_not_exists",
    "list_append",
}
_FORMAT = re.compile(r"^States\.Format\('(?P<format>[^']*)'(?P<args>(?:\s*,\s*[^,)]+)*)\)$")


def dynamodb_tasks() -> dict[str, dict[str, Any]]:
    return {
        name: state
        for name, state in ASL["States"].items()
        if str(state.get("Resource", "")).startswith("arn:aws:states:::dynamodb:")
    }


def parse_format(expression: str) -> tuple[str, tuple[str, ...]]:
    """``States.Format('s3://{}/{}', $.a, $.b)`` -> (``s3://{}/{}``, (``$.a``, ``$.b``))."""
    match = _FORMAT.match(expression)
    assert match, f"not a States.Format expression: {expression}"
    args = tuple(a.strip() for a in match["args"].split(",") if a.strip())
    return match["format"], args


def expression_names(expression: str, names: dict[str, str]) -> set[str]:
    """The attribute names an expression uses (``#name`` resolved, ``:value`` skipped)."""
    found: set[str] = set()
    for sigil, word in re.findall(r"([#:]?)([A-Za-z_][A-Za-z0-9_]*)", expression):
        if sigil == ":" or word in KEYWORDS or word in FUNCTIONS:
            continue
        found.add(names[f"#{word}"] if sigil == "#" else word)
    return found


def attributes_used(params: dict[str, Any]) -> set[str]:
    names = params.get("ExpressionAttributeNames", {})
    used = set(params.get("Key", {})) | set(names.values())
    for field in EXPRESSIONS:
        if field in params:
            used |= expression_names(params[field], names)
    return used


def asl_attributes() -> set[str]:
    used: set[str] = set()
    for state in dynamodb_tasks().values():
        used |= attributes_used(state["Parameters"])
        # $.Attributes.<name>.N (UpdateItem's ReturnValues), $.Item.<name> (GetItem)
        for path in state.get("ResultSelector", {}).values():
            match = re.match(r"^\$\.(?:Attributes|Item)\.(\w+)", path)
            if match:
                used.add(match[1])
    return used


def test_the_key_formats_are_the_ones_the_code_uses() -> None:
    assert state_pk("bucket-a", "incoming/a b.csv") == "s3://bucket-a/incoming/a b.csv"
    assert state_sk("v1") == "v#v1"


def test_every_key_expression_in_the_asl_is_models_pk_and_sk() -> None:
    tasks = dynamodb_tasks()
    assert tasks
    for name, state in tasks.items():
        key = state["Parameters"]["Key"]
        assert set(key) == {Attr.PK, Attr.SK}, name
        assert parse_format(key[Attr.PK]["S.$"]) == (PK_FORMAT, PK_ARGS), name
        assert parse_format(key[Attr.SK]["S.$"]) == (SK_FORMAT, SK_ARGS), name


def test_every_states_format_in_a_key_is_a_key_expression() -> None:
    # No other key shape hides anywhere in the definition (Key blocks of any state).
    def keys(node: Any) -> list[dict[str, Any]]:
        if isinstance(node, dict):
            found = [node["Key"]] if isinstance(node.get("Key"), dict) else []
            return found + [k for v in node.values() for k in keys(v)]
        if isinstance(node, list):
            return [k for v in node for k in keys(v)]
        return []

    formats = {
        parse_format(value)
        for key in keys(ASL)
        for attr in key.values()
        for value in attr.values()
        if str(value).startswith("States.Format")
    }
    assert formats == {(PK_FORMAT, PK_ARGS), (SK_FORMAT, SK_ARGS)}


def test_every_attribute_the_asl_names_is_defined_in_models() -> None:
    used = asl_attributes()
    undefined = used - {a.value for a in Attr}
    assert not undefined, f"the ASL names attributes models.Attr does not define: {undefined}"


def test_every_attribute_models_defines_is_one_the_asl_names() -> None:
    unused = {a.value for a in Attr} - asl_attributes() - NOT_IN_ASL
    assert not unused, f"models.Attr defines attributes the state machine never names: {unused}"


def test_status_values_in_the_asl_are_models_values() -> None:
    allowed = {Attr.STATUS: set(Status), Attr.OPEN_STATE: set(OpenState)}
    checked = 0
    for name, state in dynamodb_tasks().items():
        params = state["Parameters"]
        names = params.get("ExpressionAttributeNames", {})
        values = params.get("ExpressionAttributeValues", {})
        for field in EXPRESSIONS:
            for attr, placeholder in re.findall(
                r"(#?\w+)\s*(?:=|<>)\s*(:\w+)", params.get(field, "")
            ):
                attr_name = names.get(attr, attr)
                if attr_name not in allowed:
                    continue
                literal = values[placeholder].get("S")
                assert literal in allowed[attr_name], (name, field, attr_name, literal)
                checked += 1
    assert checked >= 10


def _template() -> dict[str, Any]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    text = (ROOT / "template.yaml").read_text()
    return dict(yaml.load(text, Loader=Loader))  # noqa: S506 - SafeLoader subclass


def _table() -> dict[str, Any]:
    tables = [
        r["Properties"]
        for r in _template()["Resources"].values()
        if r["Type"] == "AWS::DynamoDB::Table"
        and {k["AttributeName"] for k in r["Properties"]["KeySchema"]} == {Attr.PK, Attr.SK}
    ]
    assert len(tables) == 1, "template.yaml: one table keyed by models.Attr.PK / Attr.SK"
    return tables[0]


def test_template_table_key_schema_uses_models_names() -> None:
    table = _table()
    assert [(k["AttributeName"], k["KeyType"]) for k in table["KeySchema"]] == [
        (Attr.PK, "HASH"),
        (Attr.SK, "RANGE"),
    ]
    assert {d["AttributeName"] for d in table["AttributeDefinitions"]} <= {a.value for a in Attr}
    assert table["TimeToLiveSpecification"]["AttributeName"] == Attr.EXPIRES_AT


def test_template_open_state_index_uses_models_names() -> None:
    (index,) = [i for i in _table()["GlobalSecondaryIndexes"] if i["IndexName"] == OPEN_STATE_INDEX]
    assert [(k["AttributeName"], k["KeyType"]) for k in index["KeySchema"]] == [
        (Attr.OPEN_STATE, "HASH"),
        (Attr.UPDATED_AT, "RANGE"),
    ]
    projected = index["Projection"]["NonKeyAttributes"]
    assert index["Projection"]["ProjectionType"] == "INCLUDE"
    assert len(projected) == len(set(projected))
    assert set(projected) == {a.value for a in OPEN_INDEX_PROJECTION}


def test_the_index_projects_everything_an_open_record_reads() -> None:
    # An item as the index returns it (keys + projection) reads as the whole item does.
    full: dict[str, Any] = {a.value: f"value-{a.value}" for a in Attr}
    full |= {
        Attr.STATUS: Status.FAILED.value,
        Attr.OPEN_STATE: OpenState.RETRYABLE.value,
        Attr.RETRYABLE: True,
        Attr.ATTEMPT: 2,
        Attr.LEASE_SECONDS: 60,
        Attr.UPDATED_AT: "2026-11-21T12:00:00.000Z",
        Attr.CLAIMED_AT: "2026-11-21T11:00:00.000Z",
        Attr.RETRY_AFTER: "2026-11-21T12:05:00.000Z",
    }
    index_keys = (Attr.PK, Attr.SK, Attr.OPEN_STATE, Attr.UPDATED_AT)
    projected = {k: v for k, v in full.items() if k in index_keys + OPEN_INDEX_PROJECTION}
    record = open_record(projected)
    assert record is not None
    assert record == open_record(full)
