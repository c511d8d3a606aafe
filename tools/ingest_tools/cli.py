"""ingestctl: the project's operator CLI.

ingestctl local up [--port 4566] [--outputs FILE] [--faults FILE] [--real-time]
ingestctl local demo
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

__all__ = ["build_parser", "main"]


def _local_up(args: argparse.Namespace) -> int:
    from ingest_tools.localcloud.cloud import LocalCloud

    cloud = LocalCloud(Path(args.template), time_scale=1.0 if args.real_time else 0.0)
    print(f"deploying {args.template} into the local cloud ...", file=sys.stderr)
    cloud.start()
    stop = threading.Event()
    try:
        if args.faults:
            cloud.load_faults(Path(args.faults))
        server = cloud.serve(args.host, args.port)
        described = cloud.describe()
        text = json.dumps(described, indent=2)
        print(text, flush=True)
        if args.outputs:
            Path(args.outputs).parent.mkdir(parents=True, exist_ok=True)
            Path(args.outputs).write_text(text + "\n")
        print(
            f"local cloud listening on {server.url} (admin API: {server.url}/_localcloud/); "
            "Ctrl-C stops it.\n"
            f"  aws --endpoint-url {server.url} s3 cp FILE "
            f"s3://{described['outputs']['IngestBucketName']}/incoming/orders/FILE",
            file=sys.stderr,
            flush=True,
        )
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        stop.wait()
        print("stopping the local cloud ...", file=sys.stderr)
    finally:
        cloud.stop()
    return 0


def _local_demo(args: argparse.Namespace) -> int:
    from ingest_tools.demo import run_demo

    return run_demo(Path(args.template), as_json=args.json)


def build_parser() -> argparse.ArgumentParser:
    from ingest_tools.localcloud.cloud import TEMPLATE

    parser = argparse.ArgumentParser(prog="ingestctl", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    local = commands.add_parser("local", help="the embedded local cloud (moto, no Docker)")
    local_cmds = local.add_subparsers(dest="local_command", required=True)
    up = local_cmds.add_parser("up", help="deploy template.yaml and serve it on 127.0.0.1")
    up.add_argument("--port", type=int, default=4566)
    up.add_argument("--host", default="127.0.0.1")
    up.add_argument("--outputs", help="also write the stack outputs (JSON) to this file")
    up.add_argument("--faults", help="faults file (JSON) to arm at start")
    up.add_argument(
        "--real-time",
        action="store_true",
        help="really sleep for retries/Wait states (default: virtual clock)",
    )
    up.add_argument("--template", default=str(TEMPLATE))
    up.set_defaults(func=_local_up)
    demo = local_cmds.add_parser("demo", help="run every workflow path and print a table")
    demo.add_argument("--template", default=str(TEMPLATE))
    demo.add_argument("--json", action="store_true", help="print the rows as JSON")
    demo.set_defaults(func=_local_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args: Any = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
