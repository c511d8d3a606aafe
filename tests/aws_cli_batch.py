"""Many AWS CLI commands in one interpreter: ``.venv-sam/bin/python tests/aws_cli_batch.py``.

Reads a JSON list of argv lists on stdin (each what follows ``aws`` on a command line), runs
each with ``awscli.clidriver.create_clidriver().main(argv)`` - the code ``aws`` itself runs:
argument parsing, serialization, the request, the output formatter - and prints a JSON list of
``{"rc", "stdout", "stderr"}``, one per command, in order.

Why: every ``aws`` process spends ~0.6 s of CPU starting (importing botocore and awscli), and a
test that issues a hundred commands would spend a minute on start-ups alone. Here the
interpreter starts once; the commands and their output are still the CLI's (a new driver per
command, so no state carries over; tests/statemachine/test_test_state_cli.py checks that one
command's output equals the same ``aws`` command's run as a process). Run it with the AWS
CLI's own interpreter (.venv-sam), whose awscli is the one ``aws`` is.

What a new driver would otherwise compute again, identically, is computed once: the models
and endpoint data its session loads (one loader: the same files, parsed once), and two pure
functions botocore applies to each of the ~400 handlers every driver registers (the aliased
name of an event, whether a handler accepts ``**kwargs``). That takes a command from ~0.2 s of
CPU to ~0.04 s; nothing a command sends or prints depends on it.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
AWS_PYTHON = ROOT / ".venv-sam" / "bin" / "python"  # the interpreter of .venv-sam/bin/aws

_LOADER: list[Any] = []


def _share_pure_computations() -> None:
    """Event aliases and handler signature checks, shared by every driver of the batch."""
    from botocore import hooks

    shared_aliases: dict[str, str] = {}
    init = hooks.EventAliaser.__init__

    def aliaser_init(self: Any, event_emitter: Any, event_aliases: Any = None) -> None:
        init(self, event_emitter, event_aliases)
        if event_aliases is None:  # the default aliases: the same answers for every session
            self._alias_name_cache = shared_aliases

    accepts, checked = hooks.accepts_kwargs, {}

    def accepts_kwargs(func: Any) -> bool:
        key = func
        while isinstance(key, functools.partial) or hasattr(key, "__func__"):
            key = key.func if isinstance(key, functools.partial) else key.__func__
        if isinstance(key, types.FunctionType):  # a closure made anew: its code says it
            key = key.__code__
        elif not isinstance(key, type | types.BuiltinFunctionType):
            key = type(key)  # a callable object: its class's __call__ says it
        try:
            if key not in checked:
                checked[key] = accepts(func)
            return bool(checked[key])
        except TypeError:  # unhashable
            return bool(accepts(func))

    hooks.EventAliaser.__init__ = aliaser_init  # type: ignore[method-assign]
    hooks.accepts_kwargs = accepts_kwargs


def _driver() -> Any:
    """A new CLI driver (``aws``'s own: create_clidriver), its session reading the models
    through one loader for the whole batch: the same files, parsed once instead of once a
    command (JSON parsing and directory listings were two thirds of a command's CPU)."""
    from awscli.clidriver import create_clidriver

    driver = create_clidriver()
    if not _LOADER:
        _LOADER.append(driver.session.get_component("data_loader"))
    driver.session.register_component("data_loader", _LOADER[0])
    return driver


def run(argv: list[str]) -> dict[str, Any]:
    """One command, as ``aws <argv>`` runs it: its return code and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = _driver().main(argv)
        except SystemExit as exc:  # argparse's usage errors exit, as they do in `aws`
            rc = exc.code if isinstance(exc.code, int) else 1
    return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}


def run_batch(commands: list[list[str]], env: dict[str, str]) -> list[dict[str, Any]]:
    """For tests: ``commands`` through this module in one AWS CLI process (with ``env`` over
    this process's environment); each one's ``{"rc", "stdout", "stderr"}``, in order."""
    done = subprocess.run(
        [str(AWS_PYTHON), __file__],
        input=json.dumps(commands),
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return list(json.loads(done.stdout))


def main() -> None:
    # The collector as localcloud/gc_tuning.py sets it (not importable from .venv-sam):
    # every command makes thousands of short-lived containers; about 7 % less CPU.
    gc.set_threshold(50_000, 20, 100)
    commands = json.load(sys.stdin)
    _share_pure_computations()
    json.dump([run(list(argv)) for argv in commands], sys.stdout)


if __name__ == "__main__":
    main()
