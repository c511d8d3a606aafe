"""A Glue Data Catalog table per dataset (tools/ingest_tools/glue_catalog.py): ``ingestctl
dataset add`` creates it from the contract and updates it compatibly, and a query engine
(DuckDB here, as Athena would) reads the pipeline's output through it: the location from
GetTable's StorageDescriptor, the columns and types from its schema, the partition column
from its PartitionKeys (hive partitioning: ``processed/<dataset>/ingest_date=YYYY-MM-DD/``).

Glue calls go as an operator role holding only the stack's ``DatasetCatalogPolicy``, which the
local cloud's IAM judges. One stack per module (xdist worker): each test has datasets of its
own, so the tests may run in any order, on any worker."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from ingest_pipeline.logic.contracts import parse_contract
from ingest_tools import cli, glue_catalog

if TYPE_CHECKING:
    from ingest_tools.local_pipeline import Pipeline
    from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

SALES = {
    "dataset": "sales",
    "description": "Till receipts.",
    "output": {"format": "parquet"},
    "columns": [
        {"name": "receipt_id", "type": "string"},
        {"name": "amount", "type": "decimal", "scale": 2},
        {"name": "quantity", "type": "integer"},
        {"name": "sold_on", "type": "date"},
        {"name": "sold_at", "type": "datetime"},
        {"name": "gift", "type": "boolean", "required": False},
    ],
}
SALES_CSV = (
    b"receipt_id,amount,quantity,sold_on,sold_at,gift\n"
    b"R-1,12.50,2,2026-11-02,2026-11-02T09:30:00+00:00,true\n"
    b"R-2,7.25,1,2026-11-02,2026-11-02T10:00:00+00:00,\n"
    b"R-3,100.00,5,2026-11-03,2026-11-03T18:45:00+00:00,false\n"
)
_DUCKDB_TYPES = {
    "string": "VARCHAR",
    "bigint": "BIGINT",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
}


@pytest.fixture(scope="module")
def p(module_cloud: LocalCloud) -> Pipeline:
    from ingest_tools.local_pipeline import Pipeline

    return Pipeline(module_cloud)


@pytest.fixture(scope="module")
def operator_glue(module_cloud: LocalCloud) -> Iterator[Any]:
    """A Glue client as an operator role with the stack's DatasetCatalogPolicy alone."""
    iam, account = boto3.client("iam"), module_cloud.account_id
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    role = iam.create_role(RoleName="dataset-operator", AssumeRolePolicyDocument=json.dumps(trust))
    iam.attach_role_policy(
        RoleName="dataset-operator", PolicyArn=module_cloud.outputs["DatasetCatalogPolicyArn"]
    )
    session = boto3.client("sts").assume_role(
        RoleArn=role["Role"]["Arn"], RoleSessionName="operator"
    )["Credentials"]
    yield boto3.client(
        "glue",
        aws_access_key_id=session["AccessKeyId"],
        aws_secret_access_key=session["SecretAccessKey"],
        aws_session_token=session["SessionToken"],
    )


def database(p: Pipeline) -> str:
    return p.cloud.outputs["GlueDatabaseName"]


def add(
    p: Pipeline,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    contract: dict[str, Any],
    *,
    stack_outputs: bool = False,
) -> tuple[int, str]:
    """``ingestctl dataset add`` (as the administrator): the database named, or found in the
    stack's outputs (``--outputs``, as ``ingestctl local up --outputs`` writes them)."""
    path = tmp_path / f"contract-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(contract))
    where = ["--bucket", p.bucket, "--glue-database", database(p)]
    if stack_outputs:
        outputs = tmp_path / "outputs.json"
        outputs.write_text(json.dumps({"outputs": p.cloud.outputs}))
        where = ["--outputs", str(outputs)]
    capsys.readouterr()
    code = cli.main(["dataset", "add", str(path), *where])
    return code, capsys.readouterr().out


def register_as_operator(p: Pipeline, glue: Any, contract: dict[str, Any]) -> str:
    return glue_catalog.register(
        glue, database(p), parse_contract(json.dumps(contract)), p.bucket, apply=True
    )


def landed(p: Pipeline, dataset: str, stem: str) -> date:
    """The day a processed file landed, from its key (logic/keys.py, Parquet: a directory of
    parts, ``processed/<dataset>/ingest_date=YYYY-MM-DD/<stem>.parquet/part-00000.parquet``):
    today or, for a file that landed just before midnight (UTC), yesterday."""
    prefix = f"processed/{dataset}/ingest_date="
    found = [k for k in p.keys(prefix) if k.endswith(f"/{stem}.parquet/part-00000.parquet")]
    assert len(found) == 1, p.keys(f"processed/{dataset}/")
    day = date.fromisoformat(found[0][len(prefix) :][:10])
    today = datetime.now(UTC).date()
    assert today - timedelta(days=1) <= day <= today
    return day


def query(p: Pipeline, name: str, tmp_path: Path, sql: str) -> list[tuple[Any, ...]]:
    """``sql`` on ``t``: the Glue table ``name`` as DuckDB reads it (the objects under its
    location copied to ``tmp_path``, its columns and partition keys with their types)."""
    duckdb = pytest.importorskip("duckdb")  # here, not at collection: see test_published_datasets
    table = boto3.client("glue").get_table(DatabaseName=database(p), Name=name)["Table"]
    storage = table["StorageDescriptor"]
    assert storage["SerdeInfo"]["SerializationLibrary"].endswith("ParquetHiveSerDe")
    bucket, _, prefix = storage["Location"].removeprefix("s3://").partition("/")
    assert bucket == p.bucket
    root = tmp_path / name
    for key in p.keys(prefix):
        local = root / key[len(prefix) :]
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(p.read(key))

    def duck(glue_type: str) -> str:
        return glue_type.upper() if glue_type.startswith("decimal") else _DUCKDB_TYPES[glue_type]

    partitions = {k["Name"]: duck(k["Type"]) for k in table["PartitionKeys"]}
    columns = [(c["Name"], duck(c["Type"])) for c in storage["Columns"]]
    columns += list(partitions.items())
    select = ", ".join(f'CAST("{n}" AS {t}) AS "{n}"' for n, t in columns)
    files = f"{root}/**/*.parquet".replace("'", "''")
    with duckdb.connect() as connection:
        connection.execute("SET TimeZone = 'UTC'")
        source = f"read_parquet('{files}', hive_partitioning = true, union_by_name = true, "
        source += f"hive_types = {partitions!r})"
        view = f"CREATE VIEW t AS SELECT {select} FROM {source}"  # noqa: S608 - the table's names
        connection.execute(view)
        return connection.execute(sql).fetchall()


def test_a_parquet_file_is_read_through_its_glue_table(
    p: Pipeline, operator_glue: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """S3 put -> the pipeline's Parquet output -> the table ``dataset add`` made: the rows,
    the sums and the day the file landed, as a query engine reads them."""
    assert register_as_operator(p, operator_glue, SALES).endswith("sales: created")
    code, out = add(p, tmp_path, capsys, SALES, stack_outputs=True)
    assert code == 0, out
    assert f"Glue table {database(p)}.sales: unchanged" in out  # the operator made it
    _, run = p.ingest("incoming/sales/till-1.csv", SALES_CSV)
    assert run.path[-1] == "RecordSuccess", run.cause
    day = landed(p, "sales", "till-1")

    rows = query(p, "sales", tmp_path, "SELECT * FROM t ORDER BY receipt_id")
    assert rows[0] == (
        "R-1",
        Decimal("12.50"),
        2,
        date(2026, 11, 2),
        datetime(2026, 11, 2, 9, 30),
        True,
        day.isoformat(),
    )
    totals = query(
        p,
        "sales",
        tmp_path,
        "SELECT ingest_date, count(*), sum(amount), sum(quantity), "
        "count(gift) FROM t GROUP BY ingest_date",
    )
    assert totals == [(day.isoformat(), 3, Decimal("119.75"), 8, 2)]


def test_old_and_new_files_are_read_through_one_table_after_a_nullable_column(
    p: Pipeline, operator_glue: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Version 2 adds a nullable column: it is appended to the table, and the file written
    under version 1 (without it) and the one under version 2 are read through the one table."""
    v1 = {**SALES, "dataset": "returns"}
    v2 = {
        **v1,
        "columns": [*SALES["columns"], {"name": "reason", "type": "string", "required": False}],
    }
    assert add(p, tmp_path, capsys, v1)[0] == 0
    _, run = p.ingest("incoming/returns/a.csv", SALES_CSV)
    assert run.path[-1] == "RecordSuccess", run.cause
    assert register_as_operator(p, operator_glue, v2).endswith("(1 column(s) appended)")
    code, out = add(p, tmp_path, capsys, v2)
    assert (code, "registered version 2" in out) == (0, True), out
    now = int(time.time())  # a contract's time is S3's, to the second: claim B after it
    assert p.cloud.runtime.wait_until(lambda: int(time.time()) > now, timeout=3)
    body = b"receipt_id,amount,quantity,sold_on,sold_at,gift,reason\n"
    body += b"R-9,-12.50,-2,2026-11-04,2026-11-04T08:00:00+00:00,,damaged\n"
    _, run = p.ingest("incoming/returns/b.csv", body)
    assert run.path[-1] == "RecordSuccess", run.cause
    landed(p, "returns", "a"), landed(p, "returns", "b")

    columns = boto3.client("glue").get_table(DatabaseName=database(p), Name="returns")
    names = [c["Name"] for c in columns["Table"]["StorageDescriptor"]["Columns"]]
    assert names[-2:] == ["gift", "reason"]
    rows = query(p, "returns", tmp_path, "SELECT receipt_id, reason FROM t ORDER BY 1")
    assert rows == [("R-1", None), ("R-2", None), ("R-3", None), ("R-9", "damaged")]
    (total,) = query(p, "returns", tmp_path, "SELECT sum(amount), count(reason) FROM t")
    assert total == (Decimal("107.25"), 1)


@pytest.mark.parametrize(
    ("change", "column", "reason"),
    [
        ({"columns": SALES["columns"][1:]}, "receipt_id", "removed"),
        (
            {"columns": [{**SALES["columns"][0], "type": "integer"}, *SALES["columns"][1:]]},
            "receipt_id",
            "type changes from string to bigint",
        ),
        (
            {"columns": [*SALES["columns"], {"name": "store", "type": "string"}]},
            "store",
            "new and required",
        ),
        ({"output": {"format": "jsonl"}}, None, "the output format changes to jsonl"),
    ],
)
def test_an_incompatible_contract_is_refused_naming_the_column(  # noqa: PLR0917 - fixtures
    p: Pipeline,
    operator_glue: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, Any],
    column: str | None,
    reason: str,
) -> None:
    """Refused before anything is registered (exit 2, as the tool's other usage errors); the
    contract and the table stay as they were."""
    dataset = f"refunds-{len(reason)}"  # one per case: the module's stack is shared
    v1 = {**SALES, "dataset": dataset}
    assert add(p, tmp_path, capsys, v1)[0] == 0
    table = glue_catalog.table_name(dataset)
    before = operator_glue.get_table(DatabaseName=database(p), Name=table)["Table"]
    code, out = add(p, tmp_path, capsys, {**v1, **change})
    assert code == 2, out
    where = f"column {column!r}" if column else "the table"
    assert f"refused: {dataset}: {where}: {reason}" in out, out
    with pytest.raises(glue_catalog.SchemaChangeError) as refused:
        register_as_operator(p, operator_glue, {**v1, **change})
    assert (refused.value.column, refused.value.dataset) == (column, dataset)
    after = operator_glue.get_table(DatabaseName=database(p), Name=table)["Table"]
    assert after["StorageDescriptor"] == before["StorageDescriptor"]
    code, out = cli.main(["dataset", "show", dataset, "--bucket", p.bucket]), ""
    shown = json.loads(capsys.readouterr().out)
    assert (code, shown["version"]) == (0, 1)


def test_the_operator_policy_reaches_this_stacks_tables_only(
    p: Pipeline, operator_glue: Any
) -> None:
    """DatasetCatalogPolicy: GetTable/CreateTable/UpdateTable in the stack's database, nothing
    elsewhere (IAM's refusal, as AWS words it)."""
    boto3.client("glue").create_database(DatabaseInput={"Name": "elsewhere"})
    error = operator_glue.exceptions.ClientError
    with pytest.raises(error) as refused:
        operator_glue.get_table(DatabaseName="elsewhere", Name="orders")
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    assert ":database/elsewhere" in refused.value.response["Error"]["Message"]
    with pytest.raises(error) as refused:
        operator_glue.delete_table(DatabaseName=database(p), Name="orders")
    assert "glue:DeleteTable" in refused.value.response["Error"]["Message"]
    orders = operator_glue.get_table(DatabaseName=database(p), Name="orders")["Table"]
    assert orders["PartitionKeys"] == [{"Name": "ingest_date", "Type": "string"}]
