"""The state table: open object records (OpenStateIndex), escalations and the run ledger.

Object records are written by the state machine (``statemachines/pipeline.asl.json``); this
module reads them and makes the two writes the reconciler owns, both conditional:

* escalation: FAILED-retryable -> FAILED (not retryable), exactly once per attempt count;
* schedule runs: one item per schedule run, keyed ``run#<schedule ARN>`` / ``<scheduled
  time>`` (never the SQS message id, which changes on every redelivery and redrive).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from ingest_pipeline.dal.aws import aws_errors, client, is_error
from ingest_pipeline.errors import PipelineError
from ingest_pipeline.logic.reconcile import ObjectVersion, OpenRecord, iso_ms, parse_time

OPEN_STATE_INDEX = "OpenStateIndex"
_SER = TypeSerializer()
_DE = TypeDeserializer()


def _item(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: _DE.deserialize(v) for k, v in raw.items()}


def _values(values: dict[str, Any]) -> dict[str, Any]:
    return {k: _SER.serialize(v) for k, v in values.items()}


def open_record(item: dict[str, Any]) -> OpenRecord | None:
    """An OpenRecord from a deserialized item (None for items that are not object records)."""
    bucket, key, version = item.get("bucket_name"), item.get("object_key"), item.get("version_id")
    if not (bucket and key and version):
        return None
    return OpenRecord(
        object=ObjectVersion(str(bucket), str(key), str(version)),
        status=str(item.get("status", "")),
        retryable=bool(item.get("retryable", False)),
        attempt=int(item.get("attempt", 0)),
        updated_at=str(item.get("updated_at", "")),
        retry_after=parse_time(item.get("retry_after")),
        claimed_at=parse_time(item.get("claimed_at")),
        lease_seconds=int(item.get("lease_seconds", 3600)),
        execution_arn=item.get("execution_arn"),
        error_class=item.get("error_class"),
        error_code=item.get("error_code"),
    )


def query_open_items(table: str, open_state: str) -> Iterator[dict[str, Any]]:
    """Every record whose open_state is ``open_state`` (RUNNING, RETRYABLE or FAILED), with
    the attributes the index projects."""
    ddb = client("dynamodb")
    kwargs: dict[str, Any] = {
        "TableName": table,
        "IndexName": OPEN_STATE_INDEX,
        "KeyConditionExpression": "open_state = :s",
        "ExpressionAttributeValues": {":s": {"S": open_state}},
    }
    while True:
        with aws_errors(f"query {OPEN_STATE_INDEX} open_state={open_state}"):
            page = ddb.query(**kwargs)
        yield from (_item(raw) for raw in page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def query_open(table: str, open_state: str) -> Iterator[OpenRecord]:
    for item in query_open_items(table, open_state):
        record = open_record(item)
        if record is not None:
            yield record


def records_for_key(table: str, bucket: str, key: str) -> list[dict[str, Any]]:
    """Every version's record of one object key."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :v)",
        "ExpressionAttributeValues": {":pk": {"S": f"s3://{bucket}/{key}"}, ":v": {"S": "v#"}},
        "ConsistentRead": True,
    }
    while True:
        with aws_errors(f"query records of s3://{bucket}/{key}"):
            page = client("dynamodb").query(**kwargs)
        items.extend(_item(raw) for raw in page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def existing_keys(table: str, objects: Iterable[ObjectVersion]) -> set[tuple[str, str]]:
    """The (pk, sk) of those ``objects`` that have a state record (BatchGetItem, 100 a call)."""
    wanted = list({(o.pk, o.sk) for o in objects})
    found: set[tuple[str, str]] = set()
    ddb = client("dynamodb")
    for start in range(0, len(wanted), 100):
        request: dict[str, Any] = {
            table: {
                "Keys": [
                    {"pk": {"S": pk}, "sk": {"S": sk}} for pk, sk in wanted[start : start + 100]
                ],
                "ProjectionExpression": "pk, sk",
                "ConsistentRead": True,
            }
        }
        while request:
            with aws_errors("batch get state records"):
                got = ddb.batch_get_item(RequestItems=request)
            for raw in got.get("Responses", {}).get(table, []):
                found.add((raw["pk"]["S"], raw["sk"]["S"]))
            request = got.get("UnprocessedKeys") or {}
    return found


def escalate(table: str, record: OpenRecord, now: datetime, reason: str) -> bool:
    """FAILED-retryable -> FAILED, not retryable. False when another run already did it (or
    the object moved on): only the caller that gets True notifies operations."""
    try:
        with aws_errors(f"escalate {record.object.pk}"):
            client("dynamodb").update_item(
                TableName=table,
                Key={"pk": {"S": record.object.pk}, "sk": {"S": record.object.sk}},
                ConditionExpression=(
                    "#status = :failed AND retryable = :true AND attempt = :attempt"
                ),
                UpdateExpression=(
                    "SET retryable = :false, open_state = :failed, escalated_at = :now, "
                    "escalation_reason = :reason, updated_at = :now REMOVE retry_after"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=_values(
                    {
                        ":failed": "FAILED",
                        ":true": True,
                        ":false": False,
                        ":attempt": record.attempt,
                        ":now": iso_ms(now),
                        ":reason": reason,
                    }
                ),
            )
    except PipelineError as exc:
        if is_error(exc, "ConditionalCheckFailedException"):
            return False
        raise
    return True


def undo_escalation(table: str, record: OpenRecord, now: datetime) -> None:
    """Put an escalation back when operations could not be told, so the next run retries it."""
    with aws_errors(f"undo escalation of {record.object.pk}"):
        try:
            client("dynamodb").update_item(
                TableName=table,
                Key={"pk": {"S": record.object.pk}, "sk": {"S": record.object.sk}},
                ConditionExpression="escalated_at = :now",
                UpdateExpression=(
                    "SET retryable = :true, open_state = :retryable "
                    "REMOVE escalated_at, escalation_reason"
                ),
                ExpressionAttributeValues=_values(
                    {":now": iso_ms(now), ":true": True, ":retryable": "RETRYABLE"}
                ),
            )
        except ClientError as exc:
            if not is_error(exc, "ConditionalCheckFailedException"):
                raise


# --- schedule runs ------------------------------------------------------------------------


class RunClaim(StrEnum):
    CLAIMED = "CLAIMED"  # this delivery runs it
    DONE = "DONE"  # an earlier delivery finished it: skip
    IN_PROGRESS = "IN_PROGRESS"  # another delivery holds a live lease: try again later


@dataclass(frozen=True)
class RunKey:
    schedule_arn: str
    scheduled_time: str

    @property
    def key(self) -> dict[str, Any]:
        return {"pk": {"S": f"run#{self.schedule_arn}"}, "sk": {"S": self.scheduled_time}}


def claim_run(
    table: str,
    run: RunKey,
    *,
    execution_id: str,
    now: datetime,
    lease_seconds: int,
    expires_at: int,
) -> tuple[RunClaim, dict[str, Any] | None]:
    """Claim one schedule run with a conditional write: new, FAILED, or RUNNING with an
    expired lease (the Lambda that held it died)."""
    ddb = client("dynamodb")
    claimed_at = iso_ms(now)
    try:
        with aws_errors(f"claim run {run.schedule_arn} {run.scheduled_time}"):
            ddb.update_item(
                TableName=table,
                Key=run.key,
                ConditionExpression=(
                    "attribute_not_exists(pk) OR #status = :failed "
                    "OR (#status = :running AND lease_until < :now)"
                ),
                UpdateExpression=(
                    "SET #status = :running, execution_id = :execution_id, claimed_at = :now, "
                    "lease_until = :lease_until, updated_at = :now, expires_at = :expires_at, "
                    "first_claimed_at = if_not_exists(first_claimed_at, :now) "
                    "ADD claims :one REMOVE run_error"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=_values(
                    {
                        ":failed": "FAILED",
                        ":running": "RUNNING",
                        ":execution_id": execution_id,
                        ":now": claimed_at,
                        ":lease_until": iso_ms(now + timedelta(seconds=lease_seconds)),
                        ":expires_at": expires_at,
                        ":one": 1,
                    }
                ),
            )
    except PipelineError as exc:
        if not is_error(exc, "ConditionalCheckFailedException"):
            raise
        with aws_errors("record duplicate run delivery"):
            got = ddb.update_item(
                TableName=table,
                Key=run.key,
                UpdateExpression="ADD duplicate_deliveries :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
                ReturnValues="ALL_NEW",
            )
        item = _item(got.get("Attributes", {}))
        state = RunClaim.DONE if item.get("status") == "SUCCEEDED" else RunClaim.IN_PROGRESS
        return state, item
    return RunClaim.CLAIMED, {"claimed_at": claimed_at}


def finish_run(
    table: str, run: RunKey, *, claimed_at: str, now: datetime, summary: dict[str, int]
) -> None:
    with aws_errors(f"finish run {run.scheduled_time}"):
        client("dynamodb").update_item(
            TableName=table,
            Key=run.key,
            ConditionExpression="#status = :running AND claimed_at = :claimed_at",
            UpdateExpression=(
                "SET #status = :succeeded, finished_at = :now, updated_at = :now, "
                "summary = :summary"
            ),
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues=_values(
                {
                    ":running": "RUNNING",
                    ":succeeded": "SUCCEEDED",
                    ":claimed_at": claimed_at,
                    ":now": iso_ms(now),
                    ":summary": summary,
                }
            ),
        )


def fail_run(table: str, run: RunKey, *, claimed_at: str, now: datetime, error: str) -> None:
    """Best effort: a FAILED run may be claimed again by the next delivery at once; if this
    write fails too, the run's lease expires on its own."""
    with contextlib.suppress(ClientError):
        client("dynamodb").update_item(
            TableName=table,
            Key=run.key,
            ConditionExpression="#status = :running AND claimed_at = :claimed_at",
            UpdateExpression="SET #status = :failed, updated_at = :now, run_error = :error",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues=_values(
                {
                    ":running": "RUNNING",
                    ":failed": "FAILED",
                    ":claimed_at": claimed_at,
                    ":now": iso_ms(now),
                    ":error": error[:1000],
                }
            ),
        )
