"""A Glue Data Catalog table per dataset, so that Athena, Spark, DuckDB or Trino read
``processed/<dataset>/`` as a table (docs/your-data.md, "Query it").

The table is the contract's output: its columns in the contract's order with Glue/Hive types
(:data:`GLUE_TYPES`), partitioned by the day the file landed (``ingest_date=YYYY-MM-DD/`` in
the key, :data:`PARTITION_KEY`) with partition projection (no crawler, no per-partition
call: Athena computes the partitions from the range), located at
``s3://<bucket>/processed/<dataset>/``, read by the Parquet SerDe or the OpenX JSON SerDe as
the contract's ``output.format`` says.

A new contract version changes the table only compatibly: added nullable columns are
appended; a removed column, a changed type, a new required column or another output format
is refused (:class:`SchemaChangeError`), because files already written could no longer be read
through the table. ``template.yaml`` declares the tables of the packaged datasets with the same
TableInput (tests/unit/test_glue_catalog.py compares them).

Who writes the catalog: ``ingestctl dataset add``, with the operator's credentials
(``DatasetCatalogPolicy`` in template.yaml holds exactly the Glue calls it makes); the
functions have no Glue rights.
"""

from __future__ import annotations

from typing import Any

from ingest_pipeline.logic.contracts import Column, ColumnType, Contract, OutputFormat

__all__ = [
    "GLUE_TYPES",
    "PARTITION_KEY",
    "PROJECTION_START",
    "SchemaChangeError",
    "glue_type",
    "plan",
    "register",
    "table_input",
    "table_name",
]

#: The partition column: the UTC day the file landed, ``processed/<dataset>/ingest_date=.../``.
PARTITION_KEY = "ingest_date"
#: The first day projected: no file has this layout before it.
PROJECTION_START = "2026-01-01"

GLUE_TYPES = {
    ColumnType.STRING: "string",
    ColumnType.INTEGER: "bigint",
    ColumnType.BOOLEAN: "boolean",
    ColumnType.DATE: "date",
    ColumnType.DATETIME: "timestamp",
}
_PARQUET = {
    "SerdeInfo": {
        "SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
        "Parameters": {"serialization.format": "1"},
    },
    "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
    "OutputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
}
_JSONL = {
    "SerdeInfo": {"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe"},
    "InputFormat": "org.apache.hadoop.mapred.TextInputFormat",
    "OutputFormat": "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
}
_RANGE = f"projection.{PARTITION_KEY}.range"


class SchemaChangeError(Exception):
    """The contract cannot become the dataset's table: ``column`` (None: the whole table)
    and why. ``ingestctl dataset add`` refuses the contract with it (exit 2)."""

    def __init__(self, dataset: str, column: str | None, reason: str) -> None:
        self.dataset, self.column, self.reason = dataset, column, reason
        where = f"column {column!r}" if column is not None else "the table"
        super().__init__(f"{dataset}: {where}: {reason}")


def table_name(dataset: str) -> str:
    """Athena's names are lower case letters, digits and ``_``: ``click-stream`` ->
    ``click_stream``."""
    return dataset.replace("-", "_")


def glue_type(column: Column) -> str:
    """A decimal with a scale is ``decimal(38,scale)`` (Parquet's decimal128); without one it
    is the exact text the JSON Lines output holds (``string``: CAST it in the query)."""
    if column.type is ColumnType.DECIMAL:
        return f"decimal(38,{column.scale})" if column.scale is not None else "string"
    return GLUE_TYPES[column.type]


def _columns(contract: Contract) -> list[dict[str, str]]:
    """The table's columns; a name the catalog cannot hold apart is refused. The catalog's
    names are case-insensitive (Glue keeps them in lower case), so are both readers'."""
    seen: dict[str, str] = {}
    columns = []
    for column in contract.columns:
        name = column.name.lower()
        if name == PARTITION_KEY:
            raise SchemaChangeError(contract.dataset, column.name, "is the partition column")
        if name in seen:
            raise SchemaChangeError(
                contract.dataset, column.name, f"is {seen[name]!r} to the catalog (case-blind)"
            )
        seen[name] = column.name
        columns.append({"Name": name, "Type": glue_type(column)})
    return columns


def table_input(contract: Contract, bucket: str) -> dict[str, Any]:
    """The Glue TableInput of ``contract``'s output in ``bucket``."""
    location = f"s3://{bucket}/processed/{contract.dataset}/"
    parquet = contract.output.format is OutputFormat.PARQUET
    key = PARTITION_KEY
    return {
        "Name": table_name(contract.dataset),
        "Description": contract.description or f"processed/{contract.dataset}/",
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {
            "EXTERNAL": "TRUE",
            "classification": "parquet" if parquet else "json",
            "projection.enabled": "true",
            f"projection.{key}.type": "date",
            f"projection.{key}.format": "yyyy-MM-dd",
            _RANGE: f"{PROJECTION_START},NOW",  # a day apart: the format's default interval
            "storage.location.template": f"{location}{key}=${{{key}}}/",
        },
        "PartitionKeys": [{"Name": key, "Type": "string"}],
        "StorageDescriptor": {
            "Columns": _columns(contract),
            "Location": location,
            **(_PARQUET if parquet else _JSONL),
        },
    }


def _as_input(table: dict[str, Any], like: dict[str, Any]) -> dict[str, Any]:
    """GetTable's Table cut to the keys of the TableInput ``like`` (what UpdateTable takes)."""
    found = {key: table[key] for key in like if key in table}
    storage = table.get("StorageDescriptor") or {}
    found["StorageDescriptor"] = {k: storage[k] for k in like["StorageDescriptor"] if k in storage}
    return found


def plan(current: dict[str, Any] | None, contract: Contract, bucket: str) -> dict[str, Any] | None:
    """The TableInput to write for ``contract`` given the table as it is (GetTable's Table, or
    None: none yet), or None when the table already says it. SchemaChangeError when files
    read through the current table could not be read through the new one."""
    wanted = table_input(contract, bucket)
    if current is None:
        return wanted
    dataset, now = contract.dataset, _as_input(current, wanted)
    storage, was = now.get("StorageDescriptor", {}), wanted["StorageDescriptor"]
    if storage.get("Location") not in (None, was["Location"]):
        raise SchemaChangeError(dataset, None, f"the table reads {storage['Location']}")
    if (
        storage.get("SerdeInfo", {}).get("SerializationLibrary")
        != (was["SerdeInfo"]["SerializationLibrary"])
    ):
        reason = f"the output format changes to {contract.output.format}: the table reads one"
        raise SchemaChangeError(dataset, None, reason)
    new = {c["Name"]: c for c in was["Columns"]}
    required = {c.name.lower() for c in contract.columns if c.required}
    columns = []
    for column in storage.get("Columns", []):
        name, kind = column["Name"], column["Type"]
        if name not in new:
            raise SchemaChangeError(dataset, name, "removed: files already written have it")
        if new[name]["Type"] != kind:
            raise SchemaChangeError(
                dataset, name, f"type changes from {kind} to {new.pop(name)['Type']}"
            )
        columns.append(new.pop(name))
    for name, column in new.items():  # appended, in the contract's order
        if name in required:
            raise SchemaChangeError(
                dataset, name, 'new and required: files already written lack it ("required": false)'
            )
        columns.append(column)
    merged = {**wanted, "StorageDescriptor": {**was, "Columns": columns}}
    parameters = {**now.get("Parameters", {}), **wanted["Parameters"]}
    parameters[_RANGE] = now.get("Parameters", {}).get(_RANGE, parameters[_RANGE])  # kept
    merged["Parameters"] = parameters
    return None if merged == now else merged


def register(glue: Any, database: str, contract: Contract, bucket: str, *, apply: bool) -> str:
    """Check (``apply=False``) or write the dataset's table in ``database``: what it did, one
    line. SchemaChangeError when the contract cannot become the table."""
    name = table_name(contract.dataset)
    try:
        current = glue.get_table(DatabaseName=database, Name=name)["Table"]
    except glue.exceptions.EntityNotFoundException:
        current = None
    wanted = plan(current, contract, bucket)
    where = f"Glue table {database}.{name}"
    if wanted is None:
        return f"{where}: unchanged"
    if not apply:
        return f"{where}: would be {'created' if current is None else 'updated'}"
    if current is None:
        glue.create_table(DatabaseName=database, TableInput=wanted)
        return f"{where}: created"
    glue.update_table(DatabaseName=database, TableInput=wanted)
    added = len(wanted["StorageDescriptor"]["Columns"]) - len(
        current["StorageDescriptor"].get("Columns", [])
    )
    return f"{where}: updated ({added} column(s) appended)" if added else f"{where}: updated"
