"""What `sam build` ships: the package and its bytecode, compiled by the runtime's Python.

Lambda's /var/task is read-only: a module without its .pyc is compiled at every cold start
(about 30 ms for ProcessFunction on Python 3.13). functions/Makefile (BuildMethod: makefile)
copies the package and compiles it; these tests keep the template, the Makefile and the
runtime in step, and run the Makefile's recipe the way sam build does.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from localcloud.stack import load_template

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ROOT / "functions"
TEMPLATE = load_template(ROOT / "template.yaml")
MAKEFILE = (FUNCTIONS / "Makefile").read_text()
THIS_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


def functions() -> dict[str, dict[str, object]]:
    return {
        name: resource
        for name, resource in TEMPLATE["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }


def make(target: str, artifacts: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """``make build-<id>`` as sam build runs it: in the CodeUri, with ARTIFACTS_DIR set
    (``variables`` on the command line, overriding the Makefile's)."""
    env = {**os.environ, "ARTIFACTS_DIR": str(artifacts)}
    overrides = [f"{name}={value}" for name, value in variables.items()]
    return subprocess.run(
        ["make", "--no-print-directory", "-f", str(FUNCTIONS / "Makefile"), target, *overrides],
        cwd=FUNCTIONS,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_function_is_built_by_the_makefile_from_the_one_package() -> None:
    assert TEMPLATE["Globals"]["Function"]["CodeUri"] == "functions/"
    for name, resource in functions().items():
        assert resource.get("Metadata", {}).get("BuildMethod") == "makefile", name
        assert "CodeUri" not in resource["Properties"], name
    assert len(functions()) >= 8


def test_the_makefile_compiles_with_the_runtimes_python() -> None:
    runtime = TEMPLATE["Globals"]["Function"]["Runtime"]
    version = runtime.removeprefix("python")
    assert re.search(rf"^RUNTIME_VERSION := {re.escape(version)}$", MAKEFILE, re.M)
    assert re.search(rf"^RUNTIME_PYTHON \?= python{re.escape(version)}$", MAKEFILE, re.M)
    for name, resource in functions().items():
        assert resource["Properties"].get("Runtime", runtime) == runtime, name


@pytest.mark.parametrize("msgspec", ["pip install", "MSGSPEC_WHEEL"])
def test_the_build_ships_the_package_with_bytecode_that_python_uses(
    tmp_path: Path, msgspec: str
) -> None:
    # This interpreter stands in for the runtime's (its own version, so its .pyc is read).
    variables = {
        "RUNTIME_PYTHON": sys.executable,
        "RUNTIME_VERSION": THIS_VERSION,
        "PIP_PLATFORM": f"manylinux2014_{platform.machine()}",  # msgspec's wheel for this machine
        # .venv has no pip (make bootstrap installs with uv): the Python that made it has one
        "PIP_PYTHON": sys._base_executable,
    }
    if msgspec == "MSGSPEC_WHEEL":  # fetched once, as the project's `make build` does
        wheels = tmp_path / "wheels"
        fetched = make("wheel", wheels, WHEEL_DIR=str(wheels), **variables)
        assert fetched.returncode == 0, fetched.stderr
        variables["MSGSPEC_WHEEL"] = fetched.stdout.strip()
    tmp_path = tmp_path / "artifacts"
    done = make("build-ProcessFunction", tmp_path, **variables)
    assert done.returncode == 0, done.stderr
    package = tmp_path / "ingest_pipeline"
    sources = {p.relative_to(package) for p in package.rglob("*.py")}
    assert sources == {
        p.relative_to(FUNCTIONS / "ingest_pipeline")
        for p in (FUNCTIONS / "ingest_pipeline").rglob("*.py")
    }
    assert (package / "contracts" / "orders.json").is_file()
    shipped = sorted(p.name for p in tmp_path.iterdir())  # no Makefile
    assert shipped == ["ingest_pipeline", "msgspec", "msgspec-0.22.0.dist-info"]
    tag = sys.implementation.cache_tag
    missing = [
        s for s in sources if not (package / s.parent / "__pycache__").glob(f"{s.stem}.{tag}.pyc")
    ]
    assert missing == []
    # Imported from the build output, no module of the package is compiled from source.
    probe = f"""
import importlib._bootstrap_external as external, json, sys
compiled = []
original = external.SourceLoader.source_to_code
def source_to_code(self, data, path, *args, **kwargs):
    compiled.append(path)
    return original(self, data, path, *args, **kwargs)
external.SourceLoader.source_to_code = source_to_code
sys.path.insert(0, {str(tmp_path)!r})
import ingest_pipeline.handlers.process
assert ingest_pipeline.__file__.startswith({str(tmp_path)!r})
print(json.dumps([p for p in compiled if "ingest_pipeline" in p]))
"""
    ran = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "POWERTOOLS_TRACE_DISABLED": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip().splitlines()[-1] == "[]"


def test_the_wrong_python_is_refused_with_the_way_out(tmp_path: Path) -> None:
    wrong = "3.12" if THIS_VERSION != "3.12" else "3.11"
    done = make(
        "build-ProcessFunction",
        tmp_path,
        RUNTIME_PYTHON=sys.executable,
        RUNTIME_VERSION=wrong,
    )
    assert done.returncode != 0
    assert f"is Python {THIS_VERSION}, the runtime is {wrong}" in done.stderr
    assert f"RUNTIME_PYTHON=python{wrong}" in done.stderr
    assert not (tmp_path / "ingest_pipeline").exists()


def test_a_missing_python_is_named_with_the_ways_out(tmp_path: Path) -> None:
    done = make("build-ProcessFunction", tmp_path, RUNTIME_PYTHON=str(tmp_path / "python3.13"))
    assert done.returncode != 0
    assert "python3.13 not found: install Python 3.13" in done.stderr
    assert "sam build --use-container" in done.stderr and "BYTECODE=0" in done.stderr
    assert not (tmp_path / "ingest_pipeline").exists()


def test_without_the_runtimes_python_the_sources_alone_can_be_shipped(tmp_path: Path) -> None:
    """BYTECODE=0: what `make build` falls back to on a machine without Python 3.13 (make
    test from a fresh machine needs only python3)."""
    done = make(
        "build-ProcessFunction",
        tmp_path,
        RUNTIME_PYTHON=str(tmp_path / "python3.13"),
        BYTECODE="0",
    )
    assert done.returncode == 0, done.stderr
    package = tmp_path / "ingest_pipeline"
    assert (package / "handlers" / "process.py").is_file()
    assert list(package.rglob("*.pyc")) == []


def test_make_build_finds_the_runtimes_python_or_falls_back_to_sources() -> None:
    """The project's `make build` (dry run): pyenv's or PATH's python3.13, else BYTECODE=0."""
    without = subprocess.run(
        ["make", "-n", "build"],
        cwd=ROOT,
        env={**os.environ, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if shutil.which("python3.13", path="/usr/bin:/bin"):  # this system's own 3.13
        assert "BYTECODE=1" in without.stdout, without.stdout + without.stderr
        return
    assert "BYTECODE=0" in without.stdout, without.stdout + without.stderr
    assert "no Python 3.13" in without.stdout
