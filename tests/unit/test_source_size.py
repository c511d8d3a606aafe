"""No source file of the repository is over 600 lines: a longer one is split by
responsibility (the doctor: one module per area of checks; the console: lib.js and the views
of console.js). Not counted: template.yaml (one stack, and CloudFormation has no includes),
generated files (statemachines/*.asl.json), vendored ones (console/static/vendor/) and published
material kept as it was published (localcloud/tests/published/)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 600
SOURCE_SUFFIXES = {".py", ".js", ".css", ".html", ".sh", ".toml", ".md", ".cfg", ".ini"}


def tracked_sources() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False, timeout=60
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the tracked files are unknown")
    paths = [Path(p) for p in listed.stdout.decode().split("\0") if p]
    return [
        p
        for p in paths
        if (p.suffix in SOURCE_SUFFIXES or p.name == "Makefile")
        and not {"vendor", "published"} & set(p.parts)
    ]


def test_no_source_file_is_over_600_lines() -> None:
    sources = tracked_sources()
    assert len(sources) > 100  # the listing works
    long = {
        str(p): n
        for p in sources
        if (n := len((ROOT / p).read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
