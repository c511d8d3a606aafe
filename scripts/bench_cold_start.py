"""Cold start of each Lambda handler against the floor of bare boto3 + one client (issue 12).

    python scripts/bench_cold_start.py [--repeat 9] [--tracing enabled|disabled|both]
                                       [--bytecode none|cached|both] [--python PATH]
                                       [--runtime-python PYTHON3.13]
                                       [--built DIR]
                                       [--outside-lambda] [--baseline DIR] [--json]
    python scripts/bench_cold_start.py --importtime process [--tracing disabled]
    python scripts/bench_cold_start.py --instructions [--tracing enabled] [--floor-ms 245]

Each figure is the median of ``--repeat`` fresh interpreters (one subprocess per measurement;
the floor and the handlers take turns, so load on the machine hits both alike). Inside each
one, after the interpreter has started, the clock covers:

* a handler: ``import ingest_pipeline.handlers.<name>`` and what its first invocation creates
  before its first AWS call: its request model parsing a sample event, its settings validated
  from the environment, its boto3 clients, and for ProcessObject and the large-object
  workflow's SplitObject, ProcessChunk and AssembleOutput the packaged contract of the sample
  object's dataset (``cold_start_probes.py``). ReconcileFunction: the clients every run uses
  (DynamoDB, S3); Step Functions and SNS clients are made when a run first starts an
  execution or escalates;
* the floor: ``import boto3; boto3.client("s3", region_name="us-east-1")``.

Bytecode: Lambda's ``/var/task`` is read-only, so a module shipped without its ``.pyc`` is
compiled from source at every cold start. ``sam build`` ships the package compiled by the
runtime's Python (``functions/Makefile``); the runtime's boto3 and the layer's libraries come
with theirs. ``--bytecode cached`` (the default) measures a copy of ``functions/`` compiled
by the measured interpreter (as built); ``none`` a copy without bytecode (what a plain copy
of the sources would cost). PYTHONDONTWRITEBYTECODE=1 keeps each copy as prepared, so the
result does not depend on whether this checkout has ``__pycache__`` directories. ``--built
DIR`` measures a ``sam build`` output as it is (``.aws-sam/build/ProcessFunction``; its
``.pyc`` files are Python 3.13's, so measure it with ``--python`` a 3.13 interpreter). Its
msgspec is the arm64 wheel's: on another machine the build is measured with the interpreter's
own msgspec (the same pin, from ``.venv-runtime``) in its place, and the script says so.

``--python PATH`` measures with another interpreter: the functions run on Python 3.13
(template.yaml's Runtime), so a 3.13 venv with the runtime's packages gives the closer figure.
``--runtime-python python3.13`` makes that venv (``.venv-runtime``, once: the pins of
pyproject.toml's ``dependencies``) and measures with it; ``make bench-cold-start`` does so
with the build's Python 3.13 and ``--built``. The default is this interpreter (the project's
.venv).

``--baseline DIR`` measures another checkout's ``functions/`` in turn with this one (before
and after a change, under the same load). Wall time is the figure; CPU time
(``time.process_time``) is printed beside it.

The environment is a deployed function's (template.yaml): LAMBDA_TASK_ROOT and the other
variables the Lambda runtime sets, the Globals' POWERTOOLS_* and RECORD_RETENTION_DAYS, each
function's own variables, no AWS config files. ``enabled`` is tracing as deployed
(``Tracing: Active``: POWERTOOLS_TRACE_DISABLED unset), the main figure; ``disabled`` sets
POWERTOOLS_TRACE_DISABLED=1 (the local cloud's setting). ``--outside-lambda`` leaves
LAMBDA_TASK_ROOT unset (a laptop or the test suite: powertools then disables tracing on its
own, and the X-Ray SDK, if imported, builds a centralized-sampling client).

``--importtime NAME`` runs ``python -X importtime`` on one handler's measurement instead and
prints the modules that cost the most (self and cumulative); with ``--built``, on the build
(``make build``; the sources have no bytecode of the runtime's Python, so their self times
include compiling them). A garbage collection lands in the self time of whatever module is
being imported when it runs; ``--gc-off`` leaves them out.

``--instructions`` counts the instructions each probe executes under valgrind's callgrind
(once each, ``PYTHONHASHSEED=0``, the same probes and environment) and prints them over the
floor's, with an estimate in milliseconds: ``--floor-ms`` (the floor's time on a quiet
machine, 245 ms here) x the share. Unlike the times, the machine's load does not move them
(a run of the floor and the eight handlers takes about 4 minutes). The probes are in
``cold_start_probes.py``.

Targets: issue 12, at most +100 ms over the floor for every handler, with tracing enabled;
issue 40, at most +40 ms (``--instructions``' estimate).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from cold_start_probes import FLOOR, HANDLERS, REGION, probe_code

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ROOT / "functions"
TARGET_MS = 100.0  # issue 12, by the medians
INSTRUCTIONS_TARGET_MS = 40.0  # issue 40, by --instructions' estimate
QUIET_FLOOR_MS = 245.0  # the floor on a quiet machine (docs/performance.md)
PYTHON = [sys.executable]  # the interpreter measured (--python)

# What the Lambda runtime sets in every execution environment (the values do not matter here,
# only whether powertools and the X-Ray SDK see a Lambda environment).
LAMBDA_ENV = {
    "LAMBDA_TASK_ROOT": str(FUNCTIONS),
    "LAMBDA_RUNTIME_DIR": "/var/runtime",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
    "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
    "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/bench",
    "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
}
# The runtime's credentials, region and no config files: a client is built as on AWS.
AWS_ENV = {
    "AWS_REGION": REGION,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_ACCESS_KEY_ID": "ASIABENCHMARKEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_SESSION_TOKEN": "bench",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
# template.yaml Globals.Function.Environment.Variables.
GLOBALS_ENV = {
    "POWERTOOLS_SERVICE_NAME": "s3-ingest-pipeline-dev",
    "POWERTOOLS_METRICS_NAMESPACE": "S3IngestPipeline",
    "POWERTOOLS_LOG_LEVEL": "INFO",
    "RECORD_RETENTION_DAYS": "30",
}


def environment(
    name: str, *, tracing: bool, in_lambda: bool, functions: Path = FUNCTIONS
) -> dict[str, str]:
    """A deployed function's environment (the floor gets the same one); ``functions`` is the
    CodeUri whose ``ingest_pipeline`` is imported."""
    drop = ("AWS_", "POWERTOOLS_", "LAMBDA_", "_X_AMZN_", "_HANDLER", "PYDANTIC_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(functions), env.get("PYTHONPATH")]))
    env.update(AWS_ENV)
    env.update(GLOBALS_ENV)
    if in_lambda:
        env.update(LAMBDA_ENV)
        env["LAMBDA_TASK_ROOT"] = str(functions)
        env["AWS_LAMBDA_FUNCTION_NAME"] = f"bench-{name}"
        env["_HANDLER"] = f"ingest_pipeline.handlers.{name}.handler"
    if not tracing:
        env["POWERTOOLS_TRACE_DISABLED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the copy measured stays as prepared (see copy_code)
    if name != FLOOR:
        env.update(HANDLERS[name][0])
    return env


def runtime_venv(python: str, where: Path = ROOT / ".venv-runtime") -> Path:
    """A venv of ``python`` (the runtime's version) with the runtime's packages, as pinned in
    pyproject.toml's ``dependencies`` (boto3, botocore, Powertools with the X-Ray SDK): made
    once, made again when the pins or the interpreter change. Returns its interpreter."""
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True, check=True
    ).stdout.strip()
    stamp = "\n".join([version, *pins])
    interpreter = where / "bin" / "python"
    marker = where / "runtime-pins.txt"
    if marker.exists() and marker.read_text() == stamp and interpreter.exists():
        return interpreter
    shutil.rmtree(where, ignore_errors=True)
    print(f"making {where} (Python {version.split()[0]}: {', '.join(pins)})", file=sys.stderr)
    subprocess.run([python, "-m", "venv", str(where)], check=True)
    subprocess.run(
        [str(interpreter), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pins],
        check=True,
    )
    marker.write_text(stamp)
    return interpreter


def runnable_here(built: Path, into: Path) -> Path:
    """``built`` as it is, or, when its msgspec extension is for another machine (the arm64
    wheel functions/Makefile installs), a copy without it: the measured interpreter's msgspec
    (the same pin, pyproject.toml's dependencies) is imported instead."""
    probe = "import importlib.machinery as m, json; print(json.dumps(m.EXTENSION_SUFFIXES))"
    suffixes = json.loads(
        subprocess.run([PYTHON[0], "-c", probe], capture_output=True, text=True, check=True).stdout
    )
    extensions = list((built / "msgspec").glob("_core*.so"))
    if not extensions or any(e.name in {f"_core{s}" for s in suffixes} for e in extensions):
        return built
    print(
        f"{built}: msgspec is built for another machine ({extensions[0].name}); measuring "
        "with this interpreter's msgspec in its place",
        file=sys.stderr,
    )
    target = into / "built" / built.name
    shutil.copytree(built, target, ignore=shutil.ignore_patterns("msgspec", "msgspec-*.dist-info"))
    return target


def copy_code(functions: Path, into: Path, *, bytecode: bool) -> Path:
    """A copy of ``functions`` without bytecode (as ``sam build`` ships it), or compiled."""
    target = into / ("cached" if bytecode else "sources") / functions.name
    shutil.copytree(functions, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if bytecode:  # by the interpreter measured: a .pyc is only read by its own version
        subprocess.run([PYTHON[0], "-m", "compileall", "-q", str(target)], check=True)
    return target


def measure_once(
    name: str, *, tracing: bool, in_lambda: bool, functions: Path = FUNCTIONS
) -> dict[str, float]:
    done = subprocess.run(
        [PYTHON[0], "-c", probe_code(name)],
        env=environment(name, tracing=tracing, in_lambda=in_lambda, functions=functions),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{name} ({functions}): the probe failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(
    names: list[str],
    *,
    repeat: int,
    tracing: bool,
    in_lambda: bool,
    codes: dict[str, Path],
    bytecode: str = "none",
) -> list[dict[str, Any]]:
    """Rows of medians; ``codes``: label -> functions/ directory, measured in turn."""
    keys = [(FLOOR, "")] + [(name, code) for name in names for code in codes]
    samples: dict[tuple[str, str], list[dict[str, float]]] = {key: [] for key in keys}

    def measure(key: tuple[str, str]) -> dict[str, float]:
        name, code = key
        where = codes.get(code, FUNCTIONS)
        return measure_once(name, tracing=tracing, in_lambda=in_lambda, functions=where)

    for key in keys:  # warm-up: fill the page cache
        measure(key)
    for _ in range(repeat):
        for key, taken in samples.items():
            taken.append(measure(key))

    def median(key: tuple[str, str], figure: str) -> float:
        return statistics.median(s[figure] for s in samples[key])

    def paired(key: tuple[str, str]) -> float:
        """Median over rounds of (handler - the floor measured in the same round): steadier
        than the difference of medians when the machine's speed drifts during the run."""
        rounds = zip(samples[key], samples[(FLOOR, "")], strict=True)
        return statistics.median(h["total_ms"] - f["total_ms"] for h, f in rounds)

    def least(key: tuple[str, str]) -> float:
        return min(s["total_ms"] for s in samples[key])

    floor, floor_cpu = median((FLOOR, ""), "total_ms"), median((FLOOR, ""), "cpu_ms")
    rows = []
    for name, code in keys[1:]:
        total, cpu = median((name, code), "total_ms"), median((name, code), "cpu_ms")
        rows.append(
            {
                "handler": name,
                "code": code,
                # Outside Lambda powertools turns tracing off whatever the variable says.
                "tracing": ("enabled" if tracing else "disabled") if in_lambda else "off:local",
                "bytecode": bytecode,
                "in_lambda": in_lambda,
                "import_ms": round(total, 1),
                "floor_ms": round(floor, 1),
                "difference_ms": round(total - floor, 1),
                "paired_difference_ms": round(paired((name, code)), 1),
                # The difference as a share of the floor: steadier across runs than
                # milliseconds, as the machine's speed (the floor) changes.
                "difference_pct_of_floor": round((total / floor - 1) * 100, 1),
                "min_difference_ms": round(least((name, code)) - least((FLOOR, "")), 1),
                "import_only_ms": round(median((name, code), "import_ms"), 1),
                "cpu_ms": round(cpu, 1),
                "floor_cpu_ms": round(floor_cpu, 1),
                "cpu_difference_ms": round(cpu - floor_cpu, 1),
                "repeat": repeat,
            }
        )
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'handler':<15} {'tracing':<9} {'bytecode':<8} {'code':<8} {'import ms':>9} "
        f"{'floor ms':>8} {'difference':>10} {'%floor':>7} | {'paired':>7} {'min':>7} | "
        f"{'import only':>11} | {'cpu diff':>8}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        flag = "" if row["difference_ms"] <= TARGET_MS else "  > +100 ms"
        print(
            f"{row['handler']:<15} {row['tracing']:<9} {row['bytecode']:<8} {row['code']:<8} "
            f"{row['import_ms']:>9.1f} "
            f"{row['floor_ms']:>8.1f} {row['difference_ms']:>+10.1f} "
            f"{row['difference_pct_of_floor']:>+6.1f}% | "
            f"{row['paired_difference_ms']:>+7.1f} {row['min_difference_ms']:>+7.1f} | "
            f"{row['import_only_ms']:>11.1f} | {row['cpu_difference_ms']:>+8.1f}{flag}"
        )
    print(
        f"\nmedians of {rows[0]['repeat']} fresh interpreters each; import ms: import + first "
        "invocation's setup (wall); floor: import boto3 + one S3 client;\ndifference: the "
        "medians' difference (the target's figure), %floor: the same over the floor; paired: "
        "median of each round's difference; "
        "min: fastest minus fastest floor; cpu diff: the same in process time"
    )


def instructions(
    names: list[str],
    *,
    tracing: bool,
    in_lambda: bool,
    codes: dict[str, Path],
    scratch: Path,
    floor_ms: float,
) -> list[dict[str, Any]]:
    """Instructions each probe executes, counted by valgrind's callgrind (``PYTHONHASHSEED=0``,
    the probes and environment of the timed runs), against the floor's: the machine's load
    does not change them. ``estimate_ms`` puts the difference in milliseconds at ``floor_ms``
    (the floor's time on a quiet machine) x the handler's instructions over the floor's."""
    valgrind = shutil.which("valgrind") or "/usr/bin/valgrind"

    def count(name: str, functions: Path) -> int:
        env = environment(name, tracing=tracing, in_lambda=in_lambda, functions=functions)
        env["PYTHONHASHSEED"] = "0"
        out = scratch / f"callgrind.{name}.out"
        command = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}"]
        done = subprocess.run(
            [*command, PYTHON[0], "-c", probe_code(name)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        found = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode != 0 or found is None:
            raise SystemExit(f"{name} ({functions}): callgrind failed:\n{done.stderr}")
        return int(found.group(1))

    floor = count(FLOOR, FUNCTIONS)
    rows = []
    for name in names:
        for code, functions in codes.items():
            over = count(name, functions) - floor
            rows.append(
                {
                    "handler": name,
                    "code": code,
                    "tracing": ("enabled" if tracing else "disabled") if in_lambda else "off:local",
                    "floor_instructions": floor,
                    "over_floor_instructions": over,
                    "over_floor_pct": round(over / floor * 100, 1),
                    "estimate_ms": round(floor_ms * over / floor, 1),
                    "floor_ms": floor_ms,
                }
            )
            print(f"  {name} ({code}): {over / 1e6:+.1f} M", file=sys.stderr, flush=True)
    return rows


def print_instructions(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'handler':<15} {'tracing':<9} {'code':<8} {'over floor':>12} {'%floor':>7} "
        f"{'estimate':>9}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        flag = "" if row["estimate_ms"] <= INSTRUCTIONS_TARGET_MS else "  > +40 ms"
        print(
            f"{row['handler']:<15} {row['tracing']:<9} {row['code']:<8} "
            f"{row['over_floor_instructions'] / 1e6:>+10.1f} M {row['over_floor_pct']:>+6.1f}% "
            f"{row['estimate_ms']:>+6.1f} ms{flag}"
        )
    floor = rows[0]
    print(
        f"\ninstructions executed (callgrind, PYTHONHASHSEED=0) minus the floor's "
        f"({floor['floor_instructions'] / 1e6:,.1f} M: import boto3 + one S3 client);\n"
        f"estimate: the floor's {floor['floor_ms']:g} ms on a quiet machine (--floor-ms) x "
        "the handler's instructions over the floor's"
    )


def importtime(
    name: str,
    *,
    tracing: bool,
    in_lambda: bool,
    top: int,
    functions: Path = FUNCTIONS,
    gc_off: bool = False,
) -> None:
    """``python -X importtime`` of one measurement: the modules that cost the most. A garbage
    collection is counted in the self time of the module being imported when it runs (the
    same modules every run: a pass over the ~70,000 objects boto3 leaves costs 5-13 ms);
    ``gc_off`` shows the modules' own costs."""
    code = ("import gc\ngc.disable()\n" if gc_off else "") + probe_code(name)
    done = subprocess.run(
        [PYTHON[0], "-X", "importtime", "-c", code],
        env=environment(name, tracing=tracing, in_lambda=in_lambda, functions=functions),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    entries: list[tuple[int, int, str]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, module = line.removeprefix("import time:").split("|")
        entries.append((int(self_us), int(cumulative_us), module.rstrip()))
    print(f"{name}: {json.loads(done.stdout.strip().splitlines()[-1])}")
    for title, key in (("self", 0), ("cumulative", 1)):
        print(f"\n-- top {top} by {title} time (ms) --")
        for entry in sorted(entries, key=lambda e: e[key], reverse=True)[:top]:
            print(f"{entry[0] / 1000:8.1f} {entry[1] / 1000:8.1f}  {entry[2]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="fresh interpreters per figure")
    parser.add_argument("--tracing", choices=("enabled", "disabled", "both"), default="both")
    parser.add_argument(
        "--bytecode",
        choices=("none", "cached", "both"),
        default="cached",
        help="our modules from .pyc, as sam build ships them (cached), or compiled at import",
    )
    parser.add_argument(
        "--outside-lambda", action="store_true", help="leave LAMBDA_TASK_ROOT (and co.) unset"
    )
    parser.add_argument("--handler", action="append", choices=sorted(HANDLERS), default=None)
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="another checkout's functions/ directory, measured in turn with this one "
        "(e.g. git archive HEAD | tar -x -C /tmp/base; --baseline /tmp/base/functions)",
    )
    parser.add_argument(
        "--python", type=Path, default=None, help="the interpreter to measure with (see above)"
    )
    parser.add_argument(
        "--runtime-python",
        default=None,
        help="a Python of the runtime's version (3.13): measure with a venv of it holding the "
        "pinned boto3 and Powertools (.venv-runtime, made once)",
    )
    parser.add_argument(
        "--built", type=Path, default=None, help="a sam build output, measured as it is"
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--importtime", choices=[*sorted(HANDLERS), FLOOR], default=None)
    parser.add_argument("--top", type=int, default=25, help="rows of --importtime")
    parser.add_argument(
        "--gc-off", action="store_true", help="--importtime without garbage collections"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count each probe's instructions with valgrind's callgrind, against the floor's",
    )
    parser.add_argument(
        "--floor-ms",
        type=float,
        default=QUIET_FLOOR_MS,
        help="--instructions: the floor's time on a quiet machine, for the ms estimate",
    )
    args = parser.parse_args()
    if args.python is not None:
        PYTHON[0] = str(args.python)
    elif args.runtime_python:
        PYTHON[0] = str(runtime_venv(args.runtime_python))
    in_lambda = not args.outside_lambda
    modes = {"enabled": [True], "disabled": [False], "both": [True, False]}[args.tracing]
    if not in_lambda:
        modes = modes[:1]  # the same figure twice: tracing is off either way
    if args.importtime:
        with tempfile.TemporaryDirectory(prefix="bench-cold-start-") as scratch:
            importtime(
                args.importtime,
                tracing=modes[0],
                in_lambda=in_lambda,
                top=args.top,
                functions=FUNCTIONS
                if args.built is None
                else runnable_here(args.built.resolve(), Path(scratch)),
                gc_off=args.gc_off,
            )
        return
    names = args.handler or list(HANDLERS)
    sources = {"current": FUNCTIONS if args.built is None else args.built.resolve()}
    if args.baseline is not None:
        sources["baseline"] = args.baseline.resolve()
    kinds = {"none": ["none"], "cached": ["cached"], "both": ["none", "cached"]}[args.bytecode]
    if args.built is not None:
        kinds = ["built"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-cold-start-") as scratch:
        for kind in kinds:
            codes = {
                label: runnable_here(path, Path(scratch) / label)
                if kind == "built"
                else copy_code(path, Path(scratch) / label, bytecode=kind == "cached")
                for label, path in sources.items()
            }
            for tracing in modes:
                if args.instructions:
                    rows += instructions(
                        names,
                        tracing=tracing,
                        in_lambda=in_lambda,
                        codes=codes,
                        scratch=Path(scratch),
                        floor_ms=args.floor_ms,
                    )
                    continue
                rows += run(
                    names,
                    repeat=args.repeat,
                    tracing=tracing,
                    in_lambda=in_lambda,
                    codes=codes,
                    bytecode=kind,
                )
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        (print_instructions if args.instructions else print_table)(rows)
        version = subprocess.run(
            [PYTHON[0], "-c", "import platform; print(platform.python_version())"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        print(f"interpreter: {PYTHON[0]} (Python {version})")


if __name__ == "__main__":
    main()
