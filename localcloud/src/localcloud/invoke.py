"""``localcloud invoke``: ``sam local invoke`` without Docker.

Deploys the template into an embedded local cloud (the SAM transform offline, every resource
the function may call), invokes one function with one event through Lambda's Invoke, and
prints what ``sam local invoke`` prints: on stderr the function's logs between ``START`` and
``END``/``REPORT`` lines, on stdout its response (the error document, when it fails). The
exit status is the function's: 0, or 1 when it ended in an error (``x-amz-function-error``).

    localcloud invoke [FUNCTION] [--event FILE|-] [--template template.yaml]
                      [--env-vars env.json] [--parameter-overrides 'Key=Value ...']
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from localcloud import STACK_NAME, TEMPLATE
from localcloud.usage import UsageError, existing_file, read_json

__all__ = ["add_command", "invoke", "invoke_in"]


def add_command(commands: Any) -> None:
    """The ``invoke`` sub-command (also under an application's command line)."""
    parser = commands.add_parser(
        "invoke",
        help="invoke one function of a template with an event (sam local invoke, no Docker)",
    )
    parser.add_argument(
        "function",
        nargs="?",
        help="logical id (or FunctionName) of the function; optional if the template has one",
    )
    parser.add_argument("-e", "--event", help="the event: a JSON file, or - for stdin (default {})")
    parser.add_argument("-t", "--template", default=str(TEMPLATE))
    parser.add_argument(
        "-n", "--env-vars", help="JSON file of environment variable values, as SAM's"
    )
    parser.add_argument(
        "--parameter-overrides", help="as sam local invoke takes them: 'Key=Value Key2=Value2'"
    )
    parser.add_argument("--stack-name", default=STACK_NAME)
    parser.add_argument("--iam", choices=["on", "off"], help="authorize the function's calls (on)")
    parser.set_defaults(func=run)


def _event(source: str | None) -> bytes:
    if source is None:
        return b"{}"
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text()
    except OSError as exc:
        raise UsageError(f"--event {source}: {exc.strerror or exc}") from None
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--event {source} is not JSON: {exc.msg} at line {exc.lineno}") from None
    return text.encode()


def _function(cloud: Any, wanted: str | None) -> str:
    """The physical name of ``wanted`` (a logical id or a FunctionName), or of the one function."""
    functions: dict[str, str] = cloud.functions
    if wanted is None:
        if len(functions) == 1:
            return next(iter(functions.values()))
        raise UsageError(f"name the function to invoke, one of: {', '.join(sorted(functions))}")
    if wanted in functions:
        return functions[wanted]
    if wanted in functions.values():
        return wanted
    raise UsageError(
        f"{wanted} is not a function of the template; its functions: {', '.join(sorted(functions))}"
    )


def invoke(
    template: Path,
    function: str | None,
    event: bytes,
    *,
    stack_name: str = STACK_NAME,
    parameters: dict[str, str] | None = None,
    environment: dict[str, Any] | None = None,
    iam: bool | None = None,
    out: Any = None,
    log: Any = None,
) -> int:
    """Deploy, invoke ``function`` once with ``event``; the response on ``out``, the logs on
    ``log`` (default stdout, stderr). Returns 0, or 1 for a function error."""
    from localcloud.cloud import LocalCloud

    out, log = out or sys.stdout, log or sys.stderr
    with (
        redirect_stdout(log),  # what the deploy prints goes with the logs, as in SAM
        LocalCloud(
            template, stack_name=stack_name, parameters=parameters, environment=environment, iam=iam
        ) as cloud,
    ):
        return invoke_in(cloud, function, event, out=out, log=log)


def invoke_in(cloud: Any, function: str | None, event: bytes, *, out: Any, log: Any) -> int:
    """``invoke`` in a running cloud: one invocation, printed as ``sam local invoke`` prints
    it (its log, framed by Lambda's START and END / REPORT lines, which the environment
    writes on stdout: with the logs here)."""
    import boto3

    name = _function(cloud, function)
    client = boto3.client("lambda")
    config = client.get_function_configuration(FunctionName=name)
    print(f"Invoking {config['Handler']} ({config['Runtime']})", file=log, flush=True)
    with redirect_stdout(log):
        reply = client.invoke(FunctionName=name, Payload=event)
        payload = reply["Payload"].read().decode()
    print(payload, file=out, flush=True)
    return 1 if reply.get("FunctionError") else 0


def run(args: argparse.Namespace) -> int:
    from localcloud.cloud import parameter_overrides

    template = existing_file(args.template, "--template")
    return invoke(
        template,
        args.function,
        _event(args.event),
        stack_name=args.stack_name,
        parameters=parameter_overrides(args.parameter_overrides or ""),
        environment=read_json(args.env_vars, "--env-vars") if args.env_vars else None,
        iam=None if args.iam is None else args.iam == "on",
    )
