"""localcloud: serve any SAM template's event graph on 127.0.0.1, without Docker.

localcloud up [--template template.yaml] [--port 4566] [--outputs FILE] [--faults FILE]
              [--parameter-overrides 'Key=Value ...'] [--stack-name NAME] [--iam on|off]
              [--mock-config MockConfigFile.json]   (default: $SFN_MOCK_CONFIG)
              [--allow-origin URL ...] [--allow-any-origin] [--allow-host NAME ...]
              [--host ADDRESS --listen-beyond-loopback]
localcloud invoke [FUNCTION] [--event FILE|-] [--template template.yaml] [--env-vars FILE]
                  [--parameter-overrides 'Key=Value ...']   (sam local invoke without Docker)
localcloud patches [--json]
localcloud iam-report DIR [--template template.yaml]

Exit status: 0 done; 1 problems found (patch targets missing, unused IAM grants); 2 bad input
(one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localcloud import STACK_NAME, TEMPLATE
from localcloud.usage import UsageError, existing_file, read_json

if TYPE_CHECKING:  # loaded when a cloud starts: moto comes with it (~2.5 s of CPU)
    from localcloud.cloud import LocalCloud
    from localcloud.console.extensions import ConsoleExtensions

__all__ = ["UsageError", "build_parser", "iam_report", "main", "patches", "serve_until_stopped"]


def read_mock_config(flag_value: str | None) -> tuple[str | None, dict[str, Any] | None]:
    """The Step Functions Local MockConfigFile of ``--mock-config`` (else ``SFN_MOCK_CONFIG``),
    read and checked before the deploy: a missing or malformed file is a UsageError."""
    from localcloud.features.mock_config import (
        MOCK_CONFIG_VARIABLE,
        MockConfigError,
        load_mock_config,
    )

    path, flag = flag_value, "--mock-config"
    if not path:
        path, flag = os.environ.get(MOCK_CONFIG_VARIABLE), MOCK_CONFIG_VARIABLE
    if not path:
        return None, None
    if not Path(path).is_file():
        raise UsageError(f"{flag} {path}: no such file")
    try:
        return path, load_mock_config(path)
    except MockConfigError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def _mock_config_hint(path: str | None, config: dict[str, Any] | None) -> list[str]:
    if config is None:
        return []
    cases = sum(len(m.get("TestCases", {})) for m in config["StateMachines"].values())
    return [
        f"  Step Functions mock config: {path} ({len(config['StateMachines'])} state "
        f"machine(s), {cases} test case(s)); start executions with --state-machine-arn "
        "<arn>#<TestCase>"
    ]


def _bucket_hint(cloud: LocalCloud, url: str) -> list[str]:
    """One ``aws s3 cp`` line per bucket of the stack: the way in for an S3-triggered graph."""
    resources = cloud.stack.resources if cloud.stack else {}
    types = cloud.stack.types if cloud.stack else {}
    return [
        f"  aws --endpoint-url {url} s3 cp FILE s3://{resources[lid]}/  ({lid})"
        for lid, kind in sorted(types.items())
        if kind == "AWS::S3::Bucket" and lid in resources
    ]


def serve_until_stopped(
    args: argparse.Namespace,
    banner: Callable[[dict[str, Any], str], list[str]] | None = None,
    console: ConsoleExtensions | None = None,
) -> int:
    """Deploy ``args.template``, serve it, print the outputs (stdout) and a banner (stderr),
    and run until SIGINT/SIGTERM. ``banner(described, url)`` adds lines of the caller's;
    ``console`` the caller's console hooks (console/extensions.py)."""
    # Input is checked before the (slow) deploy: a typo fails at once, in one line.
    template = existing_file(args.template, "--template")
    faults = read_json(args.faults, "--faults") if args.faults else None
    if faults is not None and not isinstance(faults, dict):
        raise UsageError(f"--faults {args.faults}: expected a JSON object, not {faults!r:.40}")
    from localcloud import gc_tuning

    gc_tuning.tune()  # before moto loads: a quarter of the start's CPU otherwise
    from localcloud.cloud import LocalCloud, parameter_overrides
    from localcloud.environments import default_runtime_python

    try:
        overrides = parameter_overrides(getattr(args, "parameter_overrides", None) or "")
    except ValueError as exc:
        raise UsageError(f"--parameter-overrides: {exc}") from None
    mock_path, mock_config = read_mock_config(getattr(args, "mock_config", None))
    front_lines = front_policy(args)
    cloud = LocalCloud(
        template,
        stack_name=args.stack_name,
        parameters=overrides,
        time_scale=1.0 if args.real_time else 0.0,
        iam=None if args.iam is None else args.iam == "on",
        mock_config=mock_config,
        console=console,
    )
    print(f"deploying {args.template} into the local cloud ...", file=sys.stderr)
    cloud.start()
    gc_tuning.freeze()
    stop = threading.Event()
    try:
        if faults is not None:
            try:
                cloud.load_faults(faults)
            except (ValueError, KeyError, TypeError) as exc:
                raise UsageError(f"--faults {args.faults}: {exc}") from exc
        server = cloud.serve(args.host, args.port)
        described = cloud.describe()
        text = json.dumps(described, indent=2)
        print(text, flush=True)
        if args.outputs:
            Path(args.outputs).parent.mkdir(parents=True, exist_ok=True)
            Path(args.outputs).write_text(text + "\n")
        lines = [
            f"local cloud listening on {server.url} (admin API: {server.url}/_localcloud/); "
            "Ctrl-C stops it.",
            f"  console: {server.url}/_localcloud/console/ (state machines, executions, history)",
            f"  IAM: {'enforced for the stack' if cloud.iam else 'off'}"
            " (the stack's functions, workflows, rules and schedules call with their roles;"
            " clients of this endpoint are the administrator)",
            "  functions: in environment processes of their own (the Lambda Python runtime of "
            f"{default_runtime_python()})",
            *(banner(described, server.url) if banner else _bucket_hint(cloud, server.url)),
            *_mock_config_hint(mock_path, mock_config),
            *front_lines,
        ]
        print("\n".join(lines), file=sys.stderr, flush=True)
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        stop.wait()
        print("stopping the local cloud ...", file=sys.stderr)
    finally:
        cloud.stop()
    return 0


def front_policy(args: argparse.Namespace) -> list[str]:
    """The HTTP front's policy of the ``up`` flags and the environment, set as the default of
    the servers started next; the banner's lines about it (who is answered, the warnings).
    A malformed origin or host, or ``--host`` beyond loopback without
    ``--listen-beyond-loopback``, is a UsageError."""
    from localcloud import server

    try:
        policy = server.FrontPolicy.build(
            getattr(args, "allow_origin", None) or (),
            getattr(args, "allow_host", None) or (),
            any_origin=bool(getattr(args, "allow_any_origin", False)),
            beyond_loopback=bool(getattr(args, "listen_beyond_loopback", False)),
        )
        policy.check_bind(args.host)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    server.set_default_policy(policy)
    return [policy.summary(), *policy.warnings(args.host)]


def iam_report(args: argparse.Namespace) -> int:
    """What each statement of the template allowed in the logged runs; exit 1 when an Allow
    statement was never needed and the template does not justify it."""
    from localcloud.iam import report
    from localcloud.stack import load_template

    template = load_template(existing_file(args.template, "--template"))
    if not Path(args.log).is_dir():
        raise UsageError(f"{args.log}: no such directory (the LOCALCLOUD_IAM_LOG of the runs)")
    merged = report.merge(Path(args.log), Path(args.template))
    if not merged:
        print(f"no runs of {args.template} logged in {args.log}", file=sys.stderr)
        return 2
    print(report.render(merged, template))
    unused = report.unused(merged, template)
    if unused:
        print(f"\n{len(unused)} unused grant(s) without a reason: {', '.join(unused)}")
    return 1 if unused else 0


def patches(args: argparse.Namespace) -> int:
    """The local cloud's patches of moto/botocore: kind, targets, reason, moto range, test."""
    from localcloud import registry
    from localcloud.patching import PatchSet, moto_version
    from localcloud.runtime import Runtime

    patch_set = PatchSet(registry.ALL)
    runtime = Runtime()
    try:
        rows = patch_set.inventory(runtime)
        _, problems = patch_set.targets(runtime)
    finally:
        runtime.close()
    if args.json:
        print(json.dumps({"moto": moto_version(), "patches": rows, "problems": problems}, indent=2))
        return 1 if problems else 0
    counts = Counter(r["kind"] for r in rows)
    targets = sum(len(r["targets"]) for r in rows)
    print(
        f"moto {moto_version()}: {len(rows)} patches ({counts['fix']} fixes, "
        f"{counts['feature']} features, {counts['speedup']} speedups), {targets} attributes"
    )
    for row in rows:
        print(f"\n[{row['kind']}] {row['name']}  ({row['module']}; moto {row['moto']})")
        print(f"  why:  {row['reason']}")
        print(f"  test: {row['test']}")
        if row["upstream"]:
            print(f"  moto: {row['upstream']}")
        for target in row["targets"]:
            print(f"  - {target}")
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


def add_commands(commands: Any, *, up: Callable[[argparse.Namespace], int]) -> None:
    """The ``up``, ``iam-report``, ``patches`` and ``invoke`` sub-commands (also under
    an application's own command line)."""
    serve = commands.add_parser("up", help="deploy a SAM template and serve it on 127.0.0.1")
    serve.add_argument("--template", default=str(TEMPLATE))
    serve.add_argument("--stack-name", default=STACK_NAME, help="the stack's name (AWS::StackName)")
    serve.add_argument(
        "--parameter-overrides", help="as sam deploy takes them: 'Key=Value Key2=Value2'"
    )
    serve.add_argument("--port", type=int, default=4566)
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1); one beyond loopback needs "
        "--listen-beyond-loopback",
    )
    serve.add_argument(
        "--listen-beyond-loopback",
        action="store_true",
        help="allow a --host other than loopback (0.0.0.0: the network): anyone who reaches "
        "the port drives the cloud, unauthenticated",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        metavar="URL",
        help="also answer browser pages of this origin, http(s)://host[:port] (repeatable; "
        "LOCALCLOUD_ALLOWED_ORIGINS adds more); by default only the server's own origin and "
        "localhost origins",
    )
    serve.add_argument(
        "--allow-any-origin",
        action="store_true",
        help="switch the origin check off: any web page you open can call the cloud "
        "(LOCALCLOUD_ALLOW_ANY_ORIGIN=1)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="also accept requests with Host NAME (repeatable; LOCALCLOUD_ALLOWED_HOSTS adds "
        "more); '*.localhost' admits S3 virtual-hosted buckets; by default 127.0.0.1, "
        "localhost and [::1] only",
    )
    serve.add_argument("--outputs", help="also write the stack outputs (JSON) to this file")
    serve.add_argument("--faults", help="faults file (JSON) to arm at start")
    serve.add_argument(
        "--mock-config",
        help="Step Functions Local MockConfigFile: StartExecution of '<arn>#<TestCase>' runs "
        "that test case (default: SFN_MOCK_CONFIG)",
    )
    serve.add_argument(
        "--real-time",
        action="store_true",
        help="really sleep for retries/Wait states (default: virtual clock)",
    )
    serve.add_argument(
        "--iam",
        choices=["on", "off"],
        help="authorize every call as AWS would (default: LOCALCLOUD_IAM, else on)",
    )
    serve.set_defaults(func=up)
    report = commands.add_parser(
        "iam-report", help="what each IAM statement allowed in runs logged with LOCALCLOUD_IAM_LOG"
    )
    report.add_argument("log", help="the LOCALCLOUD_IAM_LOG directory of the runs")
    report.add_argument("--template", default=str(TEMPLATE))
    report.set_defaults(func=iam_report)
    listed = commands.add_parser(
        "patches", help="list the local cloud's patches of moto (kind, reason, test)"
    )
    listed.add_argument("--json", action="store_true", help="print the inventory as JSON")
    listed.set_defaults(func=patches)
    from localcloud import invoke

    invoke.add_command(commands)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="localcloud", description=__doc__.split("\n\n")[0])
    add_commands(parser.add_subparsers(dest="command", required=True), up=serve_until_stopped)
    return parser


def main(argv: list[str] | None = None) -> int:
    args: Any = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if not _refused(exc):
            raise
        print(f"localcloud {args.command}: {exc}", file=sys.stderr)
        return 2


def _refused(exc: Exception) -> bool:
    """A usage error, no Lambda runtime, or a template the deploy refused (only raised once
    the stack module, and moto with it, is loaded)."""
    stack = sys.modules.get("localcloud.stack.base")
    spec = sys.modules.get("localcloud.environments.spec")
    return (
        isinstance(exc, UsageError)
        or bool(stack and isinstance(exc, stack.StackDeployError))
        or bool(spec and isinstance(exc, spec.RuntimeMissing))
    )


if __name__ == "__main__":
    raise SystemExit(main())
