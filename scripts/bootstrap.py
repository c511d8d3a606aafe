#!/usr/bin/env python3
"""Helpers for `make bootstrap`. Standard library only: runs before any virtualenv exists.

    python3 scripts/bootstrap.py sam-requirements OUT

writes the `sam` optional-dependency group of pyproject.toml (the aws-sam-cli pin) to OUT as a
pip requirements file, so that the version string lives in pyproject.toml only.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def optional_group(name: str) -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        project = tomllib.load(fh)["project"]
    reqs = project.get("optional-dependencies", {}).get(name)
    if not reqs:
        raise SystemExit(f"pyproject.toml has no [project.optional-dependencies].{name}")
    return [str(r) for r in reqs]


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] != "sam-requirements":
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[2])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(optional_group("sam")) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
