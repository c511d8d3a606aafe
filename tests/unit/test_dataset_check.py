"""`ingestctl dataset check`: a local file through ProcessObject's conversion, offline; what it
prints and its exit status (0 processed, 1 quarantined, 2 could not check)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest_tools.cli import main
from tests.support import EVENTS


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["dataset", "check", *args])
    return code, capsys.readouterr().out


def test_a_good_file_would_be_processed(capsys: pytest.CaptureFixture[str]) -> None:
    path = EVENTS / "files" / "orders-good.csv"
    code, out = check(capsys, str(path), "--dataset", "orders")
    rows = len(path.read_bytes().splitlines()) - 1
    assert (code, out) == (0, f"{path}: would be processed: {rows} rows for dataset 'orders'\n")


def test_bad_values_are_listed_with_their_lines(capsys: pytest.CaptureFixture[str]) -> None:
    path = EVENTS / "files" / "orders-bad-values.csv"
    code, out = check(capsys, str(path), "--dataset", "orders")
    lines = out.splitlines()
    assert code == 1 and lines[0] == f"{path}: would be quarantined: BAD_VALUE"
    assert len(lines) > 1 and all(line.startswith("  line ") for line in lines[1:])


def test_a_bad_header_says_what_the_contract_expects(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = EVENTS / "files" / "orders-bad-header.csv"
    code, out = check(capsys, str(path), "--dataset", "orders")
    assert code == 1 and out.splitlines()[0].endswith("BAD_HEADER")
    assert "line 1: header does not match the 'orders' contract" in out


def test_a_contract_not_packaged_yet_is_checked_from_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = tmp_path / "readings.json"
    contract.write_text(
        json.dumps(
            {
                "dataset": "readings",
                "columns": [
                    {"name": "sensor", "type": "string"},
                    {"name": "value", "type": "decimal"},
                ],
            }
        )
    )
    data = tmp_path / "readings.csv"
    data.write_text("sensor,value\ns-1,1.5\ns-2,high\n")
    code, out = check(capsys, str(data), "--contract", str(contract))
    assert (code, out.splitlines()[1]) == (
        1,
        "  line 3: column 'value': not a decimal number: 'high'",
    )


@pytest.mark.parametrize(
    ("contract", "says"),
    [
        ({"dataset": "x", "columns": [{"name": "a", "type": "float"}]}, "type"),
        ({"dataset": "x", "columns": [{"name": "a", "type": "string"}] * 2}, "repeats"),
        ({"dataset": "x", "columns": [], "format": "csv"}, "format"),
    ],
)
def test_a_bad_contract_cannot_check_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], contract: dict, says: str
) -> None:
    path = tmp_path / "contract.json"
    path.write_text(json.dumps(contract))
    code, out = check(capsys, str(EVENTS / "files" / "orders-good.csv"), "--contract", str(path))
    assert code == 2 and f"--contract {path}: invalid dataset contract" in out and says in out


def test_an_unknown_dataset_names_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = check(capsys, str(EVENTS / "files" / "orders-good.csv"), "--dataset", "nope")
    assert code == 2 and "known: customers, orders" in out
