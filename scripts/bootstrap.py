#!/usr/bin/env python3
"""Helpers for `make bootstrap`. Standard library only: runs before any virtualenv exists.

    python3 scripts/bootstrap.py sam-requirements OUT
    python3 scripts/bootstrap.py checkov-requirements OUT
    python3 scripts/bootstrap.py lambda-runtime-requirements OUT
    python3 scripts/bootstrap.py dev-pin NAME

The first three write the `sam` (aws-sam-cli), `checkov` or `lambda-runtime` (awslambdaric and
the runtime's boto3) optional-dependency group of pyproject.toml to OUT as a requirements file,
so that the version strings live in pyproject.toml only. Each gets its own virtualenv
(.venv-sam, .venv-checkov: their pins conflict with the app's dev pins; .venv-lambda: Python
3.13, the Lambda runtime's). `dev-pin uv` prints the `dev` group's
requirement for one package (e.g. ``uv==0.13.8``): the installer that pip installs first.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GROUPS = ("sam", "checkov", "lambda-runtime")  # "<group>-requirements" commands


def optional_group(name: str) -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        project = tomllib.load(fh)["project"]
    reqs = project.get("optional-dependencies", {}).get(name)
    if not reqs:
        raise SystemExit(f"pyproject.toml has no [project.optional-dependencies].{name}")
    return [str(r) for r in reqs]


def dev_pin(name: str) -> str:
    """The ``dev`` group's requirement whose package is ``name`` (``name==version``)."""
    for req in optional_group("dev"):
        package = req.split(";")[0].split("[")[0]
        for op in ("==", ">=", "<=", "~=", "!=", "<", ">"):
            package = package.split(op)[0]
        if package.strip().lower() == name.lower():
            return req
    raise SystemExit(f"pyproject.toml's [project.optional-dependencies].dev does not list {name}")


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "dev-pin":
        print(dev_pin(argv[2]))
        return 0
    commands = {f"{group}-requirements": group for group in GROUPS}
    if len(argv) != 3 or argv[1] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[2])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(optional_group(commands[argv[1]])) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
