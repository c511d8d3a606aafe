"""EventBridge Scheduler schedules and EventBridge scheduled rules, fired on demand.

moto stores schedules (CreateSchedule, and ``AWS::Scheduler::Schedule`` through the shim in
stack.py) but never runs them. ``Schedules.fire(name)`` runs one schedule invocation as
Scheduler does:

* the target ``Input`` with the context attributes substituted: ``<aws.scheduler.schedule-arn>``,
  ``<aws.scheduler.scheduled-time>`` (``2026-11-21T10:00:00Z``), ``<aws.scheduler.execution-id>``,
  ``<aws.scheduler.attempt-number>`` (per attempt); without ``Input``, ``{}`` (the API reference
  says only "a default notification"; a templated Lambda, Step Functions or EventBridge target
  needs well-formed JSON, and SQS refuses an empty body);
* templated targets: SQS SendMessage, Lambda Invoke (Event), Step Functions StartExecution
  (execution name = the execution id), SNS Publish, EventBridge PutEvents; anything else
  (universal ``aws-sdk`` targets) raises ``UnsupportedTargetError``;
* failures retried per the target's ``RetryPolicy`` on the cloud's clock (throttling and 5xx),
  not retried for the rest; then the target's ``DeadLetterConfig`` queue receives the
  invocation (body: the input; for Step Functions the StartExecution request, as in seed 004)
  with ERROR_CODE (the service's error code), ERROR_MESSAGE, EXECUTION_ID,
  EXHAUSTED_RETRY_CONDITION (after retries), IS_PAYLOAD_TRUNCATED, RETRY_ATTEMPTS,
  SCHEDULED_TIME, SCHEDULE_ARN and TARGET_ARN.

``fire(..., deliveries=2)`` delivers the same run twice (same execution id and scheduled
time): Scheduler is at-least-once, and consumers must cope.

EventBridge *rules* with a ``ScheduleExpression`` (a SAM function's ``Schedule`` event, or an
``AWS::Events::Rule``) are not Scheduler schedules: moto stores them and never runs them.
``Schedules.fire_rule(name_or_arn)`` runs one firing as EventBridge does: when the rule is
ENABLED, the Scheduled Event (version "0", a new id, detail-type "Scheduled Event", source
"aws.events", account, time, region, resources [the rule's ARN], detail {}) goes to each of
its targets through the rule delivery of delivery.py (Input / InputPath / InputTransformer,
RetryPolicy, DeadLetterConfig, as events.amazonaws.com or the target's RoleArn), whatever the
rule's EventPattern; it returns the targets' ``Delivery`` records once they have ended (none
for a DISABLED rule). Nothing fires either kind on a timetable: the cloud's clock is virtual
for waits and retries only, so a test fires what the schedule would have run.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from moto.events.models import events_backends
from moto.scheduler.models import scheduler_backends

from localcloud import clients
from localcloud.features.delivery import backoff, deliver_event, queue_url
from localcloud.iam import enforcement as iam
from localcloud.runtime import Clock, Delivery, Runtime

if TYPE_CHECKING:
    from moto.events.models import Rule

__all__ = ["DEFAULT_INPUT", "Invocation", "Schedules", "UnsupportedTargetError", "render_input"]

_NOT_RETRIED = ("AccessDenied", "NotFound", "DoesNotExist", "NonExistent", "Validation", "Invalid")
#: what a target without ``Input`` receives
DEFAULT_INPUT = "{}"


class UnsupportedTargetError(RuntimeError):
    """A schedule target the local cloud cannot invoke."""


def render_input(
    template: str, *, schedule_arn: str, scheduled_time: str, execution_id: str, attempt: int
) -> str:
    """The target input with Scheduler's context attributes substituted."""
    return (
        template.replace("<aws.scheduler.schedule-arn>", schedule_arn)
        .replace("<aws.scheduler.scheduled-time>", scheduled_time)
        .replace("<aws.scheduler.execution-id>", execution_id)
        .replace("<aws.scheduler.attempt-number>", str(attempt))
    )


@dataclass
class Invocation:
    schedule_arn: str
    execution_id: str
    scheduled_time: str
    target_arn: str
    attempts: int = 0
    status: str = "PENDING"  # DELIVERED, DEAD_LETTERED, DROPPED
    error_code: str | None = None
    error_message: str | None = None
    inputs: list[str] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)


class Schedules:
    def __init__(
        self, account_id: str, region: str, clock: Clock, runtime: Runtime | None = None
    ) -> None:
        self.account_id, self.region, self.clock = account_id, region, clock
        self.runtime = runtime  # its deliveries run fire_rule's targets

    def _client(self, service: str) -> Any:
        return clients.client(service, self.region, clients.ONE_ATTEMPT)

    def fire(
        self,
        name: str,
        *,
        group: str | None = None,
        scheduled_time: dt.datetime | None = None,
        execution_id: str | None = None,
        deliveries: int = 1,
    ) -> list[Invocation]:
        """Run one invocation of schedule ``name`` (``deliveries`` times, same run), in
        ``group`` or, by default, the one group that has a schedule of that name."""
        backend = scheduler_backends[self.account_id][self.region]
        if group is None:
            groups = [g.name for g in backend.schedule_groups.values() if name in g.schedules]
            group = groups[0] if len(groups) == 1 else "default"
        schedule = backend.get_schedule(group, name)
        moment = (scheduled_time or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
        when = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        run_id = execution_id or uuid.uuid4().hex[:16]
        out = []
        for _ in range(deliveries):
            invocation = Invocation(schedule.arn, run_id, when, schedule.target["Arn"])
            self._invoke(schedule, invocation)
            out.append(invocation)
        return out

    def fire_rule(
        self,
        rule: str,
        *,
        bus: str = "default",
        scheduled_time: dt.datetime | None = None,
        timeout: float = 30.0,
    ) -> list[Delivery]:
        """Run one firing of the scheduled EventBridge rule ``rule`` (its name on ``bus``, or
        its ARN): its Scheduled Event to each target, as EventBridge does. Returns the
        targets' deliveries once they have ended; none when the rule is not ENABLED."""
        if self.runtime is None:
            raise RuntimeError("Schedules without a runtime cannot deliver rule targets")
        found = self._scheduled_rule(rule, bus)
        moment = (scheduled_time or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": found.account_id,
            "time": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": found.region_name,
            "resources": [found.arn],
            "detail": {},
        }
        deliveries = deliver_event(self.runtime, found, event, scheduled=True)
        ended = self.runtime.deliveries.wait(
            lambda: all(d.finished is not None for d in deliveries), timeout
        )
        if not ended:
            raise TimeoutError(f"rule {found.arn}: deliveries still pending after {timeout}s")
        return deliveries

    def _scheduled_rule(self, rule: str, bus: str) -> Rule:
        if rule.startswith("arn:"):  # arn:aws:events:<region>:<account>:rule/[<bus>/]<name>
            bus, _, rule = rule.split(":", 5)[5].removeprefix("rule/").rpartition("/")
            bus = bus or "default"
        backend = events_backends[self.account_id][self.region]
        found = backend.event_buses[bus].rules.get(rule) if bus in backend.event_buses else None
        if found is None:
            raise LookupError(f"no rule {rule!r} on event bus {bus!r}")
        if not found.scheduled_expression:
            raise ValueError(f"rule {found.arn} has no ScheduleExpression")
        return found

    def _invoke(self, schedule: Any, invocation: Invocation) -> None:
        target = schedule.target
        policy = target.get("RetryPolicy") or {}
        max_retries = int(policy.get("MaximumRetryAttempts", 185))
        max_age = float(policy.get("MaximumEventAgeInSeconds", 86400))
        age, exhausted, body = 0.0, None, ""
        while True:
            invocation.attempts += 1
            payload = render_input(
                str(target.get("Input") or DEFAULT_INPUT),
                schedule_arn=schedule.arn,
                scheduled_time=invocation.scheduled_time,
                execution_id=invocation.execution_id,
                attempt=invocation.attempts,
            )
            invocation.inputs.append(payload)
            try:
                with iam.acting_as(iam.role(str(target.get("RoleArn", "")), "scheduler")):
                    invocation.result = self._send(target, payload, invocation)
                invocation.status = "DELIVERED"
                return
            except ClientError as exc:
                err = exc.response.get("Error", {})
                invocation.error_code = str(err.get("Code", "ClientError"))
                invocation.error_message = str(err.get("Message", ""))
                body = payload  # Step Functions: the StartExecution request
                if ":states:" in target["Arn"]:
                    name, arn = invocation.execution_id, target["Arn"]
                    body = json.dumps({"Input": payload, "Name": name, "StateMachineArn": arn})
            if any(word in invocation.error_code for word in _NOT_RETRIED):
                break
            retries = invocation.attempts - 1
            if retries >= max_retries:
                exhausted = "MaximumRetryAttempts"
                break
            delay = backoff(retries)
            if age + delay > max_age:
                exhausted = "MaximumEventAgeInSeconds"
                break
            age += delay
            self.clock.sleep(delay)
        self._dead_letter(schedule, invocation, body, exhausted)

    def _send(self, target: dict[str, Any], payload: str, invocation: Invocation) -> dict[str, Any]:
        arn = str(target["Arn"])
        service = arn.split(":")[2]
        if service == "sqs":
            kwargs: dict[str, Any] = {"QueueUrl": queue_url(arn, {}), "MessageBody": payload}
            group = (target.get("SqsParameters") or {}).get("MessageGroupId")
            if group:
                kwargs["MessageGroupId"] = group
            return {"MessageId": self._client("sqs").send_message(**kwargs)["MessageId"]}
        if service == "lambda":
            self._client("lambda").invoke(
                FunctionName=arn, InvocationType="Event", Payload=payload.encode()
            )
            return {}
        if service == "states":
            started = self._client("stepfunctions").start_execution(
                stateMachineArn=arn, name=invocation.execution_id, input=payload
            )
            return {"executionArn": started["executionArn"]}
        if service == "sns":
            sent = self._client("sns").publish(TopicArn=arn, Message=payload)
            return {"MessageId": sent["MessageId"]}
        if service == "events":
            params = target.get("EventBridgeParameters") or {}
            entry = {
                "Source": params.get("Source", "scheduler.local"),
                "DetailType": params.get("DetailType", "Scheduled Event"),
                "Detail": payload,
                "EventBusName": arn,
            }
            return {"Entries": self._client("events").put_events(Entries=[entry])["Entries"]}
        raise UnsupportedTargetError(f"schedule target {arn} is not supported by the local cloud")

    def _dead_letter(
        self, schedule: Any, invocation: Invocation, body: str, exhausted: str | None
    ) -> None:
        dlq = (schedule.target.get("DeadLetterConfig") or {}).get("Arn")
        if not dlq:
            invocation.status = "DROPPED"
            return
        attributes = {
            "ERROR_CODE": invocation.error_code or "",
            "ERROR_MESSAGE": invocation.error_message or "",
            "EXECUTION_ID": invocation.execution_id,
            "IS_PAYLOAD_TRUNCATED": "false",
            "RETRY_ATTEMPTS": str(invocation.attempts - 1),
            "SCHEDULED_TIME": invocation.scheduled_time,
            "SCHEDULE_ARN": schedule.arn,
            "TARGET_ARN": schedule.target["Arn"],
        }
        if exhausted:
            attributes["EXHAUSTED_RETRY_CONDITION"] = exhausted
        sqs = self._client("sqs")
        url = sqs.get_queue_url(QueueName=dlq.rsplit(":", 1)[-1])["QueueUrl"]
        try:  # Scheduler writes its DLQ with the schedule's role; refused, the run is lost
            with iam.acting_as(iam.role(str(schedule.target.get("RoleArn", "")), "scheduler")):
                sqs.send_message(
                    QueueUrl=url,
                    MessageBody=body,
                    MessageAttributes={
                        k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()
                    },
                )
        except ClientError as exc:
            invocation.status = "DROPPED"
            invocation.error_message = f"{invocation.error_message}; DLQ send failed: {exc}"
            return
        invocation.status = "DEAD_LETTERED"
