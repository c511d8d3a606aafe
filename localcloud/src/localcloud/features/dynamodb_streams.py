"""DynamoDB Streams event source mappings that poll the stream like Lambda does.

moto 5.2 hands each new stream record to ``LambdaBackend.send_dynamodb_items`` inside the
write (``StreamShard.add``, dynamodb/models/table.py), which invokes the function through
``LambdaFunction.invoke`` (Docker: "error running docker"), and empties the shard when that
succeeds. The ``dynamodb-stream-event-source-mappings`` patch makes ``StreamShard.add`` only
append moto's ``StreamRecord`` (the stream keeps its records, GetRecords reads them all), and
notes on each mapping of the table that has no position yet where ``LATEST`` starts: the
records written after the mapping was created.

:class:`StreamMappings` (polled by ``EventSourceMappings``, so ``drain()`` and
``cloud.settle()`` cover it) reads each enabled mapping's stream from its checkpoint with the
function's execution role - DescribeStream, GetShardIterator, GetRecords on the stream ARN,
as Lambda does (the role needs them: SAM attaches AWSLambdaDynamoDBExecutionRole) - drops
the records no ``FilterCriteria`` pattern matches (moto's EventBridge matcher, the syntax
Lambda's filters use), and invokes the function (RequestResponse) with up to
``BatchSize`` records, in stream order, one batch at a time per stream (the shard is blocked
while a batch fails). Then:

* success: the checkpoint moves past the batch. With ``ReportBatchItemFailures`` a response
  naming ``batchItemFailures`` moves it to the first failed ``itemIdentifier`` (a sequence
  number) and the rest is retried; an unknown or empty identifier fails the whole batch;
* failure: the batch is retried (at once on the virtual clock, on the next poll in real
  time), halved each time with ``BisectBatchOnFunctionError``; when ``MaximumRetryAttempts``
  (-1: unlimited) are spent or a record is older than ``MaximumRecordAgeInSeconds``, the
  invocation record with ``DDBStreamBatchInfo`` goes to ``DestinationConfig.OnFailure`` (SQS
  or SNS, sent as the function's role) and the checkpoint moves past the batch.

``MaximumBatchingWindowInSeconds`` is waited for (times the clock's scale) in real time; on
the virtual clock the window has passed at once. Not emulated: ParallelizationFactor
(batches of a shard run one at a time, which keeps the per-key order it guarantees),
TumblingWindowInSeconds, the 6 MB payload limit, the stream's 24-hour retention.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from moto.awslambda.utils import get_backend
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.models.table import StreamRecord, StreamShard
from moto.events.models import EventPattern

from localcloud import clients
from localcloud.features.delivery import queue_url
from localcloud.iam import enforcement as iam
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Clock, Runtime

__all__ = ["PATCHES", "StreamMappings", "reported_failures"]

LOG = logging.getLogger(__name__)
#: where a mapping's LATEST starts (a sequence number), kept on moto's EventSourceMapping
_START = "_localcloud_stream_start"


def _stream_mappings(account_id: str, region: str) -> list[Any]:
    mappings = get_backend(account_id, region)._event_source_mappings.values()
    return [esm for esm in mappings if ":dynamodb:" in esm.event_source_arn]


def _end(shard: StreamShard) -> int:
    return int(shard.starting_sequence_number) + len(shard.items)


def _build(rt: Runtime) -> Targets:
    def add(self: StreamShard, old: Item | None, new: Item | None) -> None:
        view = self.table.stream_specification["StreamViewType"]  # type: ignore[index]
        name = "INSERT" if old is None else "REMOVE" if new is None else "MODIFY"
        seq = _end(self)
        prefix = f"{self.table.table_arn}/stream/"
        for esm in _stream_mappings(self.account_id, self.table.region_name):
            if esm.event_source_arn.startswith(prefix):
                vars(esm).setdefault(_START, seq)  # created before this record: LATEST is here
        self.items.append(StreamRecord(self.table, view, name, old, new, seq))

    return {(StreamShard, "add"): add}


PATCHES = [
    Patch(
        name="dynamodb-stream-event-source-mappings",
        kind=Kind.FEATURE,
        reason="DynamoDB stream records stay on the stream for event source mappings that poll "
        "it as Lambda does (moto invokes the function through Docker inside the write and "
        "empties the shard).",
        test="localcloud/tests/test_dynamodb_streams.py"
        "::test_the_handler_sees_inserts_modifies_and_removes_in_order",
        build=_build,
    )
]


def _value(value: Any) -> Any:
    """An AttributeValue as the SDK parsed it, back to its JSON form (binary: base64)."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


def _event_record(record: dict[str, Any], stream_arn: str, region: str) -> dict[str, Any]:
    stream = {k: _value(v) for k, v in record["dynamodb"].items()}
    if (created := _created(record)) is not None:
        stream["ApproximateCreationDateTime"] = float(int(created))
    return {
        "eventID": record["eventID"],
        "eventName": record["eventName"],
        "eventVersion": record["eventVersion"],
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": stream,
        "eventSourceARN": stream_arn,
    }


def _created(record: dict[str, Any]) -> float | None:
    """When a record read from the stream was written (epoch seconds), if it says."""
    created = record["dynamodb"].get("ApproximateCreationDateTime")
    return created.timestamp() if isinstance(created, dt.datetime) else None


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass
class _State:
    """One mapping's place in its stream."""

    position: int | None = None  # sequence number of the next record to hand over
    shard_id: str = ""
    attempts: int = 0  # failed invocations of the batch at ``position``
    limit: int | None = None  # the bisected batch size
    denied: str = ""


class StreamMappings:
    """Polls every enabled DynamoDB stream event source mapping of one account/region."""

    def __init__(self, account_id: str, region: str, clock: Clock) -> None:
        self.account_id, self.region, self.clock = account_id, region, clock
        self._streams = clients.client("dynamodbstreams", region, clients.ONE_ATTEMPT)
        self._lambda = clients.client("lambda", region, clients.ONE_ATTEMPT)
        self._states: dict[str, _State] = {}
        #: one entry per invocation: function, sequence numbers, failed ones, error
        self.invocations: list[dict[str, Any]] = []

    # --- the stream ---------------------------------------------------------------------
    def _place(self, esm: Any) -> tuple[StreamShard, _State] | None:
        """The shard of an enabled mapping's stream, and the mapping's place in it."""
        table_name = esm.event_source_arn.split(":", 5)[5].split("/")[1]
        table = dynamodb_backends[self.account_id][self.region].tables.get(table_name)
        if table is None or table.stream_shard is None or not esm.enabled:
            return None
        if not esm.event_source_arn.startswith(f"{table.table_arn}/stream/"):
            return None
        shard, state = table.stream_shard, self._states.setdefault(esm.uuid, _State())
        if state.position is None:
            if (esm.starting_position or "TRIM_HORIZON") == "LATEST":
                state.position = int(vars(esm).setdefault(_START, _end(shard)))
            else:
                state.position = int(shard.starting_sequence_number)
        return shard, state

    def _pending(self, esm: Any) -> int:
        place = self._place(esm)
        return 0 if place is None else max(0, _end(place[0]) - int(place[1].position or 0))

    def backlog(self) -> int:
        """Records not yet handed over (or given up) by mappings allowed to read them."""
        return sum(
            self._pending(esm)
            for esm in _stream_mappings(self.account_id, self.region)
            if not self._states.get(esm.uuid, _State()).denied
        )

    def poll_once(self) -> int:
        """One batch per mapping with records waiting; how many records were handed over."""
        return sum(self._poll(esm) for esm in _stream_mappings(self.account_id, self.region))

    def _window_open(self, esm: Any, shard: StreamShard, state: _State, size: int) -> bool:
        """Still gathering records for MaximumBatchingWindowInSeconds (real time only)."""
        window = float(esm.max_batch_window or 0) * self.clock.scale
        if not window or _end(shard) - int(state.position or 0) >= size:
            return False
        first = shard.items[int(state.position or 0) - int(shard.starting_sequence_number)]
        created = first.record["dynamodb"]["ApproximateCreationDateTime"]
        return bool(time.time() - created.replace(tzinfo=dt.UTC).timestamp() < window)

    def _read(self, esm: Any, state: _State, size: int) -> list[dict[str, Any]]:
        """GetRecords from the checkpoint, as the function's execution role."""
        function = get_backend(self.account_id, self.region).get_function(esm.function_arn)
        with iam.acting_as(iam.role(function.role, function.function_name)):
            if not state.shard_id:
                described = self._streams.describe_stream(StreamArn=esm.event_source_arn)
                state.shard_id = described["StreamDescription"]["Shards"][0]["ShardId"]
            iterator = self._streams.get_shard_iterator(
                StreamArn=esm.event_source_arn,
                ShardId=state.shard_id,
                ShardIteratorType="AT_SEQUENCE_NUMBER",
                SequenceNumber=str(state.position),
            )["ShardIterator"]
            records: list[dict[str, Any]] = self._streams.get_records(
                ShardIterator=iterator, Limit=size
            )["Records"]
        return records

    def _poll(self, esm: Any) -> int:
        place = self._place(esm)
        if place is None:
            return 0
        shard, state = place
        size = min(int(esm.batch_size or 100), state.limit or 10000)
        # a look at the backend, not a GetRecords: idle polling costs nothing
        if _end(shard) <= int(state.position or 0) or self._window_open(esm, shard, state, size):
            return 0
        try:
            records = self._read(esm, state, size)
        except Exception as exc:  # e.g. the role may not read the stream: nothing is handed over
            if not state.denied:
                LOG.warning("mapping %s cannot read %s: %s", esm.uuid, esm.event_source_arn, exc)
            state.denied = f"{type(exc).__name__}: {exc}"
            return 0
        state.denied = ""
        if not records:
            return 0
        matching = [r for r in records if self._matches(esm, r)]
        if not matching:  # filtered out: the checkpoint moves on, the function is not invoked
            state.position = int(records[-1]["dynamodb"]["SequenceNumber"]) + 1
            return len(records)
        self._invoke(esm, state, matching, int(records[-1]["dynamodb"]["SequenceNumber"]) + 1)
        return len(records)

    def _matches(self, esm: Any, record: dict[str, Any]) -> bool:
        filters = (esm.filter_criteria or {}).get("Filters") or []
        if not filters:
            return True
        event = _event_record(record, esm.event_source_arn, self.region)
        return any(EventPattern.load(f.get("Pattern")).matches_event(event) for f in filters)

    # --- the invocation -------------------------------------------------------------------
    def _invoke(self, esm: Any, state: _State, records: list[Any], read_end: int) -> None:
        """Hand ``records`` over; ``read_end`` follows the last record read (filtered or not)."""
        event = {"Records": [_event_record(r, esm.event_source_arn, self.region) for r in records]}
        numbers = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
        try:
            response = self._lambda.invoke(
                FunctionName=esm.function_arn,
                InvocationType="RequestResponse",
                Payload=json.dumps(event).encode(),
            )
            payload = response["Payload"].read()
            error = response.get("FunctionError")
            result = json.loads(payload) if payload else None
        except Exception as exc:  # throttled, missing function: the batch failed
            error, result = f"{type(exc).__name__}: {exc}", None
        first_failed: int | None = numbers[0] if error else None
        if not error and "ReportBatchItemFailures" in (esm.function_response_types or []):
            failed = reported_failures(
                result, lambda i: int(i) if i and str(i).isdigit() and int(i) in numbers else None
            )
            first_failed = numbers[0] if failed is None else min(failed, default=None)
        self.invocations.append(
            {
                "function": esm.function_arn,
                "sequence_numbers": [str(n) for n in numbers],
                "first_failed": None if first_failed is None else str(first_failed),
                "error": error,
            }
        )
        if first_failed is None:
            state.position, state.attempts, state.limit = read_end, 0, None
            return
        state.position = first_failed  # the records before it are done
        remaining = [r for r, n in zip(records, numbers, strict=True) if n >= first_failed]
        state.attempts += 1
        retries = esm.max_retry_attempts
        exhausted = retries is not None and int(retries) >= 0 and state.attempts > int(retries)
        created = _created(remaining[0])
        oldest = 0.0 if created is None else time.time() - created
        max_age = esm.max_record_age
        too_old = max_age is not None and int(max_age) >= 0 and oldest > int(max_age)
        if exhausted or too_old:
            condition = "RetryAttemptsExhausted" if exhausted else "RecordAgeExceeded"
            self._discard(esm, state, remaining, condition, error)
            state.position, state.attempts, state.limit = read_end, 0, None
        elif esm.bisect_on_error and error and len(records) > 1:
            state.limit = (len(records) + 1) // 2

    def _discard(
        self, esm: Any, state: _State, records: list[Any], condition: str, error: Any
    ) -> None:
        """The invocation record for the OnFailure destination (AWS: DDBStreamBatchInfo)."""
        target = ((esm.destination_config or {}).get("OnFailure") or {}).get("Destination")
        first, last = (_created(r) for r in (records[0], records[-1]))
        record = {
            "requestContext": {
                "requestId": str(uuid.uuid4()),
                "functionArn": esm.function_arn,
                "condition": condition,
                "approximateInvokeCount": state.attempts,
            },
            "responseContext": {
                "statusCode": 200,
                "executedVersion": "$LATEST",
                "functionError": error if isinstance(error, str) else "Unhandled",
            },
            "version": "1.0",
            "timestamp": _iso(time.time()),
            "DDBStreamBatchInfo": {
                "shardId": state.shard_id,
                "startSequenceNumber": records[0]["dynamodb"]["SequenceNumber"],
                "endSequenceNumber": records[-1]["dynamodb"]["SequenceNumber"],
                "approximateArrivalOfFirstRecord": _iso(time.time() if first is None else first),
                "approximateArrivalOfLastRecord": _iso(time.time() if last is None else last),
                "batchSize": len(records),
                "streamArn": esm.event_source_arn,
            },
        }
        if not target:
            return  # discarded, as on AWS without a destination
        function = get_backend(self.account_id, self.region).get_function(esm.function_arn)
        service, region = target.split(":")[2:4]
        try:
            with iam.acting_as(iam.role(function.role, function.function_name)):
                name = "sqs" if service == "sqs" else "sns"
                client = clients.client(name, region, clients.ONE_ATTEMPT)
                if service == "sqs":
                    client.send_message(
                        QueueUrl=queue_url(target, {}), MessageBody=json.dumps(record)
                    )
                else:
                    client.publish(TopicArn=target, Message=json.dumps(record))
        except Exception as exc:  # lost, as on AWS
            LOG.warning("mapping %s could not send to %s: %s", esm.uuid, target, exc)


def reported_failures(response: Any, known: Callable[[Any], Any]) -> set[Any] | None:
    """The items a ReportBatchItemFailures response names (``known``: the batch's item of an
    ``itemIdentifier``, or None); None: the whole batch failed (a malformed response, an
    unknown or empty identifier), as on AWS."""
    if response is None or response == {}:
        return set()
    if not isinstance(response, dict):
        return None
    failures = response.get("batchItemFailures")
    if failures is None:
        return set()
    if not isinstance(failures, list):
        return None
    found = set()
    for failure in failures:
        item = known(failure.get("itemIdentifier")) if isinstance(failure, dict) else None
        if item is None:
            return None
        found.add(item)
    return found
