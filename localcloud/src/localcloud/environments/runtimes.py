"""The Python a function's environments run: the one its ``Runtime`` (``python3.x``) names.

The Lambda runtime of ``.venv-lambda`` (``make bootstrap``: awslambdaric and the runtime's
boto3, on Python 3.13) runs a function whose Runtime is its Python's version. For another
``python3.x``, this machine's Python 3.x (``python3.x`` on PATH, pyenv's, ``uv python find``)
gets a runtime environment of its own with the same pins (``.venv-lambda/requirements.txt``),
made once and cached (``$LOCALCLOUD_CACHE`` or ``~/.cache/localcloud``, ``runtimes/``). With
no Python 3.x here, the nearest runtime there is runs it (the newer of two as near), and a
warning names both: a function of ``python3.14`` runs on Python 3.13.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

from localcloud.environments.host_build import cache_dir, made_once, python_tag, uv_command
from localcloud.environments.spec import default_runtime_python

__all__ = ["interpreter", "runtime_python"]

LOG = logging.getLogger(__name__)
_PYTHON = re.compile(r"python3\.(\d+)$")
_LOCK = threading.Lock()


def runtime_python(runtime: str | None, default: Path | None = None) -> tuple[Path, str | None]:
    """The Python of a function whose Runtime is ``runtime`` (``default``, .venv-lambda's, for
    anything but ``python3.x``), and the warning when it is not that version."""
    base = default or default_runtime_python()
    found = _PYTHON.match(runtime or "")
    if found is None or not base.exists():
        return base, None
    with _LOCK:  # (a runtime environment made by one thread at a time)
        return _choose(str(runtime), int(found.group(1)), base)


def _minor(python: Path) -> int | None:
    try:
        tag = python_tag(python)  # cp313
    except (OSError, subprocess.SubprocessError):
        return None
    return int(tag[3:]) if tag.startswith("cp3") else None


@functools.cache
def _choose(runtime: str, wanted: int, base: Path) -> tuple[Path, str | None]:
    have = {minor: python for python in [base, *_made()] if (minor := _minor(python))}
    if wanted in have:
        return have[wanted], None
    python = interpreter(wanted)
    if python is not None:
        try:
            return _make(python, base), None
        except (OSError, subprocess.SubprocessError) as e:
            LOG.warning("a %s runtime could not be made from %s: %s", runtime, python, e)
    nearest = min(have, key=lambda minor: (abs(minor - wanted), -minor))
    return have[nearest], (f"Runtime {runtime} runs on Python 3.{nearest} ({have[nearest]}): "
                           f"no Python 3.{wanted} on this machine")  # fmt: skip


def interpreter(minor: int) -> Path | None:
    """This machine's Python 3.``minor``: on PATH, pyenv's, or uv's."""
    name = f"python3.{minor}"
    candidates = [shutil.which(name)]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates += sorted(pyenv.glob(f"versions/3.{minor}.*/bin/{name}"), reverse=True)
    uv = uv_command()
    if uv:
        found = subprocess.run([uv, "python", "find", f"3.{minor}"], capture_output=True,  # noqa: S603
                               text=True, check=False)  # fmt: skip
        candidates.append(found.stdout.strip() if found.returncode == 0 else None)
    for candidate in filter(None, candidates):
        if _minor(Path(candidate)) == minor:
            return Path(candidate)
    return None


def _made() -> list[Path]:
    made = sorted(cache_dir("runtimes").glob("*/.complete"))
    return [done.parent / "bin" / "python" for done in made]


def _make(interpreter: Path, base: Path) -> Path:
    """A runtime environment of ``interpreter`` with ``base``'s runtime pins: its Python."""
    pins = base.parent.parent / "requirements.txt"  # .venv-lambda/requirements.txt
    text = pins.read_text(encoding="utf-8")
    key = hashlib.sha256(f"{interpreter.resolve()}\n{text}".encode()).hexdigest()[:12]
    target = cache_dir("runtimes") / f"python3.{_minor(interpreter)}-{key}"
    if not (target / ".complete").exists():
        LOG.warning("making the Lambda runtime (%s) of %s in %s", " ".join(text.split()),
                    interpreter, target)  # fmt: skip
    partial = target.with_name(f"{target.name}.{os.getpid()}")
    uv, python = uv_command(), str(partial / "bin" / "python")
    if uv:
        steps = [[uv, "venv", "-q", "--python", str(interpreter), str(partial)],
                 [uv, "pip", "install", "-q", "--compile-bytecode", "--python", python,
                  "-r", str(pins)]]  # fmt: skip
    else:
        steps = [
            [str(interpreter), "-m", "venv", str(partial)],
            [python, "-m", "pip", "install", "-q", "-r", str(pins)],
        ]
    return made_once(target, steps, partial, text) / "bin" / "python"
