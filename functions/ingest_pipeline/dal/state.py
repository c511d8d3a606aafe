"""The state table: open object records (OpenStateIndex), escalations and the run ledger.

Object records are written by the state machine (``statemachines/pipeline.asl.yaml``); this
module reads them and makes the two writes the reconciler owns, both conditional. Their key
and attribute names are defined once, in ``ingest_pipeline.models`` (``Attr``, ``RunAttr``):

* escalation: FAILED-retryable -> FAILED (not retryable), exactly once per attempt count;
* schedule runs: one item per schedule run, keyed ``run#<schedule ARN>`` / ``<scheduled
  time>`` (never the SQS message id, which changes on every redelivery and redrive).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError
from msgspec import Struct

from ingest_pipeline.dal.aws import aws_errors, client, is_error
from ingest_pipeline.errors import PipelineError
from ingest_pipeline.models import (
    OPEN_STATE_INDEX,
    RUN_PK_FORMAT,
    SK_PREFIX,
    Attr,
    ObjectVersion,
    OpenRecord,
    OpenState,
    RunAttr,
    Status,
    iso_ms,
    parse_time,
    state_pk,
)

_SER = TypeSerializer()
_DE = TypeDeserializer()


def _item(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: _DE.deserialize(v) for k, v in raw.items()}


def _values(values: dict[str, Any]) -> dict[str, Any]:
    return {k: _SER.serialize(v) for k, v in values.items()}


def open_record(item: dict[str, Any]) -> OpenRecord | None:
    """An OpenRecord from a deserialized item (None for items that are not object records)."""
    bucket, key = item.get(Attr.BUCKET_NAME), item.get(Attr.OBJECT_KEY)
    version = item.get(Attr.VERSION_ID)
    if not (bucket and key and version):
        return None
    return OpenRecord(
        object=ObjectVersion(str(bucket), str(key), str(version)),
        status=str(item.get(Attr.STATUS, "")),
        retryable=bool(item.get(Attr.RETRYABLE, False)),
        attempt=int(item.get(Attr.ATTEMPT, 0)),
        updated_at=str(item.get(Attr.UPDATED_AT, "")),
        retry_after=parse_time(item.get(Attr.RETRY_AFTER)),
        claimed_at=parse_time(item.get(Attr.CLAIMED_AT)),
        lease_seconds=int(item.get(Attr.LEASE_SECONDS, 3600)),
        execution_arn=item.get(Attr.EXECUTION_ARN),
        error_class=item.get(Attr.ERROR_CLASS),
        error_code=item.get(Attr.ERROR_CODE),
    )


def query_open_items(table: str, open_state: str) -> Iterator[dict[str, Any]]:
    """Every record whose open_state is ``open_state`` (RUNNING, RETRYABLE or FAILED), with
    the attributes the index projects."""
    ddb = client("dynamodb")
    kwargs: dict[str, Any] = {
        "TableName": table,
        "IndexName": OPEN_STATE_INDEX,
        "KeyConditionExpression": f"{Attr.OPEN_STATE} = :s",
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
    pk = state_pk(bucket, key)
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": f"{Attr.PK} = :pk AND begins_with({Attr.SK}, :v)",
        "ExpressionAttributeValues": {":pk": {"S": pk}, ":v": {"S": SK_PREFIX}},
        "ConsistentRead": True,
    }
    while True:
        with aws_errors(f"query records of {pk}"):
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
                    {Attr.PK: {"S": pk}, Attr.SK: {"S": sk}}
                    for pk, sk in wanted[start : start + 100]
                ],
                "ProjectionExpression": f"{Attr.PK}, {Attr.SK}",
                "ConsistentRead": True,
            }
        }
        while request:
            with aws_errors("batch get state records"):
                got = ddb.batch_get_item(RequestItems=request)
            for raw in got.get("Responses", {}).get(table, []):
                found.add((raw[Attr.PK]["S"], raw[Attr.SK]["S"]))
            request = got.get("UnprocessedKeys") or {}
    return found


def escalate(table: str, record: OpenRecord, now: datetime, reason: str) -> bool:
    """FAILED-retryable -> FAILED, not retryable. False when another run already did it (or
    the object moved on): only the caller that gets True notifies operations."""
    try:
        with aws_errors(f"escalate {record.object.pk}"):
            client("dynamodb").update_item(
                TableName=table,
                Key=record.object.key_item,
                ConditionExpression=(
                    f"#status = :failed AND {Attr.RETRYABLE} = :true AND {Attr.ATTEMPT} = :attempt"
                ),
                UpdateExpression=(
                    f"SET {Attr.RETRYABLE} = :false, {Attr.OPEN_STATE} = :open_failed, "
                    f"{Attr.ESCALATED_AT} = :now, {Attr.ESCALATION_REASON} = :reason, "
                    f"{Attr.UPDATED_AT} = :now REMOVE {Attr.RETRY_AFTER}"
                ),
                ExpressionAttributeNames={"#status": Attr.STATUS},
                ExpressionAttributeValues=_values(
                    {
                        ":failed": Status.FAILED,
                        ":open_failed": OpenState.FAILED,
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
                Key=record.object.key_item,
                ConditionExpression=f"{Attr.ESCALATED_AT} = :now",
                UpdateExpression=(
                    f"SET {Attr.RETRYABLE} = :true, {Attr.OPEN_STATE} = :retryable "
                    f"REMOVE {Attr.ESCALATED_AT}, {Attr.ESCALATION_REASON}"
                ),
                ExpressionAttributeValues=_values(
                    {":now": iso_ms(now), ":true": True, ":retryable": OpenState.RETRYABLE}
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


class RunKey(Struct, frozen=True):
    schedule_arn: str
    scheduled_time: str

    @property
    def key(self) -> dict[str, Any]:
        return {
            RunAttr.PK: {"S": RUN_PK_FORMAT.format(self.schedule_arn)},
            RunAttr.SK: {"S": self.scheduled_time},
        }


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
                    f"attribute_not_exists({RunAttr.PK}) OR #status = :failed "
                    f"OR (#status = :running AND {RunAttr.LEASE_UNTIL} < :now)"
                ),
                UpdateExpression=(
                    f"SET #status = :running, {RunAttr.EXECUTION_ID} = :execution_id, "
                    f"{RunAttr.CLAIMED_AT} = :now, {RunAttr.LEASE_UNTIL} = :lease_until, "
                    f"{RunAttr.UPDATED_AT} = :now, {RunAttr.EXPIRES_AT} = :expires_at, "
                    f"{RunAttr.FIRST_CLAIMED_AT} = if_not_exists({RunAttr.FIRST_CLAIMED_AT}, :now) "
                    f"ADD {RunAttr.CLAIMS} :one REMOVE {RunAttr.RUN_ERROR}"
                ),
                ExpressionAttributeNames={"#status": RunAttr.STATUS},
                ExpressionAttributeValues=_values(
                    {
                        ":failed": Status.FAILED,
                        ":running": Status.RUNNING,
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
                UpdateExpression=f"ADD {RunAttr.DUPLICATE_DELIVERIES} :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
                ReturnValues="ALL_NEW",
            )
        item = _item(got.get("Attributes", {}))
        done = item.get(RunAttr.STATUS) == Status.SUCCEEDED
        return (RunClaim.DONE if done else RunClaim.IN_PROGRESS), item
    return RunClaim.CLAIMED, {RunAttr.CLAIMED_AT: claimed_at}


def finish_run(
    table: str, run: RunKey, *, claimed_at: str, now: datetime, summary: dict[str, int]
) -> None:
    with aws_errors(f"finish run {run.scheduled_time}"):
        client("dynamodb").update_item(
            TableName=table,
            Key=run.key,
            ConditionExpression=f"#status = :running AND {RunAttr.CLAIMED_AT} = :claimed_at",
            UpdateExpression=(
                f"SET #status = :succeeded, {RunAttr.FINISHED_AT} = :now, "
                f"{RunAttr.UPDATED_AT} = :now, {RunAttr.SUMMARY} = :summary"
            ),
            ExpressionAttributeNames={"#status": RunAttr.STATUS},
            ExpressionAttributeValues=_values(
                {
                    ":running": Status.RUNNING,
                    ":succeeded": Status.SUCCEEDED,
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
            ConditionExpression=f"#status = :running AND {RunAttr.CLAIMED_AT} = :claimed_at",
            UpdateExpression=(
                f"SET #status = :failed, {RunAttr.UPDATED_AT} = :now, {RunAttr.RUN_ERROR} = :error"
            ),
            ExpressionAttributeNames={"#status": RunAttr.STATUS},
            ExpressionAttributeValues=_values(
                {
                    ":running": Status.RUNNING,
                    ":failed": Status.FAILED,
                    ":claimed_at": claimed_at,
                    ":now": iso_ms(now),
                    ":error": error[:1000],
                }
            ),
        )
