#!/usr/bin/env python3
"""The cost of the local cloud's function environments (localcloud.environments).

    .venv/bin/python scripts/bench_lambda_environments.py [--runs N]

Prints, for a new environment (process start to the runtime's first /next, the Init
Duration of a handler that imports nothing), the wall time and the CPU the environment's
process used, forked from the fork server; the fork server's own
start (once per local cloud); and a warm invocation's round trip (Runtime API, awslambdaric,
a handler that returns its event). Needs .venv-lambda (`make bootstrap`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from localcloud.environments import Environment, Spec, default_runtime_python
from localcloud.environments.launcher import fork_server


def cpu_ms(pid: int) -> float:
    """CPU time of a process's threads so far (schedstat: nanoseconds on a CPU)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        total += int((task / "schedstat").read_text().split()[0])
    return total / 1e6


def new_environments(spec: Spec, runs: int) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(runs):
        start = time.perf_counter()
        environment = Environment(spec)
        environment.wait_ready()
        walls.append((time.perf_counter() - start) * 1000)
        cpus.append(cpu_ms(environment.pid))
        environment.stop()
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    python = default_runtime_python()
    if not python.exists():
        raise SystemExit(f"{python} is missing: run make bootstrap")
    with tempfile.TemporaryDirectory() as code:
        Path(code, "app.py").write_text("def handler(event, context):\n    return event\n")
        base = Spec(function_name="Bench", handler="app.handler", code_dir=Path(code))
        start = time.perf_counter()
        server = fork_server(Path(base.runtime_python))
        started = (time.perf_counter() - start) * 1000
        print(f"fork server start (once): {started:.1f} ms wall")
        server_pid = server._proc.pid
        before = cpu_ms(server_pid)
        walls, cpus = new_environments(base, args.runs)
        server_cpu = (cpu_ms(server_pid) - before) / args.runs
        print(
            f"new environment, forked (fork server): median {statistics.median(walls):.1f} ms wall "
            f"(min {min(walls):.1f}), {statistics.median(cpus):.1f} ms CPU in the "
            f"environment + {server_cpu:.1f} ms in the fork server  ({args.runs} runs)"
        )
        environment = Environment(base)
        environment.invoke(b"{}")
        times = []
        for i in range(args.runs * 10):
            start = time.perf_counter()
            environment.invoke(b'{"n": %d}' % i)
            times.append((time.perf_counter() - start) * 1000)
        environment.stop()
        print(
            f"warm invocation: median {statistics.median(times):.2f} ms wall "
            f"(p90 {statistics.quantiles(times, n=10)[-1]:.2f})  ({len(times)} runs)"
        )


if __name__ == "__main__":
    main()
