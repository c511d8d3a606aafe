"""Show that every fix and feature of the local cloud is needed: run its test without it.

For each patch of kind fix or feature in the registry, runs the patch's test twice: with
every patch (it must pass) and with ``LOCALCLOUD_WITHOUT=<patch>`` (it must fail). Speedups
are checked the other way round: their test must pass without them (same answers).
Prints one line per patch and exits 1 if any patch is not shown to be needed.

    .venv/bin/python scripts/check_patches.py [name ...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from localcloud import registry
from localcloud.patching import Kind

ROOT = Path(__file__).resolve().parents[1]


def run(test: str, without: str = "") -> bool:
    env = {**os.environ, "LOCALCLOUD_SPEEDUPS": "1", registry.WITHOUT_VARIABLE: without}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider", test],
        cwd=ROOT,
        env=env,
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def main(names: list[str]) -> int:
    failures = 0
    for patch in registry.ALL:
        if names and patch.name not in names:
            continue
        started = time.perf_counter()
        with_it = run(patch.test)
        without_it = run(patch.test, without=patch.name)
        needed = not without_it if patch.kind is not Kind.SPEEDUP else without_it
        ok = with_it and needed
        failures += not ok
        expect = "passes without it" if patch.kind is Kind.SPEEDUP else "fails without it"
        print(
            f"{'OK  ' if ok else 'FAIL'} {patch.kind:<8} {patch.name:<36} with: "
            f"{'pass' if with_it else 'FAIL'}, without: {'pass' if without_it else 'fail'} "
            f"(expected: {expect}) {time.perf_counter() - started:5.1f}s",
            flush=True,
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
