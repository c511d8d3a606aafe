"""EventBridge rule delivery for the local cloud, as AWS does it.

moto 5.2 matches events to rules but its targets only cover SQS, CloudWatch Logs, archives,
event buses and API destinations; a Step Functions or Lambda target raises
NotImplementedError, which moto swallows, so nothing runs and nothing reaches a DLQ. Here:

* ``Rule.send_to_targets`` (events/models.py:140) -> ``deliver_event``: skips DISABLED
  rules, matches the pattern (moto's matcher; a rule with a ScheduleExpression and no
  EventPattern matches no event: it runs on its schedule, ``Schedules.fire_rule``), then
  delivers to every target on a worker pool (asynchronously, as EventBridge does): input =
  ``Input`` / ``InputPath`` / ``InputTransformer`` / the event; Step Functions
  StartExecution, Lambda Invoke (Event), SQS SendMessage, SNS Publish, PutEvents to a bus;
  moto's own code for the rest.
* a failed delivery is mapped to an EventBridge error code (``error_code_for``); retryable
  ones (THROTTLING, TIMEOUT, INTERNAL_ERROR, ...) are retried with exponential backoff and
  full jitter on the cloud's clock until the target's ``RetryPolicy`` is exhausted
  (``MaximumRetryAttempts`` / ``MaximumEventAgeInSeconds``; default 185 / 86,400 s); the
  others (NO_PERMISSIONS, NO_RESOURCE, INVALID_JSON, ...) are not retried. Then the *event*
  goes to the target's ``DeadLetterConfig`` queue with the attributes AWS sets: RULE_ARN,
  TARGET_ARN, ERROR_CODE, ERROR_MESSAGE and, after retries, EXHAUSTED_RETRY_CONDITION and
  RETRY_ATTEMPTS. Without a DLQ the event is dropped (recorded as DROPPED).

PutEvents' per-entry checks and the shape of S3's events are fixes of their own
(fixes/eventbridge_put_events_entries.py, fixes/s3_eventbridge_events.py).

Every delivery is recorded in the runtime's ``DeliveryLog`` (``LocalCloud.deliveries``): tests and
the demo read which execution an event started, how many attempts it took and where it ended.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import random
import time
import uuid
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from moto.events.models import Rule

from localcloud import clients
from localcloud.features.transformer import apply_input_transformer
from localcloud.iam import enforcement as iam
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Delivery, Runtime

__all__ = ["NON_RETRYABLE", "PATCHES", "backoff", "deliver_event", "queue_url"]

# EventBridge does not retry these: the target is missing, not allowed, or the input is bad.
NON_RETRYABLE = frozenset(
    {
        "NO_PERMISSIONS",
        "NO_RESOURCE",
        "INVALID_JSON",
        "INVALID_PARAMETER",
        "RESOURCE_ALREADY_EXISTS",
        "FAILED_TO_ASSUME_ROLE",
        "RULE_NOT_FOUND",
    }
)
DEFAULT_RETRY_POLICY = {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": 86400}
BACKOFF_BASE_SECONDS = 1.0
BACKOFF_CAP_SECONDS = 300.0


class DeliveryFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


def error_code_for(exc: Exception) -> tuple[str, str]:  # noqa: PLR0911
    """The EventBridge DLQ ERROR_CODE / ERROR_MESSAGE for a failed target call."""
    if isinstance(exc, DeliveryFailed):
        return exc.code, exc.message
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        code, message = str(err.get("Code", "")), str(err.get("Message", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 400))
        detail = (
            f"{message} (Service: {exc.operation_name}; Status Code: {status}; Error Code: {code})"
        )
        lowered = code.lower()
        if "accessdenied" in lowered or "authoriz" in lowered:  # KMS.AccessDeniedException too
            return "NO_PERMISSIONS", detail
        missing = ("notfound", "doesnotexist", "nonexistent")
        if any(w in lowered for w in missing) or code in {"StateMachineDeleting", "NoSuchEntity"}:
            return "NO_RESOURCE", detail
        if any(w in lowered for w in ("throttl", "toomanyrequests", "limitexceeded")):
            return "THROTTLING", detail
        if code in {"InvalidExecutionInput", "InvalidParameterValue", "ValidationException"}:
            return "INVALID_PARAMETER", detail
        if status >= 500:
            return "INTERNAL_ERROR", detail
        return "SDK_CLIENT_ERROR", detail
    if isinstance(exc, BotoCoreError):
        return "CONNECTION_FAILURE", str(exc)
    return "INTERNAL_ERROR", f"{type(exc).__name__}: {exc}"


_queue_urls: dict[str, str] = {}  # queue ARN -> URL (GetQueueUrl once per queue)


def _client(service: str, region: str) -> Any:
    return clients.client(service, region, clients.ONE_ATTEMPT)


def _arn_parts(arn: str) -> tuple[str, str, str, str]:
    """(service, region, account, resource) of an ARN."""
    parts = arn.split(":", 5)
    return parts[2], parts[3], parts[4], parts[5]


def queue_url(arn: str, cache: dict[str, str] = _queue_urls) -> str:
    """The URL of the queue ``arn``, looked up once (in ``cache``)."""
    if arn not in cache:
        _, region, account, name = _arn_parts(arn)
        with iam.acting_as(None):  # a lookup of ours, not a call the service makes
            reply = _client("sqs", region).get_queue_url(
                QueueName=name, QueueOwnerAWSAccountId=account
            )
        cache[arn] = str(reply["QueueUrl"])
    return cache[arn]


def _target_input(target: dict[str, Any], event: dict[str, Any]) -> str:
    if "Input" in target:
        return str(target["Input"])
    if "InputPath" in target:
        from jsonpath_ng import parse  # moto dependency

        matches = [m.value for m in parse(target["InputPath"]).find(event)]
        return json.dumps(matches[0] if matches else None)
    if "InputTransformer" in target:
        return apply_input_transformer(event, target["InputTransformer"])
    return json.dumps(event)


def _target_caller(rule: Rule, target: dict[str, Any]) -> iam.Caller:
    """The target's role when it has one; else EventBridge itself, for the target's resource
    policy (an SQS queue, SNS topic or Lambda function policy naming the rule)."""
    if target.get("RoleArn"):
        return iam.role(str(target["RoleArn"]), "events")
    return iam.service("events.amazonaws.com", rule.arn, rule.account_id)


def _call_target(rule: Rule, target: dict[str, Any], payload: str) -> dict[str, Any]:  # noqa: PLR0911 - one branch per target
    arn = target["Arn"]
    service, region, _, resource = _arn_parts(arn)
    if service == "states":
        try:
            json.loads(payload)
        except ValueError as exc:
            raise DeliveryFailed("INVALID_JSON", f"Input is not valid JSON: {exc}") from exc
        started = _client("stepfunctions", region).start_execution(
            stateMachineArn=arn, name=uuid.uuid4().hex, input=payload
        )
        return {"executionArn": started["executionArn"]}
    if service == "lambda":
        response = _client("lambda", region).invoke(
            FunctionName=arn, InvocationType="Event", Payload=payload.encode()
        )
        return {"StatusCode": response.get("StatusCode")}
    if service == "sqs":
        kwargs: dict[str, Any] = {"QueueUrl": queue_url(arn), "MessageBody": payload}
        group = target.get("SqsParameters", {}).get("MessageGroupId")
        if group:
            kwargs["MessageGroupId"] = group
        return {"MessageId": _client("sqs", region).send_message(**kwargs)["MessageId"]}
    if service == "sns":
        sent = _client("sns", region).publish(TopicArn=arn, Message=payload)
        return {"MessageId": sent["MessageId"]}
    if service == "events" and resource.startswith("event-bus/"):
        event = json.loads(payload)
        request = {
            "Source": event["source"],
            "DetailType": event["detail-type"],
            "Detail": json.dumps(event["detail"]),
            "Resources": event.get("resources", []),
            "EventBusName": arn,
        }
        entry = _client("events", region).put_events(Entries=[request])["Entries"][0]
        if "ErrorCode" in entry:
            raise DeliveryFailed(
                "INVALID_PARAMETER", f"{entry['ErrorCode']}: {entry.get('ErrorMessage')}"
            )
        return {"EventId": entry["EventId"]}
    if service == "logs" and resource.startswith("log-group:"):
        # moto's log-group target wants the event's "time" in epoch seconds (deliver_event
        # has made it ISO 8601): the event is written here, as EventBridge does, one stream
        # per delivery. Log group resource policies are not modelled.
        group = resource.split(":", 1)[1].removesuffix(":*")
        stream = str(uuid.uuid4())
        logs = _client("logs", region)
        with iam.acting_as(None):
            logs.create_log_stream(logGroupName=group, logStreamName=stream)
            logs.put_log_events(
                logGroupName=group,
                logStreamName=stream,
                logEvents=[{"timestamp": int(time.time() * 1000), "message": payload}],
            )
        return {}
    # archives, API destinations: moto's own implementation, one target at a time.
    single = copy.copy(rule)
    single.targets = [target]
    _orig_send_to_targets(single, json.loads(payload), transform_input=False)
    return {}


def backoff(retry: int) -> float:
    """Exponential backoff with full jitter (EventBridge's and Scheduler's retries)."""
    return random.uniform(0, min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**retry))  # noqa: S311 - jitter


def _deliver(rt: Runtime, rule: Rule, target: dict[str, Any], delivery: Delivery) -> None:
    policy = {**DEFAULT_RETRY_POLICY, **(target.get("RetryPolicy") or {})}
    max_retries = int(policy["MaximumRetryAttempts"])
    max_age = float(policy["MaximumEventAgeInSeconds"])
    age = 0.0  # on the cloud's clock: virtual unless its scale > 0
    code = message = ""
    try:
        delivery.input = _target_input(target, delivery.event)
    except Exception as exc:  # a transformer that cannot render this event
        code, message = "INVALID_PARAMETER", f"InputTransformer: {exc}"
    while not code:
        delivery.attempts += 1
        try:
            injected = rt.faults.take_delivery(rule.arn, target["Arn"])
            if injected is not None:
                raise DeliveryFailed(*injected)
            with iam.acting_as(_target_caller(rule, target)):
                delivery.result = _call_target(rule, target, delivery.input or "")
            delivery.status = "DELIVERED"
            return
        except Exception as exc:
            code, message = error_code_for(exc)
        if code in NON_RETRYABLE:
            break
        retries = delivery.attempts - 1
        if retries >= max_retries:
            delivery.exhausted_condition = "MaximumRetryAttempts"
            break
        delay = backoff(retries)
        if age + delay > max_age:
            delivery.exhausted_condition = "MaximumEventAgeInSeconds"
            break
        age += delay
        delivery.retry_delays.append(delay)
        rt.clock.sleep(delay)
        code = message = ""
    delivery.error_code, delivery.error_message = code, message
    _dead_letter(rule, target, delivery)


def _dead_letter(rule: Rule, target: dict[str, Any], delivery: Delivery) -> None:
    dlq = (target.get("DeadLetterConfig") or {}).get("Arn")
    if not dlq:
        delivery.status = "DROPPED"
        return
    attributes = {
        "RULE_ARN": rule.arn,
        "TARGET_ARN": target["Arn"],
        "ERROR_CODE": delivery.error_code or "",
        "ERROR_MESSAGE": delivery.error_message or "",
    }
    if delivery.exhausted_condition:
        attributes["EXHAUSTED_RETRY_CONDITION"] = delivery.exhausted_condition
        attributes["RETRY_ATTEMPTS"] = str(delivery.attempts - 1)
    # EventBridge writes the DLQ itself: the queue's policy must allow events.amazonaws.com
    # for this rule (aws:SourceArn), or the event is lost.
    try:
        with iam.acting_as(iam.service("events.amazonaws.com", rule.arn, rule.account_id)):
            sent = _client("sqs", _arn_parts(dlq)[1]).send_message(
                QueueUrl=queue_url(dlq),
                MessageBody=json.dumps(delivery.event),
                MessageAttributes={
                    k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()
                },
            )
    except Exception as exc:  # InvocationsFailedToBeSentToDlq: the event is lost, as on AWS
        delivery.status = "DROPPED"
        delivery.error_message = f"{delivery.error_message}; DLQ send failed: {exc}"
        return
    delivery.status = "DEAD_LETTERED"
    delivery.dead_letter_message_id = sent["MessageId"]


def iso_time(value: Any) -> str:
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    elif isinstance(value, int | float) or (isinstance(value, str) and value):
        try:
            moment = dt.datetime.fromtimestamp(float(value), tz=dt.UTC)
        except ValueError:  # a string that is no number: as it is
            return str(value)
    else:
        moment = dt.datetime.now(tz=dt.UTC)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _matches(rule: Rule, event: dict[str, Any]) -> bool:
    """Whether ``event`` matches ``rule``: a rule with a ScheduleExpression and no
    EventPattern runs on its schedule only, and no event matches it (moto: every event)."""
    if rule.event_pattern.dump() is None and rule.scheduled_expression:
        return False
    return bool(rule.event_pattern.matches_event(event))


def deliver_event(
    rt: Runtime, rule: Rule, event: dict[str, Any], *, scheduled: bool = False
) -> list[Delivery]:
    """Replacement for moto's Rule.send_to_targets: match, then deliver to every target.
    ``scheduled``: ``event`` is the rule's own Scheduled Event (scheduler.Schedules.fire_rule),
    which the rule's pattern does not filter. Returns the deliveries submitted (none for a
    rule that is not ENABLED)."""
    if rule.state != "ENABLED" or not (scheduled or _matches(rule, event)):
        return []
    event = dict(event)
    event.pop("ingestion-time", None)
    event["time"] = iso_time(event.get("time"))
    submitted = []
    for target in rule.targets:
        delivery = Delivery(
            event_id=str(event.get("id", "")),
            rule_arn=rule.arn,
            target_arn=target["Arn"],
            target_id=target.get("Id", ""),
            event=event,
        )

        def run(d: Delivery, t: dict[str, Any] = target) -> None:
            with iam.acting_as(None):  # not whoever started the pool's thread
                _deliver(rt, rule, t, d)

        rt.deliveries.submit(delivery, run)
        submitted.append(delivery)
    return submitted


# ---------------------------------------------------------------- patches
_orig_send_to_targets = Rule.send_to_targets


def _build_delivery(rt: Runtime) -> Targets:
    def send_to_targets(rule: Rule, event: dict[str, Any], transform_input: bool = True) -> None:
        deliver_event(rt, rule, event)

    rt.on_close(_queue_urls.clear)
    return {(Rule, "send_to_targets"): send_to_targets}


PATCHES = [
    Patch(
        name="eventbridge-target-delivery",
        kind=Kind.FEATURE,
        reason="Rules deliver to Step Functions, Lambda, SQS, SNS and buses asynchronously with "
        "InputTransformer, RetryPolicy and DeadLetterConfig (moto: no Step Functions/Lambda "
        "targets, no retries, no DLQ).",
        test="tests/e2e/test_recovery.py::test_concurrent_redrive_moves_everything_in_one_run",
        build=_build_delivery,
        when="event_delivery",
    ),
]
