"""Published data files (tests/published/datasets/SOURCE.md: repository, commit, license of
each), processed end to end on the local cloud as a user would: the contract registered with
``ingestctl dataset add``, the file uploaded unchanged, the output read back."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ingest_tools import cli
from ingest_tools.local_pipeline import Pipeline

pytestmark = [pytest.mark.e2e]

DATASETS = Path(__file__).parents[1] / "published" / "datasets"


def register(p: Pipeline, folder: str) -> str:
    """``ingestctl dataset add`` of the folder's contract; the dataset's name."""
    contract = DATASETS / folder / "contract.json"
    assert cli.main(["dataset", "add", str(contract), "--bucket", p.bucket]) == 0
    return str(json.loads(contract.read_text())["dataset"])


def processed(p: Pipeline, folder: str, file: str) -> list[dict[str, Any]]:
    """Upload the published file under its dataset; the records written to processed/."""
    dataset = register(p, folder)
    key = f"incoming/{dataset}/{file}"
    version, run = p.ingest(key, (DATASETS / folder / file).read_bytes())
    assert run.path[-1] == "RecordSuccess", run.cause
    record = p.record(key, version)
    assert record is not None
    assert (record["status"], record["contract_version"]) == ("SUCCEEDED", 1)
    lines = p.read(str(record["output_key"])).decode("utf-8").splitlines()
    assert len(lines) == record["row_count"]
    return [json.loads(line) for line in lines]


def test_a_quoted_non_ascii_csv(p: Pipeline) -> None:
    """UN M49 codes in French (datasets/country-codes, ODC-PDDL): every field quoted, commas
    inside names, accents and U+2019, "NA" for Namibia, leading zeros, empty fields."""
    rows = processed(p, "unsd-m49-fr", "UNSD-fr.csv")
    assert len(rows) == 249
    by_code = {row["M49 Code"]: row for row in rows}
    assert by_code["344"]["Country or Area"] == "Chine, région administrative spéciale de Hong Kong"
    assert by_code["384"]["Country or Area"] == "Côte d\u2019Ivoire"
    assert by_code["516"]["ISO-alpha2 Code"] == "NA"  # a string, not a missing value
    assert rows[0]["Global Code"] == "001"  # leading zeros kept
    assert by_code["010"]["Region Name"] is None  # Antarctica: empty optional field
    assert rows[-1]["Country or Area"] == "Îles Wallis-et-Futuna"


def test_a_published_gzip_csv(p: Pipeline) -> None:
    """mtcars.csv.gz as r-lib/vroom publishes it (MIT): read compressed, typed."""
    rows = processed(p, "mtcars-gz", "mtcars.csv.gz")
    assert len(rows) == 32
    assert rows[0] == {
        "model": "Mazda RX4",
        "mpg": "21",
        "cyl": 6,
        "disp": "160",
        "hp": 110,
        "drat": "3.9",
        "wt": "2.62",
        "qsec": "16.46",
        "vs": 0,
        "am": 1,
        "gear": 4,
        "carb": 4,
    }
    assert rows[-1]["model"] == "Volvo 142E"


def test_the_quoted_csv_gzipped_gives_the_same_records(p: Pipeline) -> None:
    """The M49 file compressed here (no published gzip file has quoting and non-ASCII)."""
    register(p, "unsd-m49-fr")
    plain = (DATASETS / "unsd-m49-fr" / "UNSD-fr.csv").read_bytes()
    _, run = p.ingest("incoming/unsd-m49-fr/again.csv.gz", gzip.compress(plain))
    assert run.path[-1] == "RecordSuccess", run.cause
    _, run = p.ingest("incoming/unsd-m49-fr/plain.csv", plain)
    assert p.read(p.output_key("incoming/unsd-m49-fr/again.csv.gz")) == p.read(
        p.output_key("incoming/unsd-m49-fr/plain.csv")
    )


def test_json_lines(p: Pipeline) -> None:
    """Polars' foods1.ndjson and frictionless-py's table.jsonl (MIT): numbers typed, the
    decimal's written form kept, non-Latin text."""
    foods = processed(p, "foods1-ndjson", "foods1.ndjson")
    assert len(foods) == 27
    assert foods[0] == {"category": "vegetables", "calories": 45, "fats_g": "0.5", "sugars_g": 2}
    assert foods[-1]["fats_g"] == "0.0"
    table = processed(p, "frictionless-table-jsonl", "table.jsonl")
    assert table == [{"id": 1, "name": "english"}, {"id": 2, "name": "中国人"}]


def test_parquet_output_read_back_by_duckdb(p: Pipeline, tmp_path: Path) -> None:
    """The published mtcars.csv.gz under a contract that writes Parquet (decimal scales as the
    data has them), read back by DuckDB: the column types and the values."""
    duckdb = pytest.importorskip("duckdb")
    contract = json.loads((DATASETS / "mtcars-gz" / "contract.json").read_text())
    scales = {"mpg": 1, "disp": 1, "drat": 2, "wt": 3, "qsec": 2}
    for column in contract["columns"]:
        if column["name"] in scales:
            column["scale"] = scales[column["name"]]
    contract.update(dataset="mtcars-parquet", output={"format": "parquet"})
    path = tmp_path / "contract.json"
    path.write_text(json.dumps(contract))
    assert cli.main(["dataset", "add", str(path), "--bucket", p.bucket]) == 0
    data = (DATASETS / "mtcars-gz" / "mtcars.csv.gz").read_bytes()
    version, run = p.ingest("incoming/mtcars-parquet/mtcars.csv.gz", data)
    assert run.path[-1] == "RecordSuccess", run.cause
    record = p.record("incoming/mtcars-parquet/mtcars.csv.gz", version)
    directory = p.output_key("incoming/mtcars-parquet/mtcars.csv.gz", ".parquet")
    assert record is not None and record["output_key"] == directory
    out = tmp_path / "mtcars.parquet"  # the single-Lambda path: a directory of one part
    out.write_bytes(p.read(f"{directory}/part-00000.parquet"))
    assert record["row_count"] == 32 and record["bytes_out"] == out.stat().st_size

    table = duckdb.read_parquet(str(out))
    types = dict(zip(table.columns, map(str, table.types), strict=True))
    assert types["model"] == "VARCHAR" and types["cyl"] == "BIGINT"
    assert (types["mpg"], types["wt"], types["qsec"]) == (
        "DECIMAL(38,1)",
        "DECIMAL(38,3)",
        "DECIMAL(38,2)",
    )
    (first,) = table.select("model, mpg, cyl, wt, qsec").limit(1).fetchall()
    assert first == ("Mazda RX4", Decimal("21.0"), 6, Decimal("2.620"), Decimal("16.46"))
    assert table.aggregate("count(*), sum(hp)").fetchall() == [(32, 4694)]
