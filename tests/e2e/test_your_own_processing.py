"""docs/your-own-processing.md, followed as written: its processor is the one in the package,
its contract is registered with ``ingestctl dataset add``, its CSV is checked with ``ingestctl
dataset check`` and uploaded, and the output is the page's JSON Lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ingest_pipeline.logic import processing
from ingest_tools import cli
from ingest_tools.local_pipeline import Pipeline

pytestmark = [pytest.mark.e2e]

ROOT = Path(__file__).parents[2]
GUIDE = (ROOT / "docs" / "your-own-processing.md").read_text(encoding="utf-8")
BLOCKS = dict(re.findall(r"```(python|json|csv|jsonl)\n(.*?)```", GUIDE, re.S))


def test_the_guides_processor_is_the_packaged_one() -> None:
    packaged = ROOT / "functions" / "ingest_pipeline" / "processors" / "mask_emails.py"
    assert BLOCKS["python"] == packaged.read_text(encoding="utf-8")


def test_the_guide_step_by_step(
    p: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract, sample = tmp_path / "contacts.json", tmp_path / "contacts.csv"
    contract.write_text(BLOCKS["json"], encoding="utf-8")
    sample.write_text(BLOCKS["csv"], encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["dataset", "check", str(sample), "--contract", str(contract)]) == 0
    assert "would be processed: 3 rows for dataset 'contacts'" in capsys.readouterr().out
    assert cli.main(["dataset", "add", str(contract), "--bucket", p.bucket]) == 0

    key = "incoming/contacts/2026/11/contacts.csv"
    version, run = p.ingest(key, sample.read_bytes())
    assert run.path[-1] == "RecordSuccess", run.cause
    assert p.read(p.output_key(key)).decode() == BLOCKS["jsonl"]
    record = p.record(key, version)
    assert record is not None and record["contract_version"] == 1

    bad = "contact_id,email,signed_up\nC-4,not-an-address,2026-11-05\n"
    version, run = p.ingest("incoming/contacts/bad.csv", bad.encode())
    assert "QuarantineObject" in run.path
    record = p.record("incoming/contacts/bad.csv", version)
    assert record is not None
    assert record["error_code"] == "BAD_VALUE"
    assert (
        "record 1: email 'not-an-address' is not an address (processor 'mask_emails')"
        in record["error_cause"]
    )
    assert [k for k in p.keys("processed/contacts/") if k.endswith("/bad.jsonl")] == []


def test_an_unknown_processor_is_refused_by_dataset_add(
    p: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = tmp_path / "c.json"
    contract.write_text(BLOCKS["json"].replace("mask_emails", "mask_phones"), encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["dataset", "add", str(contract), "--bucket", p.bucket]) == 2
    assert "no processor 'mask_phones'" in capsys.readouterr().out
    assert processing.PACKAGE == "ingest_pipeline.processors"
