"""Every input format at every size (issue 40), end to end on the local cloud deployed with
1 MiB thresholds and chunks: a gzip CSV, a ';'-delimited CSV with quoted line breaks, a CSV
without a header and a JSON Lines file, each above the threshold, each to JSON Lines and to
Parquet. Each output equals the single pass's of the same file (rows, values, order), under
``processed/<dataset>/ingest_date=<the date it landed>/``, and the state record says so.

One cloud for the module, and the eight objects run at once (``make test``'s time budget):
the module fixture uploads them and waits; each test asserts one of them."""

from __future__ import annotations

import gzip
import io
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from ingest_pipeline.dal.contracts import register
from ingest_pipeline.logic import keys, parquet
from ingest_pipeline.logic.contracts import Contract, parse_contract
from ingest_pipeline.logic.summary import Summary
from ingest_pipeline.logic.transform import convert
from ingest_tools.local_pipeline import Execution, Pipeline, local_pipeline

pytestmark = pytest.mark.e2e

COLUMNS = [
    {"name": "order_id", "type": "string"},
    {"name": "note", "type": "string", "required": False},
    {"name": "amount", "type": "decimal", "scale": 2},
    {"name": "quantity", "type": "integer"},
]
MIB = 1024 * 1024


def _rows(count: int, seed: int) -> list[tuple[str, str, str, int]]:
    rng = random.Random(seed)  # noqa: S311 (test data)
    return [
        (f"o-{n}", rng.randbytes(18).hex(), f"{rng.randrange(100000)}.{n % 100:02d}", n % 97)
        for n in range(1, count + 1)
    ]


def gzip_csv() -> bytes:
    rows = _rows(36_000, 1)  # hex notes: gzip keeps it above 1 MiB (about 2 MiB of text)
    text = "order_id,note,amount,quantity\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in rows)
    return gzip.compress(text.encode(), compresslevel=6)


def semicolon_csv() -> bytes:
    lines = ["order_id;note;amount;quantity"]
    for a, b, c, d in _rows(26_500, 2):
        note = f'"{b[:12]}; floor 2\nbuilding ""B""\n"' if d % 3 == 0 else b[:12]
        lines.append(f"{a};{note};{c};{d}")
    return ("\n".join(lines) + "\n").encode()


def headerless_csv() -> bytes:
    return "".join(f"{a},{b},{c},{d}\r\n" for a, b, c, d in _rows(19_500, 3)).encode()


def json_lines() -> bytes:
    return "".join(
        json.dumps({"order_id": a, "note": None if d == 0 else b, "amount": c, "quantity": d})
        + "\n"
        for a, b, c, d in _rows(10_200, 4)
    ).encode()


FORMATS = {
    "gzip-csv": ({}, gzip_csv, "a.csv.gz"),
    "semicolons": ({"delimiter": ";"}, semicolon_csv, "2026/a.csv"),
    "headerless": ({"header": False}, headerless_csv, "a.csv"),
    "jsonl": ({"format": "jsonl"}, json_lines, "a.ndjson"),
}
CASES = [(name, out) for name in FORMATS for out in ("jsonl", "parquet")]


@dataclass
class Case:
    contract: Contract
    body: bytes
    key: str
    version: str = ""
    handoff: Execution | None = None
    run: Execution | None = None


def _contract(name: str, out: str) -> tuple[Contract, str]:
    text = json.dumps(
        {
            "dataset": f"large-{name}-{out}",
            "input": FORMATS[name][0],
            "output": {"format": out},
            "columns": COLUMNS,
        }
    )
    return parse_contract(text), text


@pytest.fixture(scope="module")
def pipeline() -> Iterator[Pipeline]:
    with local_pipeline(
        parameters={"LargeObjectThresholdMiB": "1", "LargeObjectChunkMiB": "1"}
    ) as running:
        yield running


@pytest.fixture(scope="module")
def ran(pipeline: Pipeline) -> dict[tuple[str, str], Case]:
    """The eight objects, uploaded together and run to their end."""
    bodies = {name: make() for name, (_, make, _) in FORMATS.items()}
    cases: dict[tuple[str, str], Case] = {}
    for name, out in CASES:
        contract, text = _contract(name, out)
        register(pipeline.bucket, contract, text)
        key = f"incoming/{contract.dataset}/{FORMATS[name][2]}"
        cases[name, out] = Case(contract, bodies[name], key)
    starts = {}
    for case in cases.values():
        assert len(case.body) > MIB, case.key  # above LargeObjectThresholdMiB
        case.version = pipeline.put(case.key, case.body)
        event = pipeline.rule_input(pipeline.s3_event(case.key, case.version))
        starts[pipeline.start(event)] = case
    pipeline.wait_all(list(starts), timeout=180)
    for arn, case in starts.items():
        case.handoff = pipeline.wait(arn)
        case.run = pipeline.handed_over_to(case.handoff, timeout=180)
    return cases


def single_pass(case: Case) -> tuple[bytes, int]:
    summary = Summary(dataset=case.contract.dataset)
    out = b"".join(convert(io.BytesIO(case.body), case.contract, summary))
    return out, summary.rows


@pytest.mark.parametrize(("name", "out"), CASES)
def test_a_large_file_of_every_format_makes_the_single_pass_output(
    pipeline: Pipeline, ran: dict[tuple[str, str], Case], name: str, out: str
) -> None:
    case = ran[name, out]
    assert case.run is not None and case.handoff is not None
    assert case.handoff.path[-2:] == ["StartLargeObjectWorkflow", "EndAsHandedOver"]
    assert case.run.status == "SUCCEEDED", (case.run.path, case.run.cause)
    lines, rows = single_pass(case)
    record = pipeline.record(case.key, case.version)
    assert record is not None
    assert (record["status"], record["outcome"], record["row_count"]) == (
        "SUCCEEDED",
        "PROCESSED",
        rows,
    )
    head = pipeline.s3.head_object(Bucket=pipeline.bucket, Key=case.key)
    landed = keys.ingest_date(head["LastModified"])
    suffix = parquet.SUFFIX if out == "parquet" else ".jsonl"
    expected_key = keys.output_key(case.key, landed, suffix)
    assert record["output_key"] == expected_key
    assert f"/ingest_date={landed}/" in expected_key
    if out == "jsonl":
        assert pipeline.read(expected_key) == lines
    else:
        _assert_parquet_directory(pipeline, expected_key, case.contract, lines, rows)
    assert pipeline.keys(f"work/{case.run.arn.rsplit(':', 1)[-1]}/") == []


def _assert_parquet_directory(
    pipeline: Pipeline, directory: str, contract: Contract, lines: bytes, rows: int
) -> None:
    """Parts of the same schema and, read in order, the single pass's values; the manifest
    names exactly them."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    listed = sorted(pipeline.keys(f"{directory}/"))
    parts = [k for k in listed if k.rsplit("/", 1)[-1].startswith("part-")]
    assert sorted([*parts, keys.manifest_key(directory)]) == listed
    assert len(parts) >= 2  # one per chunk
    manifest = json.loads(pipeline.read(keys.manifest_key(directory)))
    assert [p["key"] for p in manifest["parts"]] == [k.rsplit("/", 1)[-1] for k in parts]
    assert manifest["rows"] == rows
    expected_file = io.BytesIO()
    parquet.write_parquet(iter(lines.splitlines(keepends=True)), contract, expected_file)
    expected = pq.read_table(pa.BufferReader(expected_file.getvalue()))
    tables = [pq.read_table(pa.BufferReader(pipeline.read(k))) for k in parts]
    assert all(t.schema.equals(expected.schema) for t in tables)
    assert pa.concat_tables(tables).equals(expected)


def test_a_smaller_version_of_a_large_parquet_output_drops_its_extra_parts(
    pipeline: Pipeline, ran: dict[tuple[str, str], Case]
) -> None:
    """A new version of the key, small (the single-Lambda path): its directory has one part
    and a manifest naming it; the large version's other parts are deleted."""
    case = ran["jsonl", "parquet"]
    small = case.body[: case.body.index(b"\n", 10_000) + 1]
    version, run = pipeline.ingest(case.key, small, timeout=60)
    assert run.status == "SUCCEEDED", run.cause
    record = pipeline.record(case.key, version)
    assert record is not None and record["row_count"] == small.count(b"\n")
    directory = record["output_key"]
    assert sorted(pipeline.keys(f"{directory}/")) == sorted(
        [keys.parquet_part_key(directory, 0), keys.manifest_key(directory)]
    )
    manifest = json.loads(pipeline.read(keys.manifest_key(directory)))
    assert manifest["source"]["versionId"] == version
