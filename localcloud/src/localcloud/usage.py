"""Input errors of the local cloud's commands: one line on stderr, exit status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["UsageError", "existing_file", "read_json"]


class UsageError(ValueError):
    """Input that cannot be used (a missing or malformed file): one line, exit 2."""


def read_json(path: str, flag: str) -> Any:
    """A JSON file named by ``flag``; a missing or malformed file is a UsageError."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise UsageError(f"{flag} {path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{flag} {path} is not valid JSON: {exc.msg} at line {exc.lineno} column "
            f"{exc.colno}; fix the file"
        ) from None


def existing_file(path: str, flag: str) -> Path:
    if not Path(path).is_file():
        raise UsageError(f"{flag} {path}: no such file")
    return Path(path)
