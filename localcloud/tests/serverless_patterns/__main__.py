"""The corpus on the local cloud, one line per pattern, and the share that runs:

    cd localcloud/tests && ../../.venv/bin/python -m serverless_patterns

Each pattern is deployed and, when it has steps, its README's steps are run (the same steps
as tests/test_serverless_patterns.py). A pattern *runs* when both end as its README says;
``upstream`` ones (that AWS refuses too) are not in the denominator. Exit status 1 when a
deploy ended in anything but the local cloud's StackDeployError (a traceback)."""

from __future__ import annotations

import logging
import sys
import time
import traceback

from localcloud.stack.base import StackDeployError
from serverless_patterns import Pattern, patterns, steps


def run(pattern: Pattern, step: object) -> tuple[str, str]:
    try:
        with pattern.cloud() as cloud:
            if step is None:
                return "deploys", "no steps written"
            try:
                step(cloud, pattern)  # type: ignore[operator]
            except Exception as exc:
                return "fails", f"steps: {type(exc).__name__}: {str(exc)[:120]}"
            return "runs", ""
    except StackDeployError as exc:
        return "refused", str(exc).splitlines()[0][:160]
    except Exception:
        return "traceback", traceback.format_exc().strip().splitlines()[-1][:160]


def main() -> int:
    logging.disable(logging.WARNING)
    table, written, pending = patterns(), steps(), steps("PENDING")
    outcomes: dict[str, str] = {}
    for name, pattern in table.items():
        started = time.monotonic()
        step = written.get(name) or (pending[name][0] if name in pending else None)  # type: ignore[index]
        outcome, detail = run(pattern, step)
        if name in pending:  # never counted as running, whatever its steps did
            passed = " (its steps pass: move them to STEPS?)" if outcome == "runs" else ""
            outcome, detail = "pending", f"{pending[name][1]}{passed}"  # type: ignore[index]
        outcomes[name] = outcome
        expected = pattern.status if pattern.status != "deploys" else ""
        print(f"{name:52s} {outcome:9s} {time.monotonic() - started:5.2f}s  "
              f"{expected + ': ' if expected else ''}{detail or pattern.reason}")  # fmt: skip
    scope = [n for n, p in table.items() if p.status != "upstream"]
    aside = [n for n in scope if table[n].status == "aside"]
    runs = [n for n in scope if outcomes[n] == "runs"]
    deploys = [n for n in scope if outcomes[n] in ("runs", "deploys", "fails", "pending")]
    crashes = [n for n, o in outcomes.items() if o == "traceback"]
    print(f"\nin scope: {len(scope)} of {len(table)} (upstream: {len(table) - len(scope)}); "
          f"aside (separate function environments): {len(aside)}")  # fmt: skip
    counted = len(scope) - len(aside)
    share = 100 * len(runs) / counted
    print(f"deploy: {len(deploys)}/{len(scope)}; run their README steps: {len(runs)}/{counted} "
          f"= {share:.1f} % (aside excluded); tracebacks: {len(crashes)}")  # fmt: skip
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
