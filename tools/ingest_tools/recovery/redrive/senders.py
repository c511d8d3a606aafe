"""Senders: put dead letters back where they failed to go, and say what each call did.

* ``put_events``: bus records, up to 10 entries a call; PutEvents answers entry by entry;
* ``to_target``: Scheduler records back to their target (SQS SendMessage, StartExecution
  under the same execution name, an asynchronous Lambda invoke, or a universal target's API
  call again);
* ``to_source_queue``: a queue's own dead letter back to the queue it came from, unchanged;
* ``source_queues``: the queues a dead-letter queue serves (ListDeadLetterSourceQueues);
* ``move_to_source_queue``: SQS's own StartMessageMoveTask for a whole queue, to its only
  source queue (an explicit ``DestinationArn``).

A sender neither deletes nor holds anything: it returns ``Sent``, ``Failed`` (may be retried)
or ``Refused`` (redrive cannot send it) for the run loop to settle.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from ingest_tools.recovery.redrive.model import DeadLetter

__all__ = [
    "PUT_EVENTS_MAX_ENTRIES",
    "BusEntry",
    "Failed",
    "PutEventsAnswer",
    "Refused",
    "Senders",
    "Sent",
    "SourceQueue",
    "error_code",
]

PUT_EVENTS_MAX_ENTRIES = 10
_MOVE_TASK_FIELDS = frozenset(
    {
        "TaskHandle",
        "Status",
        "ApproximateNumberOfMessagesMoved",
        "ApproximateNumberOfMessagesToMove",
        "FailureReason",
    }
)
# Scheduler universal targets (arn:aws:scheduler:::aws-sdk:<service>:<apiAction>) redrive can
# call again: the dead letter's body is the call's parameters.
_UNIVERSAL_TARGETS = {
    "aws-sdk:sqs:sendMessage": ("sqs", "send_message"),
    "aws-sdk:sfn:startExecution": ("sfn", "start_execution"),
}


@dataclass(frozen=True, slots=True)
class SourceQueue:
    """A queue whose RedrivePolicy names the dead-letter queue being redriven."""

    url: str
    arn: str


@dataclass(frozen=True, slots=True)
class BusEntry:
    """A dead letter and the PutEvents entry that puts it back on its bus."""

    letter: DeadLetter
    entry: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Sent:
    letter: DeadLetter
    destination: str
    sent_id: str  # event id, message id, execution ARN, ...


@dataclass(frozen=True, slots=True)
class Failed:
    letter: DeadLetter
    code: str
    text: str


@dataclass(frozen=True, slots=True)
class Refused:
    letter: DeadLetter
    reason: str


@dataclass(frozen=True, slots=True)
class PutEventsAnswer:
    results: list[Sent | Failed]  # one per entry, in order
    throttled: bool = False  # the call went through but took no entry: back off a little


class Senders:
    def __init__(
        self,
        *,
        sqs: Any,
        events: Any,
        stepfunctions: Any | None = None,
        lambda_client: Any | None = None,
    ) -> None:
        self.sqs, self.events = sqs, events
        self.sfn, self.lambda_client = stepfunctions, lambda_client

    def put_events(self, batch: Sequence[BusEntry]) -> PutEventsAnswer:
        """One PutEvents call (at most ``PUT_EVENTS_MAX_ENTRIES`` entries)."""
        try:
            answer = self.events.put_events(Entries=[b.entry for b in batch])
        except ClientError as exc:  # the whole call failed: nothing was accepted
            code = str(exc.response.get("Error", {}).get("Code", "ClientError"))
            return PutEventsAnswer([Failed(b.letter, code, str(exc)) for b in batch])
        destination = str(batch[0].entry["EventBusName"])
        results: list[Sent | Failed] = []
        for item, result in zip(batch, answer["Entries"], strict=True):
            if result.get("EventId") and not result.get("ErrorCode"):
                results.append(Sent(item.letter, destination, str(result["EventId"])))
            else:
                code, text = str(result.get("ErrorCode")), str(result.get("ErrorMessage"))
                results.append(Failed(item.letter, code, text))
        throttled = not any(isinstance(r, Sent) for r in results)
        return PutEventsAnswer(results, throttled=throttled)

    def to_target(self, letter: DeadLetter) -> Sent | Failed | Refused:
        """A Scheduler dead letter back to the schedule's target."""
        record = letter.record
        target = str(record.target_arn)
        service = target.split(":")[2] if target.count(":") >= 5 else ""
        body = record.target_input or ""
        try:
            universal = _UNIVERSAL_TARGETS.get(target.split(":::", 1)[-1])
            if target.startswith("arn:aws:scheduler:::aws-sdk:") and universal is not None:
                # A universal target: the body is the API call's parameters as sent.
                client = self.sqs if universal[0] == "sqs" else self.sfn
                if client is None:
                    raise ValueError(f"no {universal[0]} client for {target}")
                params = json.loads(body)
                if universal[0] == "sfn":  # Step Functions' API members are camelCase
                    params = {k[:1].lower() + k[1:]: v for k, v in params.items()}
                answer = getattr(client, universal[1])(**params)
                sent_id = str(answer.get("MessageId") or answer.get("executionArn"))
            elif service == "sqs":
                url = self.sqs.get_queue_url(QueueName=target.rsplit(":", 1)[-1])["QueueUrl"]
                sent_id = self.sqs.send_message(QueueUrl=url, MessageBody=body)["MessageId"]
            elif service == "states" and self.sfn is not None:
                sent_id = _start_execution(self.sfn, target, json.loads(body))
            elif service == "lambda" and self.lambda_client is not None:
                self.lambda_client.invoke(
                    FunctionName=target, InvocationType="Event", Payload=body.encode()
                )
                sent_id = "invoked"
            else:
                return Refused(letter, f"schedule target {target} is not one redrive can send to")
        except (ClientError, ValueError, KeyError) as exc:
            return Failed(letter, error_code(exc), str(exc))
        return Sent(letter, target, str(sent_id))

    def to_source_queue(self, letter: DeadLetter) -> Sent | Failed:
        """A queue's own dead letter goes back to the queue it came from, unchanged (the
        runner has put the queue's only source queue in ``target_arn`` when the message had no
        ``DeadLetterQueueSourceArn``)."""
        record = letter.record
        target = str(record.target_arn)
        try:
            _, _, _, _region, account, name = target.split(":", 5)
            url = self.sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
            kwargs: dict[str, Any] = {"QueueUrl": url, "MessageBody": record.target_input or ""}
            if record.message_attributes:
                kwargs["MessageAttributes"] = record.message_attributes
            sent_id = self.sqs.send_message(**kwargs)["MessageId"]
        except (ClientError, ValueError) as exc:
            return Failed(letter, error_code(exc), str(exc))
        return Sent(letter, target, str(sent_id))

    def source_queues(self, queue_url: str) -> list[SourceQueue]:
        """The queues whose RedrivePolicy names this queue as their dead-letter queue
        (ListDeadLetterSourceQueues, every page), with their ARNs."""
        urls: list[str] = []
        kwargs: dict[str, Any] = {"QueueUrl": queue_url, "MaxResults": 1000}
        while True:
            page = self.sqs.list_dead_letter_source_queues(**kwargs)
            urls.extend(str(url) for url in page.get("queueUrls", []))
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = page["NextToken"]
        return [
            SourceQueue(
                url,
                str(
                    self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
                        "Attributes"
                    ]["QueueArn"]
                ),
            )
            for url in urls
        ]

    def move_to_source_queue(
        self, queue_arn: str, source: SourceQueue, *, timeout: float
    ) -> dict[str, Any]:
        """SQS's own StartMessageMoveTask from this dead-letter queue to its only source
        queue, named as ``DestinationArn``: without it SQS sends each message back to its
        ``DeadLetterQueueSourceArn`` and fails the task at a message that has none (one sent
        straight to the dead-letter queue). Waits up to ``timeout`` seconds for the task and
        returns its summary."""
        started = self.sqs.start_message_move_task(SourceArn=queue_arn, DestinationArn=source.arn)
        handle = started["TaskHandle"]
        deadline = time.monotonic() + timeout
        task: dict[str, Any] = {}
        while time.monotonic() < deadline:
            tasks = self.sqs.list_message_move_tasks(SourceArn=queue_arn, MaxResults=10)
            task = next(
                (t for t in tasks.get("Results", []) if t.get("TaskHandle") == handle),
                tasks.get("Results", [{}])[0] if tasks.get("Results") else {},
            )
            if task.get("Status") not in {"RUNNING", "CANCELLING", None}:
                break
            time.sleep(0.05)
        return {k: v for k, v in task.items() if k in _MOVE_TASK_FIELDS} | {
            "TaskHandle": handle,
            "DestinationArn": source.arn,
            "SourceQueues": [source.url],
        }


def _start_execution(sfn: Any, target: str, request: dict[str, Any]) -> str:
    """StartExecution under the schedule's execution name: a second start is a no-op."""
    try:
        return str(
            sfn.start_execution(
                stateMachineArn=request.get("StateMachineArn", target),
                name=request["Name"],
                input=request.get("Input", "{}"),
            )["executionArn"]
        )
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ExecutionAlreadyExists":
            raise
        return f"already started: {request['Name']}"


def error_code(exc: Exception) -> str:
    """The AWS error code of a failed call, or the exception's type."""
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code"))
    return type(exc).__name__
