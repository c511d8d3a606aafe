"""The checks of ``ingestctl doctor``, in the order an object travels.

Each check is a function of a ``Context`` (clients, the stack's outputs, the time) returning
its verdicts; ``run`` runs them one after another and turns an exception in one check into
that check's verdict (a resource that does not exist: FAIL; any other error, such as a
permission the caller lacks: WARN "could not check"), so one failing call never hides the
other checks. Checks only read, except ``dead-letters`` (module ``dead_letters``), which
peeks at each dead-letter queue the way ``ingestctl inspect`` does (messages are received and
made visible again at once; their receive counts go up by one).

The judgements that are not plain comparisons are shared with the tools that act on them:
DLQ contents come from ``recovery.inspect``, stale claims and due retries from the
reconciler's own planner (``logic.reconcile.plan_open_records``), the queue policy check
from ``queue_policy``.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import BotoCoreError, ClientError

from ingest_pipeline.dal.state import open_record
from ingest_pipeline.logic.keys import INCOMING_PREFIX, PROCESSED_PREFIX, QUARANTINE_PREFIX
from ingest_pipeline.logic.policy import ReconcilePolicy
from ingest_pipeline.logic.reconcile import ActionKind, Plan, plan_open_records
from ingest_pipeline.models import OPEN_STATE_INDEX, Attr, OpenRecord, OpenState, iso_ms
from ingest_tools.doctor import dead_letters, queue_policy
from ingest_tools.doctor.report import Check, Report, Status, duration
from ingest_tools.recovery.formats import bus_from_rule_arn

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

#: Executions that ended FAILED, TIMED_OUT or ABORTED above this share of those that ended
#: in the window WARN.
FAILURE_RATE_WARN = 0.10
#: The reconcile schedule's period when its expression is not a rate(...).
DEFAULT_SCHEDULE_PERIOD = timedelta(minutes=15)
#: At most this many executions are read for the failure rate (newest first).
EXECUTIONS_READ_LIMIT = 5000
#: The namespace of the metrics Step Functions publishes (dimension StateMachineArn), and the
#: metric that counts each status an execution ends in (Step Functions developer guide,
#: "Monitoring Step Functions metrics using Amazon CloudWatch": published for every state
#: machine, Standard and Express).
STATES_NAMESPACE = "AWS/States"
EXPRESS_STATUS_METRICS = {
    "SUCCEEDED": "ExecutionsSucceeded",
    "FAILED": "ExecutionsFailed",
    "TIMED_OUT": "ExecutionsTimedOut",
    "ABORTED": "ExecutionsAborted",
}
#: The execution events of the failed statuses, logged at log levels ERROR, FATAL and ALL
#: (developer guide, "Using CloudWatch Logs to log execution history in Step Functions").
EXPRESS_LOG_EVENTS = ("ExecutionFailed", "ExecutionTimedOut", "ExecutionAborted")
_SHOWN = 3  # object keys named in a detail line

_NOT_FOUND = ("NotFound", "NonExistent", "DoesNotExist", "NoSuch")
_DESERIALIZER = TypeDeserializer()


@dataclass(frozen=True)
class Clients:
    s3: Any
    events: Any
    sqs: Any
    stepfunctions: Any
    scheduler: Any
    cloudwatch: Any
    cloudformation: Any
    lambda_: Any
    dynamodb: Any

    @classmethod
    def create(cls, make: Callable[[str], Any]) -> Clients:
        """``make(service)`` builds one client (e.g. ``session.client``)."""
        return cls(
            s3=make("s3"),
            events=make("events"),
            sqs=make("sqs"),
            stepfunctions=make("stepfunctions"),
            scheduler=make("scheduler"),
            cloudwatch=make("cloudwatch"),
            cloudformation=make("cloudformation"),
            lambda_=make("lambda"),
            dynamodb=make("dynamodb"),
        )


@dataclass(frozen=True)
class Context:
    clients: Clients
    outputs: Mapping[str, str]
    stack: str | None
    now: datetime
    since: timedelta = timedelta(hours=24)
    #: appended to the ingestctl commands the actions name (e.g. ``--stack prod``)
    connection: str = ""

    def output(self, key: str) -> str:
        return self.outputs[key]

    def ingestctl(self, command: str) -> str:
        """An ingestctl command line to suggest, with doctor's own connection options."""
        return f"ingestctl {command}{' ' + self.connection if self.connection else ''}"


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


# ------------------------------------------------------------------------------------------
# S3 -> EventBridge
# ------------------------------------------------------------------------------------------


def bucket_eventbridge(context: Context) -> list[Check]:
    """FAIL when the bucket does not send its events to EventBridge: no upload would start
    anything (the reconciler's missed-event scan would find them only after its grace
    period)."""
    bucket = context.output("IngestBucketName")
    config = context.clients.s3.get_bucket_notification_configuration(Bucket=bucket)
    if "EventBridgeConfiguration" in config:
        detail = f"s3://{bucket} sends its events to EventBridge"
        return [Check("bucket-eventbridge", Status.PASS, detail)]
    document = json.dumps({"EventBridgeConfiguration": {}})
    return [
        Check(
            "bucket-eventbridge",
            Status.FAIL,
            f"s3://{bucket} does not send its events to EventBridge: uploads start nothing",
            f"aws s3api put-bucket-notification-configuration --bucket {bucket} "
            f"--notification-configuration '{document}' (the document replaces the bucket's "
            "notifications: add any others it has), or redeploy the stack; the reconciler "
            "starts what was uploaded meanwhile (missed-event scan)",
            {"bucket": bucket},
        )
    ]


def _rule(context: Context) -> tuple[str, str, str]:
    """(rule ARN, name, event bus) of the object-created rule."""
    arn = context.output("ObjectCreatedRuleArn")
    return arn, arn.rsplit("/", 1)[-1], bus_from_rule_arn(arn)


def rule_enabled(context: Context) -> list[Check]:
    """FAIL unless the rule is ENABLED: a disabled rule drops every S3 event."""
    _, name, bus = _rule(context)
    rule = context.clients.events.describe_rule(Name=name, EventBusName=bus)
    state = str(rule.get("State", ""))
    if state.startswith("ENABLED"):
        return [Check("rule-enabled", Status.PASS, f"rule {name} is {state} (bus {bus})")]
    return [
        Check(
            "rule-enabled",
            Status.FAIL,
            f"rule {name} is {state or 'in no state'}: S3 events reach no target and are lost",
            f"aws events enable-rule --name {name}"
            + (f" --event-bus-name {bus}" if bus != "default" else "")
            + "; the reconciler starts what was uploaded meanwhile (missed-event scan)",
            {"rule": name, "state": state},
        )
    ]


def object_created_event(
    bucket: str, key: str, *, account: str, region: str, now: datetime, source: str = "aws.s3"
) -> dict[str, Any]:
    """An S3 "Object Created" EventBridge event for s3://bucket/key, in the shape AWS
    documents (Amazon S3 User Guide, "EventBridge event message structure")."""
    detail: dict[str, Any] = {
        "version": "0",
        "bucket": {"name": bucket},
        "object": {
            "key": key,
            "size": 5,
            "etag": "b1946ac92492d2347c6235b4d2611184",
            "version-id": "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e",
            "sequencer": "00617F08299329D189",
        },
        "request-id": "N4N7GDK58NMKJ12R",
        "requester": account,
        "source-ip-address": "192.0.2.1",
        "reason": "PutObject",
    }
    if source != "aws.s3":  # a redriven event keeps its provenance in detail.redrive
        detail["redrive"] = {"originalSource": "aws.s3", "redriveCount": 1}
    return {
        "version": "0",
        "id": "17793124-05d4-b198-2fde-7ededc63b103",
        "detail-type": "Object Created",
        "source": source,
        "account": account,
        "time": now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": detail,
    }


def rule_pattern(context: Context) -> list[Check]:
    """FAIL unless the rule's pattern (TestEventPattern) matches an S3 "Object Created" event
    for this bucket under incoming/ and its redriven form (source RedriveEventSource), and
    does not match the pipeline's own writes under processed/ and quarantine/ (each would
    start the pipeline again, in a loop). FAIL too when the rule is not on the default bus:
    S3 sends its events there only."""
    arn, name, bus = _rule(context)
    bucket = context.output("IngestBucketName")
    parts = arn.split(":")
    region, account = parts[3], parts[4]
    pattern = str(context.clients.events.describe_rule(Name=name, EventBusName=bus)["EventPattern"])
    cases: list[tuple[str, str, bool]] = [("aws.s3", f"{INCOMING_PREFIX}doctor/sample.csv", True)]
    redrive = context.outputs.get("RedriveEventSource")
    if redrive:
        cases.append((redrive, f"{INCOMING_PREFIX}doctor/sample.csv", True))
    cases += [
        ("aws.s3", f"{PROCESSED_PREFIX}doctor/sample.jsonl", False),
        ("aws.s3", f"{QUARANTINE_PREFIX}doctor/sample.csv", False),
    ]
    wrong: list[str] = []
    for source, key, expected in cases:
        event = object_created_event(
            bucket, key, account=account, region=region, now=context.now, source=source
        )
        result = context.clients.events.test_event_pattern(
            EventPattern=pattern, Event=json.dumps(event)
        )["Result"]
        if bool(result) != expected:
            wrong.append(
                f"{'does not match' if expected else 'matches'} {source} s3://{bucket}/{key}"
            )
    if bus != "default":
        wrong.append(f"is on event bus {bus}: S3 sends its events to the default bus only")
    data = {"rule": name, "pattern": json.loads(pattern), "cases": len(cases)}
    if wrong:
        return [
            Check(
                "rule-pattern",
                Status.FAIL,
                f"rule {name} " + "; ".join(wrong),
                f"fix the rule's pattern (template.yaml, PipelineStateMachine Events "
                f"ObjectCreated) and redeploy; now: aws events describe-rule --name {name}",
                {**data, "wrong": wrong},
            )
        ]
    sources = "S3 and redriven" if redrive else "S3"
    return [
        Check(
            "rule-pattern",
            Status.PASS,
            f"matches {sources} Object Created events under s3://{bucket}/{INCOMING_PREFIX}, "
            f"not the pipeline's own {PROCESSED_PREFIX} and {QUARANTINE_PREFIX} writes",
            data=data,
        )
    ]


def _targets(context: Context) -> list[dict[str, Any]]:
    _, name, bus = _rule(context)
    targets: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"Rule": name, "EventBusName": bus}
    while True:
        page = context.clients.events.list_targets_by_rule(**kwargs)
        targets.extend(page.get("Targets", []))
        if not page.get("NextToken"):
            return targets
        kwargs["NextToken"] = page["NextToken"]


def _queue_url(sqs: Any, queue_arn: str) -> str:
    _, _, _, _, account, name = queue_arn.split(":", 5)
    return str(sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"])


def rule_targets(context: Context) -> list[Check]:
    """FAIL when the rule has no target, or a target has no dead-letter queue (or one that
    does not exist): events that exhaust their retries would be dropped. WARN when a target
    has no RetryPolicy (EventBridge's defaults apply, not what the template sets) or retries
    nothing."""
    _, name, _ = _rule(context)
    targets = _targets(context)
    if not targets:
        return [
            Check(
                "rule-targets",
                Status.FAIL,
                f"rule {name} has no target: S3 events go nowhere",
                "redeploy the stack (sam deploy)",
                {"rule": name},
            )
        ]
    fails: list[str] = []
    warns: list[str] = []
    described: list[str] = []
    rows: list[dict[str, Any]] = []
    for target in targets:
        target_id = str(target.get("Id"))
        retry = target.get("RetryPolicy")
        dlq = (target.get("DeadLetterConfig") or {}).get("Arn")
        if retry is None:
            warns.append(f"{target_id} has no RetryPolicy (EventBridge's default: 24 h, 185)")
        elif int(retry.get("MaximumRetryAttempts", 185)) == 0:
            warns.append(f"{target_id} retries nothing (MaximumRetryAttempts 0)")
        if not dlq:
            fails.append(f"{target_id} has no dead-letter queue: failed events are dropped")
        else:
            try:
                _queue_url(context.clients.sqs, dlq)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                fails.append(f"{target_id}'s dead-letter queue {dlq} cannot be found ({code})")
        retry_text = (
            f"retries {retry.get('MaximumRetryAttempts', 185)} times over "
            f"{int(retry.get('MaximumEventAgeInSeconds', 86400)) // 3600} h"
            if retry
            else "default retries"
        )
        described.append(
            f"{target_id} ({retry_text}, DLQ {dlq.rsplit(':', 1)[-1] if dlq else '-'})"
        )
        rows.append({"id": target_id, "arn": target.get("Arn"), "retryPolicy": retry, "dlq": dlq})
    data = {"rule": name, "targets": rows}
    if fails or warns:
        return [
            Check(
                "rule-targets",
                Status.FAIL if fails else Status.WARN,
                "; ".join(fails + warns),
                "redeploy the stack (sam deploy: the template sets each target's RetryPolicy "
                f"and DeadLetterConfig); now: aws events list-targets-by-rule --rule {name}",
                data,
            )
        ]
    return [Check("rule-targets", Status.PASS, "; ".join(described), data=data)]


def rule_dlq_policy(context: Context) -> list[Check]:
    """FAIL unless the queue policy of each target's dead-letter queue lets this rule send
    (``queue_policy.evaluate``), or when the queue is encrypted with the AWS managed key
    alias/aws/sqs, whose key policy EventBridge cannot use: EventBridge drops the dead letters
    it cannot deliver. WARN when the policy cannot be evaluated, or no target has a DLQ."""
    arn, name, _ = _rule(context)
    dlqs = sorted(
        {
            str(t["DeadLetterConfig"]["Arn"])
            for t in _targets(context)
            if (t.get("DeadLetterConfig") or {}).get("Arn")
        }
    )
    if not dlqs:
        detail = f"rule {name}'s targets have no dead-letter queue"
        return [Check("rule-dlq-policy", Status.WARN, detail, "see rule-targets")]
    fails: list[str] = []
    warns: list[str] = []
    passes: list[str] = []
    rows: list[dict[str, Any]] = []
    for queue_arn in dlqs:
        queue = queue_arn.rsplit(":", 1)[-1]
        url = _queue_url(context.clients.sqs, queue_arn)
        attributes = context.clients.sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["Policy", "KmsMasterKeyId"]
        ).get("Attributes", {})
        verdict = queue_policy.evaluate(attributes.get("Policy"), queue_arn=queue_arn, rule_arn=arn)
        key = attributes.get("KmsMasterKeyId")
        rows.append(
            {
                "queue": queue_arn,
                "outcome": verdict.outcome.value,
                "reason": verdict.reason,
                "kmsMasterKeyId": key,
                "neededStatement": _needed_statement(queue_arn, arn),
            }
        )
        if key in ("alias/aws/sqs", "aws/sqs"):
            fails.append(
                f"{queue} is encrypted with the AWS managed key alias/aws/sqs, which EventBridge "
                "cannot use"
            )
        elif verdict.outcome is queue_policy.Outcome.DENIED:
            fails.append(f"{queue}: {verdict.reason}: the rule cannot send it dead letters")
        elif verdict.outcome is queue_policy.Outcome.UNKNOWN:
            warns.append(f"{queue}: {verdict.reason}")
        else:
            passes.append(f"{queue}'s policy lets rule {name} send ({verdict.reason})")
    data = {"rule": arn, "queues": rows}
    if fails or warns:
        return [
            Check(
                "rule-dlq-policy",
                Status.FAIL if fails else Status.WARN,
                "; ".join(fails + warns),
                "redeploy the stack (sam deploy restores EventDeliveryDLQPolicy), or add a "
                "statement allowing events.amazonaws.com sqs:SendMessage with aws:SourceArn "
                f"{arn} (doctor --json: neededStatement); now: aws sqs get-queue-attributes "
                f"--queue-url {url} --attribute-names Policy",
                data,
            )
        ]
    return [Check("rule-dlq-policy", Status.PASS, "; ".join(passes), data=data)]


def _needed_statement(queue_arn: str, rule_arn: str) -> dict[str, Any]:
    return {
        "Effect": "Allow",
        "Principal": {"Service": queue_policy.EVENTS_PRINCIPAL},
        "Action": "sqs:SendMessage",
        "Resource": queue_arn,
        "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}},
    }


# ------------------------------------------------------------------------------------------
# the workflow
# ------------------------------------------------------------------------------------------


def state_machine(context: Context) -> list[Check]:
    """FAIL unless the state machine is ACTIVE (DELETING: nothing can start). An EXPRESS one
    WARNs when it logs its executions nowhere: Step Functions records no Express execution,
    its CloudWatch Logs are the only place to find one."""
    arn = context.output("PipelineStateMachineArn")
    described = context.clients.stepfunctions.describe_state_machine(stateMachineArn=arn)
    status = str(described.get("status", ""))
    name = arn.rsplit(":", 1)[-1]
    if status == "ACTIVE" and described.get("type") == "EXPRESS":
        group, level = _log_group(described)
        data = {"type": "EXPRESS", "logGroup": group, "logLevel": level}
        if group is None:
            return [
                Check(
                    "state-machine",
                    Status.WARN,
                    f"{name} is ACTIVE (EXPRESS) and logs its executions nowhere (logging "
                    f"level {level}): Step Functions keeps no record of Express executions",
                    "enable its CloudWatch Logs logging (template.yaml Logging: Level ERROR or "
                    "ALL, a log group destination) and redeploy (sam deploy)",
                    data,
                )
            ]
        detail = f"{name} is ACTIVE (EXPRESS; executions logged to {group}, level {level})"
        return [Check("state-machine", Status.PASS, detail, data=data)]
    if status == "ACTIVE":
        return [Check("state-machine", Status.PASS, f"{name} is ACTIVE ({described.get('type')})")]
    return [
        Check(
            "state-machine",
            Status.FAIL,
            f"{name} is {status}: no execution can start",
            "redeploy the stack (sam deploy)",
            {"status": status},
        )
    ]


def _recent_executions(context: Context, since: datetime) -> Iterator[dict[str, Any]]:
    """Executions started since ``since``, newest first (ListExecutions' order)."""
    kwargs: dict[str, Any] = {
        "stateMachineArn": context.output("PipelineStateMachineArn"),
        "maxResults": 1000,
    }
    read = 0
    while True:
        page = context.clients.stepfunctions.list_executions(**kwargs)
        for execution in page.get("executions", []):
            if execution["startDate"] < since or read >= EXECUTIONS_READ_LIMIT:
                return
            read += 1
            yield execution
        if not page.get("nextToken"):
            return
        kwargs["nextToken"] = page["nextToken"]


def execution_failures(context: Context) -> list[Check]:
    """WARN when more than FAILURE_RATE_WARN of the executions that ended in the window
    (``--since``) ended FAILED, TIMED_OUT or ABORTED. Not a FAIL: rejected data ends an
    execution FAILED too, and the ExecutionsFailed alarm pages for bursts (see alarms).

    The state machine's type comes from DescribeStateMachine (an ARN does not tell: Standard
    and Express state machine ARNs have the same form). STANDARD: ListExecutions, the
    executions started in the window by status. EXPRESS has no ListExecutions (nor
    DescribeExecution or GetExecutionHistory): the same figures come from the execution
    metrics Step Functions publishes for every state machine (``_express_statuses``)."""
    arn = context.output("PipelineStateMachineArn")
    described = context.clients.stepfunctions.describe_state_machine(stateMachineArn=arn)
    if described.get("type") == "EXPRESS":
        return _express_execution_failures(context, described)
    since = context.now - context.since
    statuses = Counter(str(e["status"]) for e in _recent_executions(context, since))

    def action(worst: str) -> str:
        return (
            f"aws stepfunctions list-executions --state-machine-arn {arn} --status-filter "
            f"{worst}; fix the cause, then "
            + context.ingestctl("reprocess --key KEY (or --error-class CONFIGURATION)")
        )

    return [_failure_verdict(context, statuses, action)]


def _failure_verdict(
    context: Context, statuses: Counter[str], action: Callable[[str], str], note: str = ""
) -> Check:
    """The execution-failures verdict over ``statuses`` (executions by status, RUNNING ones
    included); ``action(worst status)`` says what to do on WARN, ``note`` where the figures
    come from (appended to the detail)."""
    ended = sum(n for s, n in statuses.items() if s != "RUNNING")
    failed = sum(statuses[s] for s in ("FAILED", "TIMED_OUT", "ABORTED"))
    window = duration(context.since)
    counts = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    data = {"window": window, "byStatus": dict(statuses), "ended": ended, "failed": failed}
    if not ended:
        detail = f"no execution ended in the last {window}" + (f" ({counts})" if counts else "")
        return Check("execution-failures", Status.PASS, detail + note, data={**data, "rate": None})
    rate = failed / ended
    detail = f"{failed} of {ended} executions that ended in the last {window} failed " + (
        f"({rate:.0%}; {counts})"
    )
    if rate <= FAILURE_RATE_WARN:
        return Check("execution-failures", Status.PASS, detail + note, data={**data, "rate": rate})
    worst = "FAILED" if statuses["FAILED"] else "TIMED_OUT" if statuses["TIMED_OUT"] else "ABORTED"
    return Check(
        "execution-failures",
        Status.WARN,
        f"{detail}, above {FAILURE_RATE_WARN:.0%}{note}",
        action(worst),
        {**data, "rate": rate},
    )


def _metric_period(window: timedelta) -> int:
    """One GetMetricData period over the whole window, in whole hours: a multiple of 3600 s
    is valid however old the window's start (CloudWatch wants a multiple of 60 s past 3 h,
    of 300 s past 15 days, of 3600 s past 63 days, or returns no data points)."""
    return max(1, math.ceil(window.total_seconds() / 3600)) * 3600


def _whole_minutes(start: datetime, end: datetime) -> dict[str, datetime]:
    """GetMetricData's StartTime and EndTime for ``start`` .. ``end`` in whole minutes (the
    start rounded down, as CloudWatch rounds it; the end up, so that the datapoints of the
    current minute, which CloudWatch stores at one-minute resolution, are in)."""
    minute = timedelta(minutes=1)
    floor = start - (start - datetime.min.replace(tzinfo=start.tzinfo)) % minute
    ceiling = end + (datetime.min.replace(tzinfo=end.tzinfo) - end) % minute
    return {"StartTime": floor, "EndTime": ceiling}


def _express_statuses(context: Context, arn: str, since: datetime) -> Counter[str]:
    """Executions by status from the AWS/States metrics of state machine ``arn`` (dimension
    StateMachineArn), Sum over ``since`` .. now: each ended status is its metric's count of
    executions that ended in the window (the same statuses ListExecutions reports); RUNNING
    is ExecutionsStarted less those that ended, never below 0 (an estimate: metrics name no
    execution, and an execution that started before the window may end in it). Step
    Functions delivers metrics best effort, at least once: a datapoint may come late or
    twice."""
    metrics = {"RUNNING": "ExecutionsStarted", **EXPRESS_STATUS_METRICS}
    ids = {status: f"m{i}" for i, status in enumerate(metrics)}
    period = _metric_period(context.since)
    kwargs: dict[str, Any] = {
        "MetricDataQueries": [
            {
                "Id": ids[status],
                "MetricStat": {
                    "Metric": {
                        "Namespace": STATES_NAMESPACE,
                        "MetricName": name,
                        "Dimensions": [{"Name": "StateMachineArn", "Value": arn}],
                    },
                    "Period": period,
                    "Stat": "Sum",
                },
            }
            for status, name in metrics.items()
        ],
        **_whole_minutes(since, context.now),
    }
    status_of = {query_id: status for status, query_id in ids.items()}
    sums: Counter[str] = Counter()
    while True:
        page = context.clients.cloudwatch.get_metric_data(**kwargs)
        for result in page.get("MetricDataResults", []):
            sums[status_of[str(result["Id"])]] += round(sum(result.get("Values") or ()))
        if not page.get("NextToken"):
            break
        kwargs["NextToken"] = page["NextToken"]
    statuses = Counter({s: n for s, n in sums.items() if s != "RUNNING" and n > 0})
    running = sums["RUNNING"] - sum(statuses.values())
    if running > 0:
        statuses["RUNNING"] = running
    return statuses


def _log_group(described: Mapping[str, Any]) -> tuple[str | None, str]:
    """(log group name, level) of the state machine's CloudWatch Logs logging: the group is
    None when it logs nowhere (level OFF or no destination)."""
    config = described.get("loggingConfiguration") or {}
    level = str(config.get("level") or "OFF")
    for destination in config.get("destinations") or []:
        group_arn = str((destination.get("cloudWatchLogsLogGroup") or {}).get("logGroupArn", ""))
        if ":log-group:" in group_arn and level != "OFF":
            return group_arn.split(":log-group:", 1)[1].removesuffix(":*"), level
    return None, level


def _express_execution_failures(context: Context, described: Mapping[str, Any]) -> list[Check]:
    """execution-failures of an EXPRESS state machine: the figures from its AWS/States
    metrics; what to do points to what Express has: the executions' CloudWatch Logs (Logs
    Insights, and the console's Express execution view, which reads them) and the state
    table (``ingestctl reprocess``)."""
    arn = context.output("PipelineStateMachineArn")
    name = arn.rsplit(":", 1)[-1]
    since = context.now - context.since
    group, level = _log_group(described)
    reprocess = context.ingestctl("reprocess --key KEY (or --error-class CONFIGURATION)")
    listed = context.ingestctl("reprocess --prefix incoming/ --dry-run")

    def action(_worst: str) -> str:
        if group is None:
            return (
                f"{name} is EXPRESS (no ListExecutions) and logs nothing (logging level "
                f"{level}): enable its CloudWatch Logs logging (template.yaml Logging, Level "
                "ERROR or ALL) to see its failed executions in Logs Insights and the console's "
                f"Express execution view; meanwhile {listed} lists the failed objects from the "
                "state table; fix the cause, then " + reprocess
            )
        events = ", ".join(f'"{event}"' for event in EXPRESS_LOG_EVENTS)
        query = (
            "fields @timestamp, execution_arn, type, @message | filter type in "
            f"[{events}] | sort @timestamp desc | limit 50"
        )
        return (
            f"{name} is EXPRESS (no ListExecutions): its executions are in log group {group} "
            f"(level {level}): CloudWatch Logs Insights, aws logs start-query --log-group-name "
            f"{group} --start-time {int(since.timestamp())} --end-time "
            f"{int(context.now.timestamp())} --query-string '{query}' then aws logs "
            "get-query-results --query-id ID; or the Step Functions console's Express "
            f"execution view of {name} (read from those logs); {listed} lists the failed "
            "objects from the state table; fix the cause, then " + reprocess
        )

    statuses = _express_statuses(context, arn, since)
    note = " (AWS/States metrics: the state machine is EXPRESS)"
    return [_failure_verdict(context, statuses, action, note)]


# ------------------------------------------------------------------------------------------
# open state records: what the reconciler should have picked up
# ------------------------------------------------------------------------------------------


def schedule_period(expression: str | None) -> timedelta | None:
    """The period of a ``rate(...)`` schedule expression (None for cron/at/unknown)."""
    match = re.fullmatch(r"\s*rate\(\s*(\d+)\s+(minute|hour|day)s?\s*\)\s*", expression or "")
    if not match:
        return None
    unit = {"minute": 60, "hour": 3600, "day": 86400}[match.group(2)]
    return timedelta(seconds=int(match.group(1)) * unit)


def _schedule(context: Context) -> dict[str, Any]:
    """GetSchedule of the reconcile schedule (its group and name come from its ARN:
    ``...:schedule/<group>/<name>``)."""
    arn = context.output("ReconcileScheduleArn")
    group, _, name = arn.split(":schedule/", 1)[1].partition("/")
    return dict(context.clients.scheduler.get_schedule(Name=name, GroupName=group))


def _reconcile_settings(context: Context) -> tuple[ReconcilePolicy, timedelta, list[str]]:
    """The deployed reconcile policy (the function's environment, read as the function reads
    it) and the schedule's period; defaults where they cannot be read, with a note."""
    from ingest_pipeline.config import ReconcileSettings

    notes: list[str] = []
    policy = ReconcilePolicy()
    function = context.outputs.get("ReconcileFunctionName")
    try:
        if not function:
            raise ValueError("no ReconcileFunctionName output")
        config = context.clients.lambda_.get_function_configuration(FunctionName=function)
        variables = (config.get("Environment") or {}).get("Variables") or {}
        policy = ReconcileSettings.from_env(variables).policy
    except Exception as exc:  # any failure: the defaults, said so
        notes.append(f"reconcile policy defaults used ({type(exc).__name__})")
    period: timedelta | None = None
    try:
        if context.outputs.get("ReconcileScheduleArn"):
            period = schedule_period(_schedule(context).get("ScheduleExpression"))
    except (ClientError, BotoCoreError, ValueError, IndexError) as exc:
        notes.append(f"schedule period assumed ({type(exc).__name__})")
    return policy, period or DEFAULT_SCHEDULE_PERIOD, notes


def _query_open(context: Context, open_state: OpenState) -> list[OpenRecord]:
    kwargs: dict[str, Any] = {
        "TableName": context.output("ObjectStateTableName"),
        "IndexName": OPEN_STATE_INDEX,
        "KeyConditionExpression": f"{Attr.OPEN_STATE} = :s",
        "ExpressionAttributeValues": {":s": {"S": open_state.value}},
    }
    records: list[OpenRecord] = []
    while True:
        page = context.clients.dynamodb.query(**kwargs)
        for raw in page.get("Items", []):
            record = open_record({k: _DESERIALIZER.deserialize(v) for k, v in raw.items()})
            if record is not None:
                records.append(record)
        if "LastEvaluatedKey" not in page:
            return records
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _due_since(record: OpenRecord) -> datetime | None:
    """When the reconciler could first act on a record it plans an action for: a claim's
    lease expiry, a retry's retry_after (None: due from the start)."""
    if record.claimed_at is not None and record.status == "RUNNING":
        return record.claimed_at + timedelta(seconds=record.lease_seconds)
    return record.retry_after


def open_records(context: Context) -> list[Check]:
    """``stale-claims``: RUNNING records whose claim's lease has expired (the execution died
    without recording an outcome); ``overdue-retries``: FAILED-retryable records whose
    retry time has passed, or whose attempts are used up and await escalation. Which records
    are due is decided by the reconciler's own planner with the deployed policy.

    The reconciler acts on them at its next run: WARN while a record has been due for at most
    two schedule periods (the next run will take it); FAIL after that (the reconciler is not
    doing its job: see reconcile-schedule and dead-letters:ReconcileDLQ)."""
    policy, period, notes = _reconcile_settings(context)
    grace = 2 * period
    records = {
        r.object: r
        for state in (OpenState.RUNNING, OpenState.RETRYABLE)
        for r in _query_open(context, state)
    }
    plan = Plan()
    plan_open_records(records.values(), context.now, policy, plan)
    stale = [a for a in plan.actions if a.kind is ActionKind.RECOVER]
    overdue = [a for a in plan.actions if a.kind in (ActionKind.RETRY, ActionKind.ESCALATE)]
    note = f" ({'; '.join(notes)})" if notes else ""
    return [
        _open_check(
            "stale-claims",
            [(records[a.object], a.kind) for a in stale],
            context.now,
            grace,
            ok=f"no RUNNING claim past its lease ({plan.leased} within it){note}",
            what=("claim RUNNING past its lease", "claims RUNNING past their lease"),
            action=lambda key: (
                "the reconciler recovers them at its next run; now: "
                + context.ingestctl(f"reprocess --key {key!r}")
                + " (it takes the claim over)"
            ),
        ),
        _open_check(
            "overdue-retries",
            [(records[a.object], a.kind) for a in overdue],
            context.now,
            grace,
            ok=f"no retryable failure past its retry time ({plan.waiting} waiting){note}",
            what=(
                "FAILED-retryable record past its retry time",
                "FAILED-retryable records past their retry time",
            ),
            action=lambda key: (
                "the reconciler retries (or escalates) them at its next run; "
                "now: " + context.ingestctl("reprocess --error-class TRANSIENT")
            ),
        ),
    ]


def _open_check(
    name: str,
    due: list[tuple[OpenRecord, ActionKind]],
    now: datetime,
    grace: timedelta,
    *,
    ok: str,
    what: tuple[str, str],
    action: Callable[[str], str],
) -> Check:
    """WARN for records due at most ``grace`` ago, FAIL beyond; ``action(key)`` names the
    most overdue record's key."""
    if not due:
        return Check(name, Status.PASS, ok)
    lateness = [(_overdue(record, now), record, kind) for record, kind in due]
    lateness.sort(key=lambda row: row[0], reverse=True)
    late, worst, _ = lateness[0]
    shown = ", ".join(f"{r.object.key} ({duration(t)})" for t, r, _ in lateness[:_SHOWN])
    more = f" and {len(due) - _SHOWN} more" if len(due) > _SHOWN else ""
    status = Status.FAIL if late > grace else Status.WARN
    detail = f"{len(due)} {what[0] if len(due) == 1 else what[1]}: {shown}{more}"
    if status is Status.FAIL:
        detail += f"; overdue by more than two reconcile periods ({duration(grace)})"
    data = {
        "count": len(due),
        "graceSeconds": grace.total_seconds(),
        "records": [
            {
                "bucket": r.object.bucket,
                "key": r.object.key,
                "versionId": r.object.version_id,
                "status": r.status,
                "attempt": r.attempt,
                "action": kind.value,
                "dueSince": _iso_or_none(_due_since(r)),
                "overdueSeconds": t.total_seconds(),
                "executionArn": r.execution_arn,
                "errorCode": r.error_code,
            }
            for t, r, kind in lateness
        ],
    }
    return Check(name, status, detail, action(worst.object.key), data)


def _overdue(record: OpenRecord, now: datetime) -> timedelta:
    since = _due_since(record)
    return now - since if since is not None else timedelta(0)


def _iso_or_none(moment: datetime | None) -> str | None:
    return iso_ms(moment) if moment is not None else None


# ------------------------------------------------------------------------------------------
# the reconcile schedule, alarms
# ------------------------------------------------------------------------------------------


def reconcile_schedule(context: Context) -> list[Check]:
    """FAIL unless the reconcile schedule is ENABLED and its target has a dead-letter queue
    that exists: without the schedule nothing retries, recovers or finds missed objects."""
    schedule = _schedule(context)
    name, group = str(schedule.get("Name")), str(schedule.get("GroupName"))
    state = str(schedule.get("State", ""))
    target = schedule.get("Target") or {}
    dlq = (target.get("DeadLetterConfig") or {}).get("Arn")
    retry = target.get("RetryPolicy") or {}
    problems: list[str] = []
    if state != "ENABLED":
        problems.append(f"schedule {name} is {state or 'in no state'}: nothing is reconciled")
    if not dlq:
        problems.append(f"schedule {name} has no dead-letter queue: failed runs are dropped")
    else:
        try:
            _queue_url(context.clients.sqs, str(dlq))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            problems.append(f"its dead-letter queue {dlq} cannot be found ({code})")
    data = {
        "schedule": name,
        "group": group,
        "state": state,
        "expression": schedule.get("ScheduleExpression"),
        "dlq": dlq,
        "retryPolicy": retry,
    }
    if problems:
        return [
            Check(
                "reconcile-schedule",
                Status.FAIL,
                "; ".join(problems),
                "redeploy the stack (sam deploy), or aws scheduler update-schedule --name "
                f"{name} --group-name {group} --state ENABLED with its current expression, "
                f"target and flexible time window (aws scheduler get-schedule --name {name} "
                f"--group-name {group}): UpdateSchedule replaces the whole schedule",
                data,
            )
        ]
    return [
        Check(
            "reconcile-schedule",
            Status.PASS,
            f"{name} is ENABLED ({schedule.get('ScheduleExpression')}, "
            f"DLQ {str(dlq).rsplit(':', 1)[-1]})",
            data=data,
        )
    ]


def _stack_alarms(context: Context) -> dict[str, str]:
    """The stack's CloudWatch alarms: physical name -> logical id."""
    found: dict[str, str] = {}
    kwargs: dict[str, Any] = {"StackName": context.stack}
    while True:
        page = context.clients.cloudformation.list_stack_resources(**kwargs)
        for resource in page.get("StackResourceSummaries", []):
            if resource.get("ResourceType") == "AWS::CloudWatch::Alarm":
                found[str(resource["PhysicalResourceId"])] = str(resource["LogicalResourceId"])
        if not page.get("NextToken"):
            return found
        kwargs["NextToken"] = page["NextToken"]


def alarms(context: Context) -> list[Check]:
    """FAIL when any of the stack's alarms is in ALARM (each says, in its description, what
    to run). INSUFFICIENT_DATA passes: the alarms treat missing data as not breaching."""
    if not context.stack:
        return [
            Check(
                "alarms",
                Status.WARN,
                "not checked: the stack's name is unknown (its alarms are found from it)",
                "run doctor with --stack NAME, or an --outputs file that names the stack",
            )
        ]
    names = _stack_alarms(context)
    described: list[dict[str, Any]] = []
    ordered = sorted(names)
    for start in range(0, len(ordered), 100):
        page = context.clients.cloudwatch.describe_alarms(
            AlarmNames=ordered[start : start + 100], MaxRecords=100
        )
        described.extend(page.get("MetricAlarms", []))
        described.extend(page.get("CompositeAlarms", []))
    states = Counter(str(a.get("StateValue")) for a in described)
    firing = sorted(
        (a for a in described if a.get("StateValue") == "ALARM"),
        key=lambda a: str(a.get("AlarmName")),
    )
    data = {
        "byState": dict(states),
        "inAlarm": [
            {
                "name": a.get("AlarmName"),
                "logicalId": names.get(str(a.get("AlarmName"))),
                "reason": a.get("StateReason"),
                "description": a.get("AlarmDescription"),
            }
            for a in firing
        ],
    }
    counts = ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
    if not firing:
        detail = f"none of {len(described)} alarms in ALARM ({counts})"
        return [Check("alarms", Status.PASS, detail, data=data)]
    labels = ", ".join(names.get(str(a.get("AlarmName")), str(a.get("AlarmName"))) for a in firing)
    first = str(firing[0].get("AlarmDescription") or "").strip()
    return [
        Check(
            "alarms",
            Status.FAIL,
            f"{len(firing)} of {len(described)} alarms in ALARM: {labels}",
            " ".join(first.split()) or "see the alarm in the CloudWatch console",
            data,
        )
    ]
