"""How ``ingestctl doctor`` runs its checks, in the order an object travels.

Each check is a function of a ``Context`` (clients, the stack's outputs, the time) returning
its verdicts; ``run`` runs them one after another and turns an exception in one check into
that check's verdict (a resource that does not exist: FAIL; any other error, such as a
permission the caller lacks: WARN "could not check"), so one failing call never hides the
other checks. The checks live in one module per area: ``event_path`` (S3 -> EventBridge),
``workflow`` (the state machine and its failure rate), ``dead_letters``, ``reconcile`` (open
state records, the reconcile schedule) and ``alarms``; ``specs`` lists them. Checks only
read, except ``dead-letters``, which peeks at each dead-letter queue the way ``ingestctl
inspect`` does (messages are received and made visible again at once; their receive counts
go up by one).

The judgements that are not plain comparisons are shared with the tools that act on them:
DLQ contents come from ``recovery.inspect``, stale claims and due retries from the
reconciler's own planner (``logic.reconcile.plan_open_records``), the queue policy check
from ``queue_policy``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from botocore.exceptions import BotoCoreError, ClientError

from ingest_tools.doctor import dead_letters
from ingest_tools.doctor.alarms import alarms
from ingest_tools.doctor.context import Clients, Context
from ingest_tools.doctor.event_path import (
    bucket_eventbridge,
    object_created_event,
    rule_dlq_policy,
    rule_enabled,
    rule_pattern,
    rule_targets,
)
from ingest_tools.doctor.reconcile import open_records, reconcile_schedule, schedule_period
from ingest_tools.doctor.report import Check, Report, Status
from ingest_tools.doctor.workflow import FAILURE_RATE_WARN, execution_failures, state_machine

__all__ = [
    "FAILURE_RATE_WARN",
    "Clients",
    "Context",
    "Spec",
    "object_created_event",
    "run",
    "schedule_period",
    "specs",
]

_NOT_FOUND = ("NotFound", "NonExistent", "DoesNotExist", "NoSuch")


CheckFunction = Callable[[Context], list[Check]]


@dataclass(frozen=True)
class Spec:
    """A check function, the names of the verdicts it returns and the outputs it needs."""

    names: tuple[str, ...]
    function: CheckFunction
    needs: tuple[str, ...]


def run(context: Context, chosen: Sequence[Spec] | None = None) -> Report:
    checks: list[Check] = []
    for spec in specs(context.outputs) if chosen is None else chosen:
        missing = [key for key in spec.needs if not context.outputs.get(key)]
        if missing:
            checks.extend(
                Check(
                    name,
                    Status.WARN,
                    f"not checked: the stack has no output {', '.join(missing)}",
                    "deploy the current template.yaml (sam deploy), or pass --outputs from "
                    "ingestctl local up",
                )
                for name in spec.names
            )
            continue
        try:
            checks.extend(spec.function(context))
        except (ClientError, BotoCoreError, ValueError, KeyError, IndexError, TypeError) as exc:
            checks.extend(_could_not_check(name, exc) for name in spec.names)
    return Report(context.stack, context.now, checks)


def specs(outputs: Mapping[str, str]) -> list[Spec]:
    """Every check, in the order an object travels; one dead-letters check per DLQ output."""
    rule = ("ObjectCreatedRuleArn",)
    return [
        Spec(("bucket-eventbridge",), bucket_eventbridge, ("IngestBucketName",)),
        Spec(("rule-enabled",), rule_enabled, rule),
        Spec(("rule-pattern",), rule_pattern, ("ObjectCreatedRuleArn", "IngestBucketName")),
        Spec(("rule-targets",), rule_targets, rule),
        Spec(("rule-dlq-policy",), rule_dlq_policy, rule),
        Spec(("state-machine",), state_machine, ("PipelineStateMachineArn",)),
        Spec(("execution-failures",), execution_failures, ("PipelineStateMachineArn",)),
        *(_dead_letters_spec(key) for key in dead_letters.output_keys(outputs)),
        Spec(("stale-claims", "overdue-retries"), open_records, ("ObjectStateTableName",)),
        Spec(("reconcile-schedule",), reconcile_schedule, ("ReconcileScheduleArn",)),
        Spec(("alarms",), alarms, ()),
    ]


def _dead_letters_spec(output_key: str) -> Spec:
    def check(context: Context) -> list[Check]:
        return dead_letters.check(context, output_key)

    return Spec((dead_letters.check_name(output_key),), check, (output_key,))


def _could_not_check(name: str, exc: Exception) -> Check:
    """A resource that does not exist FAILs; any other error (permissions, throttling, a
    network problem) WARNs: the check could not tell."""
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", "Unknown"))
        message = str(exc.response.get("Error", {}).get("Message", ""))
        text = f"{exc.operation_name}: {code}: {message}".rstrip(": ")
        if any(marker in code for marker in _NOT_FOUND):
            return Check(
                name,
                Status.FAIL,
                f"missing: {text}",
                "the resource is gone: redeploy the stack (sam deploy)",
                {"error": code, "operation": exc.operation_name},
            )
        return Check(
            name,
            Status.WARN,
            f"could not check: {text}",
            f"give the caller {exc.operation_name} on this resource, or run doctor with "
            "credentials that have it",
            {"error": code, "operation": exc.operation_name},
        )
    return Check(
        name,
        Status.WARN,
        f"could not check: {type(exc).__name__}: {exc}",
        "see the error; doctor's other checks are unaffected",
        {"error": type(exc).__name__},
    )
