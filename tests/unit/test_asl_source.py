"""statemachines/pipeline.asl.json is exactly what scripts/build_asl.py generates from
statemachines/pipeline.asl.yaml: the committed definition and its source cannot drift."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
SOURCE = ROOT / "statemachines" / "pipeline.asl.yaml"
TARGET = ROOT / "statemachines" / "pipeline.asl.json"


def _build_asl() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_asl", ROOT / "scripts" / "build_asl.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_asl = _build_asl()


def test_committed_json_is_what_the_yaml_generates() -> None:
    assert TARGET.read_text() == build_asl.render(SOURCE), (
        "statemachines/pipeline.asl.json is stale: edit pipeline.asl.yaml, then run "
        ".venv/bin/python scripts/build_asl.py"
    )


def test_generated_definition_is_plain_asl() -> None:
    asl = build_asl.definition(SOURCE)
    assert asl == json.loads(TARGET.read_text())
    assert set(asl) == {"Comment", "StartAt", "TimeoutSeconds", "States"}  # x-shared dropped
    assert all(next(iter(state)) == "Type" for state in asl["States"].values())


def test_the_source_writes_shared_blocks_once() -> None:
    text = SOURCE.read_text()
    assert text.count("States.Format('s3://") == 1  # the record key
    assert text.count("DynamoDB.ThrottlingException") == 1  # the DynamoDB retry


def test_check_mode_reports_a_stale_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "pipeline.asl.json"
    source = tmp_path / "pipeline.asl.yaml"
    source.write_text(SOURCE.read_text())
    stale.write_text(build_asl.render(source).replace("RecordRetryableFailure", "RecordRetry", 1))
    monkeypatch.setattr(build_asl, "ROOT", tmp_path)
    monkeypatch.setattr(build_asl, "SOURCE", source)
    monkeypatch.setattr(build_asl, "TARGET", stale)
    assert build_asl.main(["--check"]) == 1
    assert "run .venv/bin/python scripts/build_asl.py" in capsys.readouterr().err
    assert build_asl.main([]) == 0
    assert build_asl.main(["--check"]) == 0
    assert stale.read_text() == build_asl.render(source)
