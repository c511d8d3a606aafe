"""The checks of the event path, S3 -> EventBridge: does the bucket send its events, is the
object-created rule enabled, does its pattern match what it should (and not the pipeline's own
writes), does each target retry and have a dead-letter queue, and may the rule send to it.

``object_created_event`` builds the S3 "Object Created" event ``rule-pattern`` tests the rule's
pattern with (the conformance tests use it too).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ingest_pipeline.logic.keys import INCOMING_PREFIX, PROCESSED_PREFIX, QUARANTINE_PREFIX
from ingest_tools.doctor import queue_policy
from ingest_tools.doctor.report import Check, Status
from ingest_tools.recovery.formats import bus_from_rule_arn

if TYPE_CHECKING:
    from ingest_tools.doctor.context import Context

__all__ = [
    "bucket_eventbridge",
    "object_created_event",
    "queue_url",
    "rule_dlq_policy",
    "rule_enabled",
    "rule_pattern",
    "rule_targets",
]


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


def queue_url(sqs: Any, queue_arn: str) -> str:
    """The URL of the queue ``queue_arn`` (a ClientError when it does not exist)."""
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
                queue_url(context.clients.sqs, dlq)
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
        url = queue_url(context.clients.sqs, queue_arn)
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
