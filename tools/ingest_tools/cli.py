"""ingestctl: the project's operator CLI.

ingestctl local up [--port 4566] [--outputs FILE] [--faults FILE] [--real-time]
                   [--allow-origin URL] [--allow-host NAME] (localcloud up's flags)
ingestctl local demo [--template T] [--scenario NAME]... [--json]
ingestctl local patches [--json]
ingestctl inspect QUEUE [--json]
ingestctl redrive QUEUE [--dry-run] [--force] [--error-code C] [--rule R] [--older-than 1h]
                        [--newer-than 7d] [--max N] [--rate R] [--concurrency N] [--json]
ingestctl reprocess (--key K | --prefix P | --error-class C) [--version V] [--dry-run] [--json]
ingestctl doctor [--since 24h] [--strict] [--json]

The recovery commands and doctor find the stack's resources from --stack NAME (CloudFormation
outputs) or --outputs FILE (what `ingestctl local up --outputs` writes); --endpoint-url points
every client at another endpoint (the local cloud: http://127.0.0.1:4566).

Exit status: 0 done; 1 done, but the command found problems (messages left in a queue,
a doctor check failed, unused IAM grants); 2 could not run (bad arguments or input file, no
credentials, AWS unreachable, refused or throttling): one line on stderr says what went wrong
and what to do (``cli_errors.explain``); 70 an unexpected error, a bug in ingestctl (the
traceback is printed); 130 interrupted; 141 stdout closed early (`| head`).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import traceback
from datetime import timedelta
from typing import Any

from ingest_tools.cli_errors import CANNOT_CONNECT, CONNECT_HINT, CommandError, explain
from localcloud.usage import existing_file, read_json  # a UsageError: exit 2, one line

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_BUG",
    "EXIT_CANNOT_RUN",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PROBLEMS",
    "CommandError",
    "build_parser",
    "explain",
    "main",
]

EXIT_OK = 0
EXIT_PROBLEMS = 1  # the command ran and found problems (its own help says which)
EXIT_CANNOT_RUN = 2  # bad input, no credentials, AWS unreachable / refusing: one line
EXIT_BUG = 70  # an unexpected exception: a bug in ingestctl (EX_SOFTWARE), with traceback
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # stdout was closed (128 + SIGPIPE, as a shell reports it)


def _local_up(args: argparse.Namespace) -> int:
    from localcloud import gc_tuning

    gc_tuning.tune()  # before the local cloud loads (localcloud/gc_tuning.py)
    from ingest_tools.local_pipeline import console_extensions
    from localcloud.cli import serve_until_stopped

    def banner(described: dict[str, Any], url: str) -> list[str]:
        bucket = described["outputs"].get("IngestBucketName")
        if bucket is None:  # another template: localcloud's own hint
            return [f"  outputs: {', '.join(sorted(described['outputs'])) or 'none'}"]
        return [f"  aws --endpoint-url {url} s3 cp FILE s3://{bucket}/incoming/orders/FILE"]

    return serve_until_stopped(args, banner, console=console_extensions(args.outputs))


def _local_demo(args: argparse.Namespace) -> int:
    from localcloud import gc_tuning

    gc_tuning.tune()
    from ingest_tools.demo import run_demo

    return run_demo(
        existing_file(args.template, "--template"),
        as_json=args.json,
        workflow_type=args.workflow_type,
        iam_report=args.iam_report,
        scenarios=args.scenario or (),
    )


# --- recovery commands -----------------------------------------------------------------
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> timedelta:
    """``90s``, ``15m``, ``2h``, ``7d``."""
    match = _DURATION.match(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 90s, 15m, 2h or 7d")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])


def _aws(args: argparse.Namespace) -> Any:
    """A boto3 session for the recovery commands (and the environment the DAL clients read)."""
    import boto3
    import botocore.session

    outputs_file = getattr(args, "outputs", None)
    endpoint = args.endpoint_url
    region = args.region
    if outputs_file:
        described = read_json(outputs_file, "--outputs")
        endpoint = endpoint or described.get("endpoint")
        region = region or described.get("region")
    if endpoint:
        os.environ["AWS_ENDPOINT_URL"] = endpoint  # every client, the DAL's included
    if region:
        os.environ["AWS_DEFAULT_REGION"] = region
    core = botocore.session.Session()
    loader = _loader(core.get_config_variable("data_path"))  # AWS_DATA_PATH, as botocore
    core.register_component("data_loader", loader)
    session = boto3.session.Session(botocore_session=core, region_name=region)
    # boto3 appends its data folder to the (shared) loader's paths per session: keep one
    loader.search_paths[:] = list(dict.fromkeys(loader.search_paths))
    return session


@functools.cache
def _loader(data_path: str | None) -> Any:
    """One botocore loader (per AWS_DATA_PATH) for every session the CLI makes: each new
    session would otherwise parse the service models from disk again (in-process calls, e.g.
    the tests, make many)."""
    import botocore.loaders

    return botocore.loaders.create_loader(data_path)


def _client(session: Any, service: str) -> Any:
    from botocore.config import Config

    return session.client(
        service, config=Config(retries={"mode": "standard", "total_max_attempts": 5})
    )


def _stack_outputs(args: argparse.Namespace, session: Any) -> dict[str, str]:
    if getattr(args, "outputs", None):
        described = read_json(args.outputs, "--outputs")
        if not isinstance(described, dict):
            raise CommandError(f"--outputs {args.outputs}: expected a JSON object")
        return dict(described.get("outputs", described))
    if getattr(args, "stack", None):
        stack = _client(session, "cloudformation").describe_stacks(StackName=args.stack)
        return {o["OutputKey"]: o["OutputValue"] for o in stack["Stacks"][0].get("Outputs", [])}
    return {}


def _queue_url(queue: str, outputs: dict[str, str], sqs: Any) -> str:
    """A queue URL from a URL, an ARN, a stack output name (EventDeliveryDLQ) or a name."""
    if queue.startswith(("https://", "http://")):
        return queue
    for key in (queue, f"{queue}Url"):
        if outputs.get(key, "").startswith(("https://", "http://")):
            return outputs[key]
    name = queue.rsplit(":", 1)[-1] if queue.startswith("arn:") else queue
    return str(sqs.get_queue_url(QueueName=name)["QueueUrl"])


def _need(outputs: dict[str, str], key: str, flag: str, value: str | None) -> str:
    if value:
        return value
    if outputs.get(key):
        return outputs[key]
    raise CommandError(f"{flag} is required (or --stack / --outputs with {key})")


def _ingest_bucket(args: argparse.Namespace) -> str:
    """The stack's ingest bucket, for the dataset registry commands."""
    return _need(_stack_outputs(args, _aws(args)), "IngestBucketName", "--bucket", args.bucket)


def _inspect(args: argparse.Namespace) -> int:
    from ingest_tools.recovery.inspect import inspect_queue, render

    session = _aws(args)
    sqs = _client(session, "sqs")
    url = _queue_url(args.queue, _stack_outputs(args, session), sqs)
    summary = inspect_queue(sqs, url, limit=args.limit)
    print(json.dumps(summary.to_dict(), indent=2) if args.json else render(summary))
    return 0


def _redrive(args: argparse.Namespace) -> int:
    from ingest_tools.recovery.redrive import RedriveOptions, Redriver

    session = _aws(args)
    outputs = _stack_outputs(args, session)
    sqs = _client(session, "sqs")
    options = RedriveOptions(
        queue_url=_queue_url(args.queue, outputs, sqs),
        redrive_source=args.source
        or outputs.get("RedriveEventSource")
        or "ingest-pipeline.redrive",
        event_bus=args.bus,
        dry_run=args.dry_run,
        force=args.force,
        error_codes=frozenset(args.error_code or ()),
        origins=frozenset(args.rule or ()),
        older_than=args.older_than,
        newer_than=args.newer_than,
        max_messages=args.max,
        rate=args.rate,
        concurrency=args.concurrency,
        visibility_timeout=args.visibility_timeout,
        ledger_table=None
        if args.no_ledger
        else (args.ledger_table or outputs.get("ObjectStateTableName")),
        progress=not args.json and sys.stderr.isatty() if args.progress is None else args.progress,
    )
    report = Redriver(
        options,
        sqs=sqs,
        events=_client(session, "events"),
        dynamodb=_client(session, "dynamodb"),
        stepfunctions=_client(session, "stepfunctions"),
        lambda_client=_client(session, "lambda"),
    ).run()
    summary = report.to_dict()
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        counts = summary["counts"]
        print(" ".join(f"{k}={v}" for k, v in counts.items() if v) or "the queue was empty")
        for item in summary["leftInQueue"]:
            line = f"  {item['status']:<15} {item['message_id']}  {item.get('object_key') or ''}"
            print(line.rstrip())
            if item.get("reason"):
                print(f"  {'':<15} {item['reason']}")
            if item.get("entry"):
                print(f"  {'':<15} -> {json.dumps(item['entry'], default=str)[:400]}")
        if summary.get("moveTask"):
            task = summary["moveTask"]
            print(
                f"  SQS move task {task.get('Status')}: "
                f"{task.get('ApproximateNumberOfMessagesMoved', 0)} moved back to "
                f"{', '.join(task.get('SourceQueues', []))}"
            )
    return int(report.exit_status)  # 1: a message was refused or left in the queue


def _reprocess(args: argparse.Namespace) -> int:
    from ingest_tools.recovery.reprocess import (
        reprocess,
        select_records,
        select_unrecorded,
        start_unrecorded,
    )

    session = _aws(args)
    outputs = _stack_outputs(args, session)
    table = _need(outputs, "ObjectStateTableName", "--table", args.table)
    bucket = _need(outputs, "IngestBucketName", "--bucket", args.bucket)
    machine = _need(
        outputs, "PipelineStateMachineArn", "--state-machine-arn", args.state_machine_arn
    )
    records = select_records(
        table,
        bucket,
        key=args.key,
        prefix=args.prefix,
        error_class=args.error_class,
        version_id=args.version,
    )
    unrecorded = select_unrecorded(
        table,
        bucket,
        key=args.key,
        prefix=args.prefix,
        version_id=args.version,
        lookback=args.lookback,
    )
    results = reprocess(records, state_machine_arn=machine, dry_run=args.dry_run)
    results += start_unrecorded(unrecorded, state_machine_arn=machine, dry_run=args.dry_run)
    rows = [
        {
            "key": r.decision.object.key,
            "versionId": r.decision.object.version_id,
            "action": r.decision.action,
            "outcome": r.outcome,
            "executionArn": r.execution_arn,
            "reason": r.decision.reason,
            **({"note": r.note} if r.note else {}),
        }
        for r in results
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print("no matching state records, and no unrecorded objects under incoming/")
    for row in [] if args.json else rows:
        print(f"{row['outcome']:<16} {row['key']} ({row['versionId']})")
        print(f"{'':<16} {row['action']}: {row['reason']}")
        if row["executionArn"]:
            print(f"{'':<16} {row['executionArn']}")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    """Exit 0 when no check FAILs (with --strict: nor WARNs), 1 otherwise, 2 when the stack
    cannot be read (no --stack/--outputs, an unreadable outputs file, no such stack)."""
    from datetime import UTC, datetime

    from botocore.exceptions import BotoCoreError, ClientError

    from ingest_tools.doctor import Clients, Context, run

    if not (args.stack or args.outputs):
        print("ingestctl doctor: --stack NAME or --outputs FILE is required", file=sys.stderr)
        return 2
    try:
        session = _aws(args)
        outputs = _stack_outputs(args, session)
        stack = args.stack or read_json(args.outputs, "--outputs").get("stack")
    except (OSError, ValueError, ClientError, BotoCoreError) as exc:
        print(f"ingestctl doctor: cannot read the stack: {exc}", file=sys.stderr)
        return 2
    connection = [f"--stack {args.stack}" if args.stack else f"--outputs {args.outputs}"]
    connection += [f"--endpoint-url {args.endpoint_url}"] if args.endpoint_url else []
    connection += [f"--region {args.region}"] if args.region else []
    context = Context(
        clients=Clients.create(lambda service: _client(session, service)),
        outputs=outputs,
        stack=stack,
        now=datetime.now(UTC),
        since=args.since,
        connection=" ".join(connection),
    )
    report = run(context)
    reached = [c for c in report.checks if not c.detail.startswith("not checked")]
    if reached and all(c.data.get("error") in CANNOT_CONNECT for c in reached):
        # Not one check reached AWS: the stack was not checked at all, which is no verdict.
        first = next(c for c in reached if c.detail.startswith("could not check"))
        raise CommandError(
            f"cannot read the stack: {first.detail.removeprefix('could not check: ')}; "
            f"{CONNECT_HINT}, and the credentials"
        )
    if args.json:
        print(json.dumps(report.to_dict(strict=args.strict), indent=2, default=str))
    else:
        print(report.render(strict=args.strict))
    return report.exit_code(strict=args.strict)


def _aws_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--stack", help="CloudFormation stack whose outputs name the resources")
    where.add_argument("--outputs", help="stack outputs JSON (ingestctl local up --outputs)")
    parser.add_argument("--endpoint-url", help="send every AWS call here (e.g. the local cloud)")
    parser.add_argument("--region")


def build_parser() -> argparse.ArgumentParser:
    from ingest_tools import STACK_NAME, TEMPLATE
    from ingest_tools.dataset import add_commands as dataset_commands
    from ingest_tools.dataset_registry import add_registry_commands
    from localcloud.cli import add_commands

    parser = argparse.ArgumentParser(prog="ingestctl", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    local = commands.add_parser("local", help="the embedded local cloud (moto, no Docker)")
    local_cmds = local.add_subparsers(dest="local_command", required=True)
    add_commands(local_cmds, up=_local_up)
    local_cmds.choices["up"].set_defaults(stack_name=STACK_NAME)
    demo = local_cmds.add_parser("demo", help="run every workflow path and print a table")
    demo.add_argument("--template", default=str(TEMPLATE))
    demo.add_argument("--json", action="store_true", help="print the rows as JSON")
    demo.add_argument(
        "--workflow-type",
        choices=["STANDARD", "EXPRESS"],
        default=None,
        help="deploy the per-object workflow as this type (the template's WorkflowType)",
    )
    demo.add_argument(
        "--iam-report", action="store_true", help="then print what each IAM statement allowed"
    )
    demo.add_argument(
        "--scenario",
        action="append",
        metavar="NAME",
        help="run only this scenario (the table's Scenario column; repeatable)",
    )
    demo.set_defaults(func=_local_demo)
    _recovery_commands(commands)
    add_registry_commands(dataset_commands(commands), _aws_arguments, _ingest_bucket)
    return parser


def _recovery_commands(commands: Any) -> None:
    inspect = commands.add_parser(
        "inspect", help="summarise a dead-letter queue without consuming it"
    )
    inspect.add_argument("queue", help="queue URL, ARN, name or stack output (EventDeliveryDLQ)")
    inspect.add_argument("--limit", type=int, default=1000, help="messages to look at (1000)")
    inspect.add_argument("--json", action="store_true")
    _aws_arguments(inspect)
    inspect.set_defaults(func=_inspect)

    redrive = commands.add_parser(
        "redrive", help="move a dead-letter queue's messages back where they failed to go"
    )
    redrive.add_argument("queue", help="queue URL, ARN, name or stack output (EventDeliveryDLQ)")
    redrive.add_argument("--dry-run", action="store_true", help="show what would be sent")
    redrive.add_argument(
        "--force",
        action="store_true",
        help="also send records whose error will repeat (NO_PERMISSIONS, NO_RESOURCE, ...)",
    )
    redrive.add_argument("--error-code", action="append", help="only this ERROR_CODE (repeat)")
    redrive.add_argument("--rule", action="append", help="only this rule/schedule ARN or name")
    redrive.add_argument("--older-than", type=duration, help="only dead-lettered before, e.g. 1h")
    redrive.add_argument("--newer-than", type=duration, help="only dead-lettered within, e.g. 7d")
    redrive.add_argument("--max", type=int, help="at most this many messages")
    redrive.add_argument("--rate", type=float, help="messages per second (all workers)")
    redrive.add_argument("--concurrency", type=int, default=1, help="workers (1)")
    redrive.add_argument("--visibility-timeout", type=int, default=300)
    redrive.add_argument("--source", help="source for reserved aws.* events (stack default)")
    redrive.add_argument("--bus", help="event bus (default: the bus of the rule in RULE_ARN)")
    redrive.add_argument("--ledger-table", help="sent-ledger table (default: the state table)")
    redrive.add_argument("--no-ledger", action="store_true", help="do not keep a sent ledger")
    redrive.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help="progress line on stderr (default: when stderr is a terminal)",
    )  # fmt: skip
    redrive.add_argument("--json", action="store_true", help="print a JSON summary")
    _aws_arguments(redrive)
    redrive.set_defaults(func=_redrive)

    again = commands.add_parser("reprocess", help="run FAILED objects through the pipeline again")
    select = again.add_mutually_exclusive_group(required=True)
    select.add_argument("--key", help="one object key (every version's record)")
    select.add_argument("--prefix", help="FAILED/stuck/unrecorded objects under this key prefix")
    select.add_argument("--error-class", choices=["TRANSIENT", "CONFIGURATION", "PERMANENT"])
    again.add_argument("--version", help="only this version id")
    again.add_argument(
        "--lookback",
        type=duration,
        default=timedelta(hours=72),
        help="with --key/--prefix, also start objects under incoming/ written within this "
        "window that have no state record (72h: the reconciler's MissedEventLookbackHours)",
    )
    again.add_argument("--dry-run", action="store_true")
    again.add_argument("--json", action="store_true")
    again.add_argument("--table")
    again.add_argument("--bucket")
    again.add_argument("--state-machine-arn")
    _aws_arguments(again)
    again.set_defaults(func=_reprocess)

    doctor = commands.add_parser(
        "doctor",
        help="check a deployed stack: one PASS / WARN / FAIL line per check, with what to do",
        description="Checks the stack's event path (bucket notifications, rule, targets, DLQ "
        "policy), workflow, dead letters, stale claims and due retries, reconcile schedule "
        "and alarms. Exit 0 when healthy (nothing FAILs; --strict: nothing WARNs either); 1 "
        "when a check FAILs: something needs a person, such as any message in a dead-letter "
        "queue; 2 when doctor could not run (the stack cannot be read).",
    )
    doctor.add_argument(
        "--since",
        type=duration,
        default=timedelta(hours=24),
        help="window of the execution failure rate (24h)",
    )
    doctor.add_argument("--strict", action="store_true", help="exit 1 on WARN as well")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    _aws_arguments(doctor)
    doctor.set_defaults(func=_doctor)


def _command_name(args: Any) -> str:
    return " ".join(
        part for part in ("ingestctl", args.command, getattr(args, "local_command", None)) if part
    )


def main(argv: list[str] | None = None) -> int:
    """Run one command. Exit 0 / 1 as the command says; 2 (one line on stderr, no traceback)
    when it could not run; 70 with the traceback on an unexpected error (a bug)."""
    args: Any = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # stdout closed early (`| head`): not an error worth a line
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{_command_name(args)}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        message = explain(exc)
        if message is None:
            traceback.print_exc()
            print(
                f"{_command_name(args)}: unexpected error {type(exc).__name__}: this is a bug "
                "in ingestctl; please report it with the traceback above",
                file=sys.stderr,
            )
            return EXIT_BUG
        print(f"{_command_name(args)}: {message}", file=sys.stderr)
        return EXIT_CANNOT_RUN


if __name__ == "__main__":
    raise SystemExit(main())
