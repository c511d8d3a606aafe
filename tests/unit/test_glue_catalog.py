"""The Glue tables (tools/ingest_tools/glue_catalog.py): the contract's types as Glue's, what a
new contract version may change, and template.yaml's tables and their IAM."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ingest_pipeline.logic.contracts import Contract, known_datasets, load_contract, parse_contract
from ingest_tools.glue_catalog import SchemaChangeError, plan, table_input
from ingest_tools.local_pipeline import TEMPLATE
from localcloud.stack import load_template

pytestmark = [pytest.mark.unit]

BUCKET = "b"
V1: dict[str, Any] = {
    "dataset": "click-stream",
    "output": {"format": "parquet"},
    "columns": [
        {"name": "Id", "type": "string"},
        {"name": "amount", "type": "decimal", "scale": 2},
        {"name": "n", "type": "integer"},
        {"name": "ok", "type": "boolean", "required": False},
        {"name": "day", "type": "date"},
        {"name": "at", "type": "datetime"},
    ],
}


def contract(text: dict[str, Any]) -> Contract:
    return parse_contract(json.dumps(text))


def with_columns(*columns: dict[str, Any], **change: Any) -> Contract:
    return contract({**V1, "columns": list(columns), **change})


def test_a_table_of_the_contracts_output() -> None:
    table = table_input(contract(V1), BUCKET)
    assert table["Name"] == "click_stream"  # Athena's names: no hyphen
    storage = table["StorageDescriptor"]
    assert [(c["Name"], c["Type"]) for c in storage["Columns"]] == [
        ("id", "string"),
        ("amount", "decimal(38,2)"),
        ("n", "bigint"),
        ("ok", "boolean"),
        ("day", "date"),
        ("at", "timestamp"),
    ]
    assert storage["Location"] == "s3://b/processed/click-stream/"
    assert storage["SerdeInfo"]["SerializationLibrary"].endswith("ParquetHiveSerDe")
    assert table["PartitionKeys"] == [{"Name": "ingest_date", "Type": "string"}]
    assert {k: v for k, v in table["Parameters"].items() if k.startswith("projection.")} == {
        "projection.enabled": "true",
        "projection.ingest_date.type": "date",
        "projection.ingest_date.format": "yyyy-MM-dd",
        "projection.ingest_date.range": "2026-01-01,NOW",
    }
    assert table["Parameters"]["storage.location.template"] == (
        "s3://b/processed/click-stream/ingest_date=${ingest_date}/"
    )
    jsonl = table_input(contract({**V1, "output": {"format": "jsonl"}}), BUCKET)
    assert jsonl["StorageDescriptor"]["SerdeInfo"] == {
        "SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe"
    }
    unscaled = {**V1, "output": {"format": "jsonl"}, "columns": [{"name": "x", "type": "decimal"}]}
    (column,) = table_input(contract(unscaled), BUCKET)["StorageDescriptor"]["Columns"]
    assert column["Type"] == "string"  # the exact text JSON Lines holds


def test_a_nullable_column_is_appended_and_the_range_kept() -> None:
    current = table_input(contract(V1), BUCKET)
    current["Parameters"]["projection.ingest_date.range"] = "2025-06-01,NOW"  # widened by hand
    new = {"name": "note", "type": "string", "required": False}
    wanted = plan(current, with_columns(new, *V1["columns"]), BUCKET)
    assert wanted is not None
    names = [c["Name"] for c in wanted["StorageDescriptor"]["Columns"]]
    assert names == ["id", "amount", "n", "ok", "day", "at", "note"]
    assert wanted["Parameters"]["projection.ingest_date.range"] == "2025-06-01,NOW"
    assert plan(current, contract(V1), BUCKET) is None  # unchanged
    assert plan(None, contract(V1), BUCKET) == table_input(contract(V1), BUCKET)


@pytest.mark.parametrize(
    ("changed", "column", "reason"),
    [
        (with_columns(*V1["columns"][1:]), "id", "removed"),
        (
            with_columns({"name": "id", "type": "integer"}, *V1["columns"][1:]),
            "id",
            "type changes from string to bigint",
        ),
        (
            with_columns(
                *V1["columns"][:1],
                {"name": "amount", "type": "decimal", "scale": 3},
                *V1["columns"][2:],
            ),
            "amount",
            "type changes from decimal(38,2) to decimal(38,3)",
        ),
        (with_columns(*V1["columns"], {"name": "store", "type": "string"}), "store", "required"),
        (contract({**V1, "output": {"format": "jsonl"}}), None, "output format changes"),
        (
            with_columns(
                *V1["columns"], {"name": "ingest_date", "type": "date", "required": False}
            ),
            "ingest_date",
            "is the partition column",
        ),
        (
            with_columns(*V1["columns"], {"name": "ID", "type": "string", "required": False}),
            "ID",
            "is 'Id' to the catalog",
        ),
    ],
)
def test_an_incompatible_change_names_the_column_and_why(
    changed: Contract, column: str | None, reason: str
) -> None:
    with pytest.raises(SchemaChangeError) as refused:
        plan(table_input(contract(V1), BUCKET), changed, BUCKET)
    assert refused.value.column == column and reason in refused.value.reason, refused.value
    where = f"column {column!r}" if column else "the table"
    assert str(refused.value).startswith(f"click-stream: {where}: ")


def _resolved(value: Any) -> Any:
    """The template's intrinsics as the tests' bucket and database names them."""
    if isinstance(value, dict) and set(value) == {"Fn::Sub"}:
        return value["Fn::Sub"].replace("${IngestBucket}", BUCKET).replace("${!", "${")
    if isinstance(value, dict):
        return {k: _resolved(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v) for v in value]
    return value


def test_the_template_declares_the_packaged_datasets_tables_as_dataset_add_would() -> None:
    resources = load_template(TEMPLATE)["Resources"]
    tables = {
        props["TableInput"]["Name"]: props
        for props in (
            r["Properties"] for r in resources.values() if r["Type"] == "AWS::Glue::Table"
        )
    }
    assert sorted(tables) == known_datasets()
    for name, props in tables.items():
        assert props["DatabaseName"] == {"Ref": "DataCatalogDatabase"}
        assert _resolved(props["TableInput"]) == table_input(load_contract(name), BUCKET)


def test_only_the_operators_policy_has_glue_rights() -> None:
    """ingestctl registers the tables with the operator's credentials: DatasetCatalogPolicy
    holds exactly its calls on this stack's catalog ARNs; no function or role has any."""
    resources = load_template(TEMPLATE)["Resources"]
    (statement,) = resources["DatasetCatalogPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == ["glue:GetTable", "glue:CreateTable", "glue:UpdateTable"]
    arns = [r["Fn::Sub"].split("${AWS::AccountId}:", 1)[1] for r in statement["Resource"]]
    assert arns == [
        "catalog",
        "database/${DataCatalogDatabase}",
        "table/${DataCatalogDatabase}/*",
    ]
    for logical_id, resource in resources.items():
        if logical_id != "DatasetCatalogPolicy":
            assert "glue:" not in json.dumps(resource.get("Properties", {})), logical_id
