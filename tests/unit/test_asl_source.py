"""statemachines/<workflow>.asl.json is exactly what scripts/build_asl.py generates from
statemachines/<workflow>.asl.yaml (with shared.asl.yaml): the committed definitions and their
sources cannot drift."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
STATEMACHINES = ROOT / "statemachines"
WORKFLOWS = ("pipeline", "large-object")


def _build_asl() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_asl", ROOT / "scripts" / "build_asl.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_asl = _build_asl()


@pytest.mark.parametrize("name", WORKFLOWS)
def test_committed_json_is_what_the_yaml_generates(name: str) -> None:
    target = STATEMACHINES / f"{name}.asl.json"
    assert target.read_text() == build_asl.render(STATEMACHINES / f"{name}.asl.yaml"), (
        f"statemachines/{name}.asl.json is stale: edit its YAML source, then run "
        ".venv/bin/python scripts/build_asl.py"
    )


@pytest.mark.parametrize("name", WORKFLOWS)
def test_generated_definition_is_plain_asl(name: str) -> None:
    asl = build_asl.definition(STATEMACHINES / f"{name}.asl.yaml")
    assert asl == json.loads((STATEMACHINES / f"{name}.asl.json").read_text())
    assert set(asl) == {"Comment", "StartAt", "TimeoutSeconds", "States"}  # x-* dropped
    assert all(next(iter(state)) == "Type" for state in asl["States"].values())


def test_the_workflows_share_their_common_states_exactly() -> None:
    pipeline, large = (
        json.loads((STATEMACHINES / f"{name}.asl.json").read_text())["States"] for name in WORKFLOWS
    )
    common = set(pipeline) & set(large)
    assert {"RecordSuccess", "ClassifyError", "QuarantineObject", "FailClaimLost"} <= common
    assert all(pipeline[name] == large[name] for name in common)


def test_the_sources_write_shared_blocks_once() -> None:
    text = "".join(
        (STATEMACHINES / name).read_text()
        for name in ("shared.asl.yaml", *(f"{w}.asl.yaml" for w in WORKFLOWS))
    )
    assert text.count("States.Format('s3://") == 1  # the record key
    assert text.count("DynamoDB.ThrottlingException") == 1  # the DynamoDB retry
    assert text.count("- ValueTypeError") == 2  # the taxonomy's names, and its PERMANENT catch
    assert text.count("RecordSuccess:") == 1


def test_a_state_no_path_reaches_is_an_error(tmp_path: Path) -> None:
    source = tmp_path / "orphan.asl.yaml"
    source.write_text("StartAt: A\nStates:\n  A: {Type: Succeed}\n  B: {Type: Pass, End: true}\n")
    with pytest.raises(ValueError, match="no path reaches B"):
        build_asl.definition(source, shared=None)


def test_check_mode_reports_a_stale_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("shared.asl.yaml", *(f"{w}.asl.yaml" for w in WORKFLOWS)):
        (tmp_path / name).write_text((STATEMACHINES / name).read_text())
    stale = tmp_path / "pipeline.asl.json"
    stale.write_text(
        build_asl.render(tmp_path / "pipeline.asl.yaml", tmp_path / "shared.asl.yaml").replace(
            "RecordRetryableFailure", "RecordRetry", 1
        )
    )
    monkeypatch.setattr(build_asl, "ROOT", tmp_path)
    monkeypatch.setattr(build_asl, "STATEMACHINES", tmp_path)
    monkeypatch.setattr(build_asl, "SHARED", tmp_path / "shared.asl.yaml")
    assert build_asl.main(["--check"]) == 1
    assert "run .venv/bin/python scripts/build_asl.py" in capsys.readouterr().err
    assert build_asl.main([]) == 0
    assert build_asl.main(["--check"]) == 0
    assert stale.read_text() == build_asl.render(
        tmp_path / "pipeline.asl.yaml", tmp_path / "shared.asl.yaml"
    )
