"""Datasets are data: a contract registered with ``ingestctl dataset add`` is used without a
redeploy, each object is processed with the contract version current when it was claimed,
and its state record says which (dal/contracts.py)."""

from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ingest_tools import cli
from ingest_tools.local_pipeline import Pipeline

pytestmark = [pytest.mark.e2e]

SHIPMENTS_V1 = {
    "dataset": "shipments",
    "description": "Parcels handed to the carrier.",
    "columns": [
        {"name": "shipment_id", "type": "string"},
        {"name": "weight_kg", "type": "decimal"},
    ],
}
SHIPMENTS_V2 = {
    **SHIPMENTS_V1,
    "input": {"delimiter": ";"},
    "columns": [*SHIPMENTS_V1["columns"], {"name": "carrier", "type": "string"}],
}


def dataset(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``ingestctl dataset ...``: its exit code and what it printed."""
    capsys.readouterr()
    code = cli.main(["dataset", *args])
    return code, capsys.readouterr().out


def into_the_next_second(p: Pipeline) -> None:
    """S3 keeps a version's time to the second, so a contract registered in the second an
    object was claimed counts as registered before: wait for the next one."""
    now = int(time.time())
    assert p.cloud.runtime.wait_until(lambda: int(time.time()) > now, timeout=3)


def add(p: Pipeline, tmp_path: Path, capsys: Any, contract: dict[str, Any]) -> tuple[int, str]:
    path = tmp_path / f"contract-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(contract, indent=2))
    return dataset(capsys, "add", str(path), "--bucket", p.bucket)


def test_a_dataset_registered_at_run_time_is_processed_and_recorded(
    p: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = add(p, tmp_path, capsys, SHIPMENTS_V1)
    assert code == 0, out
    assert "shipments: registered version 1" in out
    assert add(p, tmp_path, capsys, SHIPMENTS_V1)[1].startswith("shipments: unchanged, version 1")

    key = "incoming/shipments/2026/a.csv"
    version, run = p.ingest(key, b"shipment_id,weight_kg\nS-1,1.25\nS-2,0.5\n")
    assert run.path[-1] == "RecordSuccess", run.cause
    assert p.read(p.output_key(key)) == (
        b'{"shipment_id":"S-1","weight_kg":"1.25"}\n{"shipment_id":"S-2","weight_kg":"0.5"}\n'
    )
    record = p.record(key, version)
    assert record is not None
    assert record["contract_version"] == Decimal(1)

    code, out = dataset(capsys, "list", "--json", "--bucket", p.bucket)
    listed = {row["dataset"]: row for row in json.loads(out)}
    assert listed["shipments"]["version"] == 1
    assert listed["orders"] == {"dataset": "orders", "version": 0, "since": "packaged"}
    code, out = dataset(capsys, "show", "shipments", "--bucket", p.bucket)
    shown = json.loads(out)
    assert (shown["version"], shown["contract"]["columns"][1]["name"]) == (1, "weight_kg")

    local = tmp_path / "a.csv"
    local.write_text("shipment_id,weight_kg\nS-3,heavy\n")
    code, out = dataset(capsys, "check", str(local), "--dataset", "shipments", "--bucket", p.bucket)
    assert code == 1, out  # checked against the stack's version 1, not a packaged contract
    assert "the stack's contract version 1" in out and "column 'weight_kg'" in out


def test_each_object_uses_the_version_current_when_it_was_claimed(
    p: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A is claimed under version 1 and held in ProcessFunction while version 2 (a new column,
    another delimiter) is registered; B is uploaded after. A is processed with version 1, B
    with version 2, and each record says which."""
    assert add(p, tmp_path, capsys, SHIPMENTS_V1)[0] == 0
    process = p.functions["ProcessFunction"]
    gate = p.cloud.faults.gate(process, invocation=p.cloud.invocation_count(process) + 1)
    key_a, key_b = "incoming/shipments/a.csv", "incoming/shipments/b.csv"
    version_a = p.put(key_a, b"shipment_id,weight_kg\nS-1,1.25\n")
    assert gate.entered.wait(10), "ProcessFunction was not invoked"
    into_the_next_second(p)  # after A's claim
    code, out = add(p, tmp_path, capsys, SHIPMENTS_V2)
    assert (code, "registered version 2" in out) == (0, True), out
    gate.release()
    (run_a,) = [p.wait(e.exec_arn) for e in p.executions_for(key_a)]
    into_the_next_second(p)  # after version 2's registration
    version_b, run_b = p.ingest(key_b, b"shipment_id;weight_kg;carrier\nS-2;0.5;DHL\n")

    assert (run_a.path[-1], run_b.path[-1]) == ("RecordSuccess", "RecordSuccess")
    assert p.read(p.output_key(key_a)) == b'{"shipment_id":"S-1","weight_kg":"1.25"}\n'
    assert p.read(p.output_key(key_b)) == (
        b'{"shipment_id":"S-2","weight_kg":"0.5","carrier":"DHL"}\n'
    )
    record_a, record_b = p.record(key_a, version_a), p.record(key_b, version_b)
    assert record_a is not None and record_b is not None
    assert (record_a["contract_version"], record_b["contract_version"]) == (1, 2)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"columns": [{"name": "a", "type": "text"}]}, "columns.0.type"),
        (
            {"columns": [{"name": "a", "type": "string"}, {"name": "a", "type": "integer"}]},
            "columns[1].name 'a' repeats columns[0]",
        ),
        ({"input": {"delimeter": ";"}}, "input.delimeter"),
        ({"output": {"format": "xml"}}, "output.format"),
    ],
)
def test_a_bad_contract_is_refused_with_where_the_problem_is(
    p: Pipeline,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, Any],
    where: str,
) -> None:
    contract = {"dataset": "refused", "columns": [{"name": "a", "type": "string"}], **change}
    code, out = add(p, tmp_path, capsys, contract)
    assert code == 2
    assert "refused" in out and where in out, out
    assert p.keys("contracts/refused") == []  # nothing registered
    check = tmp_path / "a.csv"
    check.write_text("a\nx\n")
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(contract))
    code, out = dataset(capsys, "check", str(check), "--contract", str(path))
    assert code == 2 and where in out, out


def test_a_deleted_contract_stops_its_dataset_and_a_new_one_goes_on_numbering(
    p: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Deleting contracts/<dataset>.json (a delete marker) unregisters the dataset: its next
    file is quarantined as UNKNOWN_DATASET. Registered again, it is version 2, not 1."""
    assert add(p, tmp_path, capsys, SHIPMENTS_V1)[0] == 0
    p.s3.delete_object(Bucket=p.bucket, Key="contracts/shipments.json")
    into_the_next_second(p)
    key = "incoming/shipments/after-delete.csv"
    version, run = p.ingest(key, b"shipment_id,weight_kg\nS-9,2\n")
    record = p.record(key, version)
    assert record is not None, run.path
    assert record.get("error_code") == "UNKNOWN_DATASET", (run.path, run.cause, record)
    code, out = add(p, tmp_path, capsys, SHIPMENTS_V1)
    assert (code, "registered version 2" in out) == (0, True), out
