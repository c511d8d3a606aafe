"""Lambda asynchronous invocation, as AWS runs it.

AWS (Lambda Developer Guide, "Asynchronous invocation", "How Lambda handles errors and
retries with asynchronous invocation", "Capturing records of Lambda asynchronous
invocations", "Dead-letter queues"):

* ``Invoke`` with ``InvocationType=Event`` queues the event and answers 202 at once; a
  separate process runs the function. S3 notifications, SNS subscriptions (protocol
  ``lambda``), EventBridge rule targets and Scheduler targets invoke functions this way;
* a function error (an exception, a timeout) is retried ``MaximumRetryAttempts`` times
  (0-2, default 2): "a one-minute wait between the first two attempts, and two minutes
  between the second and third". Throttling (429) and service errors (5xx) are retried with
  an interval growing from 1 s to 5 min, up to the event's maximum age, and are not counted
  as attempts. An event older than ``MaximumEventAgeInSeconds`` (60-21,600, default 6 h) is
  discarded (condition ``EventAgeExceeded``);
* then the *invocation record* (version, timestamp, requestContext {requestId, functionArn,
  condition RetriesExhausted|EventAgeExceeded, approximateInvokeCount}, requestPayload,
  responseContext {statusCode, executedVersion, functionError}, responsePayload) goes to the
  ``OnFailure`` destination (an SQS queue or SNS topic: the record is the message; a function:
  its asynchronous payload; an EventBridge bus: the ``detail`` of an event with source
  ``lambda`` and detail-type ``Lambda Function Invocation Result - Failure``), and the event
  itself to the function's ``DeadLetterConfig`` target ("You can configure destinations in
  addition to or instead of a dead-letter queue": both receive it), with the message
  attributes RequestID (String), ErrorCode (Number: the HTTP status) and ErrorMessage
  (String: the first 1 KB of the error message). A success sends the record (condition
  ``Success``) to ``OnSuccess``;
* those sends are made by the function's execution role (sqs:SendMessage, sns:Publish,
  lambda:InvokeFunction, events:PutEvents), which Lambda checks when the configuration is
  set (features/lambda_async_config.py). A send refused later (the policy changed) loses the
  event, as on AWS, which reports it in the ``AWS/Lambda`` metrics ``DeadLetterErrors`` /
  ``DestinationDeliveryFailures``: published here too, and recorded in the
  :class:`AsyncInvocation` (``lost``).

moto 5.2.5 runs an Event invocation synchronously (and S3/SNS call the function model
directly, which needs Docker).

Every asynchronous invocation is recorded in ``async_invocations(runtime)`` (tests wait on it
with ``drain()``). Waits are on the cloud's clock (features/clock.py): virtual by default.
Not emulated: S3 bucket destinations (refused), per-qualifier configurations (one per
function), reserved concurrency 0 sending events straight to the destinations.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import uuid
from typing import Any

from moto.awslambda.models import LambdaFunction
from moto.cloudwatch.models import cloudwatch_backends
from moto.core.exceptions import JsonRESTError
from moto.s3 import notifications as s3_notifications
from moto.sns.models import Subscription

from localcloud import clients
from localcloud.features.delivery import queue_url
from localcloud.features.lambda_async_config import arn_parts, async_settings, json_payload
from localcloud.features.lambda_runtime import (
    REQUEST_ID_HEADER,
    TENANT_HEADER,
    LocalLambdaBackend,
    request_header,
)
from localcloud.iam import enforcement as iam
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import AsyncInvocation, AsyncInvocations, Runtime

__all__ = [
    "PATCHES",
    "async_invocations",
]

LOG = logging.getLogger(__name__)
RETRY_DELAYS = (60.0, 120.0)  # after the first and the second failed attempt
THROTTLE_BACKOFF_CAP = 300.0
DETAIL_TYPE = "Lambda Function Invocation Result - "  # Success, Failure


def async_invocations(runtime: Runtime) -> AsyncInvocations:
    """The asynchronous invocations of the cloud of ``runtime``."""
    return runtime.async_invocations


# ------------------------------------------------------------------ running
def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _decoded(payload: Any) -> Any:
    text = payload.decode() if isinstance(payload, bytes) else str(payload or "")
    try:
        return json.loads(text) if text else None
    except ValueError:
        return text


def _record(item: AsyncInvocation, qualified_arn: str) -> dict[str, Any]:
    response: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
    if item.function_error:
        response["functionError"] = item.function_error
    return {
        "version": "1.0",
        "timestamp": _now(),
        "requestContext": {
            "requestId": item.request_id,
            "functionArn": qualified_arn,
            "condition": item.condition,
            "approximateInvokeCount": item.attempts,
        },
        "requestPayload": _decoded(item.payload),
        "responseContext": response,
        "responsePayload": item.response,
    }


class _Runner:
    """Runs one cloud's asynchronous invocations (in the pool of its AsyncInvocations)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt, self.log = rt, rt.async_invocations
        self._queue_urls: dict[str, str] = {}

    def submit(
        self, backend: Any, fn: LambdaFunction, qualifier: str | None, body: Any,
        tenant: str | None = None,
    ) -> str:  # fmt: skip
        payload = json_payload(body)  # refused before it is queued, as Invoke does
        item = AsyncInvocation(str(uuid.uuid4()), fn.function_name, fn.function_arn, payload)
        item.tenant_id = tenant
        self.log.submit(item, lambda i: self.run(backend, fn, qualifier, i))
        return item.request_id

    def run(self, backend: Any, fn: LambdaFunction, qualifier: str | None, item: Any) -> None:
        retries, max_age, on_success, on_failure, dead_letter = async_settings(fn)
        item.status = "RUNNING"
        self._attempts(backend, fn, qualifier, item, (retries, max_age))
        if item.condition is None:  # the cloud stopped
            return
        item.status = "SUCCEEDED" if item.condition == "Success" else "FAILED"
        record = json.dumps(_record(item, f"{fn.function_arn}:{qualifier or '$LATEST'}"))
        with iam.acting_as(iam.role(fn.role, fn.function_name)):
            if item.status == "SUCCEEDED":
                if on_success:
                    self._send(fn, item, "OnSuccess", on_success, record)
                return
            if on_failure:
                self._send(fn, item, "OnFailure", on_failure, record)
            if dead_letter:
                attributes = _attributes(item)
                self._send(fn, item, "DeadLetter", dead_letter, item.payload, attributes=attributes)
        if not on_failure and not dead_letter:
            _metric(fn, "AsyncEventsDropped")

    def _attempts(
        self, backend: Any, fn: LambdaFunction, qualifier: str | None, item: AsyncInvocation,
        limits: tuple[int, int],
    ) -> None:  # fmt: skip
        """Run the function until it succeeds, its retries are used up or the event is too
        old (``item.condition``; still None if the cloud stopped first)."""
        (retries, max_age), age, throttled = limits, 0.0, 0
        while not self.log.closed:
            headers: dict[str, str] = {}
            sent = {REQUEST_ID_HEADER: item.request_id}
            if item.tenant_id is not None:
                sent[TENANT_HEADER] = item.tenant_id
            try:
                out = _INVOKE(backend, fn.function_name, qualifier, item.payload, sent, headers)
            except JsonRESTError as exc:  # throttled / service error: not an attempt
                delay = min(THROTTLE_BACKOFF_CAP, 2.0**throttled)
                throttled += 1
                item.function_error = None
                item.response = {"errorType": exc.error_type, "errorMessage": exc.message}
                if age + delay > max_age:
                    item.condition = "EventAgeExceeded"
                    return
            else:
                item.attempts += 1
                item.response = _decoded(out)
                item.function_error = headers.get("x-amz-function-error")
                if not item.function_error:
                    item.condition = "Success"
                    return
                if item.attempts > retries:
                    item.condition = "RetriesExhausted"
                    return
                delay = RETRY_DELAYS[min(item.attempts, len(RETRY_DELAYS)) - 1]
                if age + delay >= max_age:  # older than its maximum age when retried
                    item.condition = "EventAgeExceeded"
                    return
            age += delay
            item.retry_delays.append(delay)
            self.rt.clock.sleep(delay)

    # --- sends, as the function's execution role --------------------------------------
    def _send(
        self, fn: LambdaFunction, item: AsyncInvocation, kind: str, target: str, body: str, *,
        attributes: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        """``body`` to the ``kind`` (OnSuccess, OnFailure, DeadLetter) ``target``."""
        service, region, _, _ = arn_parts(target)
        extra = {"MessageAttributes": attributes} if attributes else {}
        try:
            client = clients.client(service, region, clients.ONE_ATTEMPT)
            if service == "sqs":
                url = queue_url(target, self._queue_urls)
                sent = client.send_message(QueueUrl=url, MessageBody=body, **extra)["MessageId"]
            elif service == "sns":
                sent = client.publish(TopicArn=target, Message=body, **extra)["MessageId"]
            elif service == "lambda":
                reply = client.invoke(
                    FunctionName=target, InvocationType="Event", Payload=body.encode()
                )
                sent = str(reply["ResponseMetadata"].get("RequestId", ""))
            else:
                event = {
                    "Source": "lambda",
                    "DetailType": DETAIL_TYPE + kind.removeprefix("On"),
                    "Detail": body,
                    "Resources": [fn.function_arn, target],
                    "EventBusName": target,
                }
                entry = client.put_events(Entries=[event])["Entries"][0]
                if "ErrorCode" in entry:
                    raise RuntimeError(f"{entry['ErrorCode']}: {entry.get('ErrorMessage')}")
                sent = str(entry["EventId"])
        except Exception as exc:  # lost, as on AWS
            item.lost.append((kind, target, f"{type(exc).__name__}: {exc}"))
            _metric(
                fn, "DeadLetterErrors" if kind == "DeadLetter" else "DestinationDeliveryFailures"
            )
            return
        item.sent.append((kind, target, sent))


def _attributes(item: AsyncInvocation) -> dict[str, Any]:
    """The dead-letter message's attributes (see the module docstring)."""
    error = item.response if isinstance(item.response, dict) else {}
    message = str(error.get("errorMessage") or error.get("errorType") or item.condition)
    attributes = {
        "RequestID": ("String", item.request_id),
        "ErrorCode": ("Number", "200"),
        "ErrorMessage": ("String", message.encode()[:1024].decode(errors="ignore")),
    }
    return {k: {"DataType": t, "StringValue": v} for k, (t, v) in attributes.items()}


def _metric(fn: LambdaFunction, name: str) -> None:
    datum = {
        "MetricName": name,
        "Dimensions": [{"Name": "FunctionName", "Value": fn.function_name}],
        "Value": 1.0,
        "Unit": "Count",
        "Timestamp": dt.datetime.now(dt.UTC).replace(tzinfo=None),  # moto keeps naive UTC
    }
    try:
        cloudwatch_backends[fn.account_id][fn.region].put_metric_data("AWS/Lambda", [datum])
    except Exception:  # metrics are best effort
        LOG.exception("could not publish %s for %s", name, fn.function_name)


# ------------------------------------------------------------------ the service callers
def _invoke_as(caller: iam.Caller, function_arn: str, event: dict[str, Any]) -> None:
    """An asynchronous Invoke made by a service (S3, SNS) for one of its resources."""
    region = function_arn.split(":")[3]
    try:
        with iam.acting_as(caller):
            clients.client("lambda", region, clients.ONE_ATTEMPT).invoke(
                FunctionName=function_arn, InvocationType="Event", Payload=json.dumps(event)
            )
    except Exception:  # asynchronous for the caller: its own request still succeeds
        LOG.warning("%s could not invoke %s", caller.principal, function_arn, exc_info=True)


def _s3_invoke_lambda(account_id: str, event_body: Any, fn_arn: str, region_name: str) -> None:
    bucket = event_body["Records"][0]["s3"]["bucket"]["arn"]
    _invoke_as(iam.service("s3.amazonaws.com", bucket, account_id), fn_arn, event_body)


def _sns_event(sub: Subscription, message: str, message_id: str, subject: str | None,
               attributes: dict[str, Any] | None) -> dict[str, Any]:  # fmt: skip
    """The event SNS gives a subscribed function (Lambda Developer Guide, "Using Lambda
    with Amazon SNS")."""
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": sub.arn,
                "Sns": {
                    "Type": "Notification",
                    "MessageId": message_id,
                    "TopicArn": sub.topic.arn,
                    "Subject": subject,
                    "Message": message,
                    "Timestamp": _now(),
                    "SignatureVersion": "1",
                    "Signature": "EXAMPLE",
                    "SigningCertUrl": "EXAMPLE",
                    "UnsubscribeUrl": "EXAMPLE",
                    "MessageAttributes": {
                        k: {"Type": v["Type"], "Value": v["Value"]}
                        for k, v in (attributes or {}).items()
                    },
                },
            }
        ]
    }


_PUBLISH = Subscription.publish


def _sns_publish(  # noqa: PLR0917 - moto's Subscription.publish
    self: Subscription,
    message: str,
    message_id: str,
    subject: str | None = None,
    message_attributes: dict[str, Any] | None = None,
    group_id: str | None = None,
    deduplication_id: str | None = None,
    message_structure: str | None = None,
) -> None:
    if self.protocol != "lambda":
        return _PUBLISH(
            self, message, message_id, subject, message_attributes, group_id,
            deduplication_id, message_structure,
        )  # fmt: skip
    matcher = self._filter_policy_matcher
    if matcher is not None and not matcher.matches(message_attributes, message):
        return None
    if message_structure == "json":
        message = self._parse_message_structure(message, self.protocol)
    event = _sns_event(self, message, message_id, subject, message_attributes)
    caller = iam.service("sns.amazonaws.com", self.topic.arn, self.account_id)
    _invoke_as(caller, self.endpoint, event)
    return None


# ------------------------------------------------------------------ patches
_INVOKE = LocalLambdaBackend.invoke


def _build(rt: Runtime) -> Targets:
    runner = _Runner(rt)

    def invoke_async(  # noqa: PLR0917 - moto's LambdaBackend.invoke
        self: LocalLambdaBackend,
        function_name: str,
        qualifier: str | None,
        body: Any,
        headers: Any,
        response_headers: Any,
    ) -> str | bytes | None:
        if request_header(headers, "X-Amz-Invocation-Type") != "Event":
            return _INVOKE(self, function_name, qualifier, body, headers, response_headers)
        fn = self.get_function(function_name, qualifier)  # unknown -> ResourceNotFoundException
        if self._code(fn) is None:  # no code: moto's echo
            return _INVOKE(self, function_name, qualifier, body, headers, response_headers)
        durable = self.durable(fn, function_name, qualifier, body, headers, response_headers)
        if durable is not None:  # a durable execution runs it (features/lambda_durable.py)
            return durable
        tenant = self.tenant_of(fn, headers)  # refused at once, before the 202
        response_headers["x-amzn-RequestId"] = runner.submit(self, fn, qualifier, body, tenant)
        return b""

    rt.on_close(runner.log.shutdown)
    return {
        (LocalLambdaBackend, "invoke"): invoke_async,
        (s3_notifications, "_invoke_awslambda"): _s3_invoke_lambda,
        (Subscription, "publish"): _sns_publish,
    }


PATCHES = [
    Patch(
        name="lambda-async-invocation",
        kind=Kind.FEATURE,
        reason="Event invocations (the API, S3 notifications, SNS, rules, schedules) answer "
        "202 and run in the background with the function's retries, maximum event age, "
        "destinations and dead-letter queue, sent as its execution role (moto: synchronous, "
        "no DeadLetterConfig, S3/SNS need Docker, Put/UpdateFunctionEventInvokeConfig append).",
        test="localcloud/tests/test_lambda_async.py"
        "::test_a_failing_function_is_tried_three_times_then_dead_lettered",
        build=_build,
    ),
]
