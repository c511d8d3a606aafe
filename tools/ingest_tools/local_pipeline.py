"""A running local pipeline: the deployed template plus the verbs tests and scripts use.

Executions are inspected the way their type allows on AWS. A STANDARD execution through
DescribeExecution and GetExecutionHistory. An EXPRESS one (an ``:express:`` ARN) has neither
(fixes/sfn_express_executions.py): its end is read from the backend (no API call) and its
history from its state machine's CloudWatch Logs group (execution_history.py), as the console
shows it, so ``Execution.history`` holds only what the state machine's log level and
``includeExecutionData`` log (Level ALL with data: the whole history).
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from ingest_pipeline.logic import keys
from ingest_pipeline.models import state_pk, state_sk
from ingest_tools import ROOT, STACK_NAME, TEMPLATE
from localcloud.clients import client
from localcloud.cloud import LOCAL_ENV, MOTO_CONFIG, REGION, LocalCloud
from localcloud.console.extensions import ConsoleExtensions, NotFound
from localcloud.execution_history import details_key, log_group_name, logged_history
from localcloud.features import executions
from localcloud.features.transformer import apply_input_transformer
from localcloud.fixes.sfn_express_executions import is_express_execution_arn
from localcloud.runtime import Delivery

__all__ = [
    "LOCAL_ENV",
    "MOTO_CONFIG",
    "REGION",
    "ROOT",
    "STACK_NAME",
    "TEMPLATE",
    "Execution",
    "Pipeline",
    "app_cloud",
    "console_extensions",
    "local_pipeline",
    "wait_execution",
]
EVENTS = ROOT / "events"
# The events that end an execution: the last of a logged history, when the level logs it.
_END_EVENTS = ("ExecutionSucceeded", "ExecutionFailed", "ExecutionAborted", "ExecutionTimedOut")


@dataclass
class Execution:
    """An ended execution: GetExecutionHistory's events (``history``) and DescribeExecution's
    outcome; for an EXPRESS execution, the events its state machine logged and the outcome
    its logged end event gives (see the module docstring)."""

    arn: str
    status: str
    output: dict[str, Any] | None
    error: str | None
    cause: str | None
    history: list[dict[str, Any]]

    @property
    def path(self) -> list[str]:
        """State names in the order they were entered."""
        return [
            e["stateEnteredEventDetails"]["name"]
            for e in self.history
            if e["type"].endswith("StateEntered")
        ]

    def invocations(self, resource: str) -> int:
        return sum(
            1
            for e in self.history
            if e["type"] == "TaskScheduled"
            and e["taskScheduledEventDetails"]["resource"] == resource
        )


def wait_execution(
    cloud: LocalCloud,
    arn: str,
    timeout: float = 20.0,
    *,
    sfn: Any = None,
    logs: Any = None,
) -> Execution:
    """Wait for an execution of any stack of ``cloud`` to end; its history and outcome.

    STANDARD: the backend's status until it has ended, then DescribeExecution and
    GetExecutionHistory. EXPRESS (an
    ``:express:`` ARN): the backend's status (no API call; AWS has no DescribeExecution for
    it), then the events its state machine logged to CloudWatch Logs (the group of its
    loggingConfiguration, filtered by ``execution_arn``); output, error and cause are those
    of the logged end event, so None when the level or ``includeExecutionData`` leave them
    out, and the history is empty for a state machine that logs nothing."""
    sfn = sfn or client("stepfunctions", cloud.region)
    if is_express_execution_arn(arn):
        return _wait_express(cloud, arn, timeout, sfn, logs or client("logs", cloud.region))
    # the backend's status while it runs (no API call per wake-up), then the API's answers
    if not cloud.runtime.wait_until(lambda: executions.ended(arn), timeout):
        raise TimeoutError(f"timed out after {timeout}s waiting for execution {arn}")
    described = sfn.describe_execution(executionArn=arn)
    history = sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    output = described.get("output")
    return Execution(
        arn=arn,
        status=described["status"],
        output=json.loads(output) if output else None,
        error=described.get("error"),
        cause=described.get("cause"),
        history=history,
    )


def _wait_express(cloud: LocalCloud, arn: str, timeout: float, sfn: Any, logs: Any) -> Execution:
    found = cloud.runtime.wait_until(lambda: executions.ended(arn), timeout)
    if not found:
        raise TimeoutError(f"timed out after {timeout}s waiting for execution {arn}")
    status = str(getattr(found.exec_status, "value", found.exec_status))
    parts = arn.split(":")
    machine = f"{':'.join(parts[:5])}:stateMachine:{parts[6]}"
    described = sfn.describe_state_machine(stateMachineArn=machine)
    group = log_group_name(described.get("loggingConfiguration"))
    history = logged_history(logs, group, arn) if group else []
    end = history[-1] if history and history[-1]["type"] in _END_EVENTS else None
    details = end.get(details_key(end["type"]), {}) if end else {}
    output = details.get("output")
    return Execution(
        arn=arn,
        status=str(status),
        output=json.loads(output) if output else None,
        error=details.get("error"),
        cause=details.get("cause"),
        history=history,
    )


class Pipeline:
    """The deployed stack plus the verbs the tests use."""

    def __init__(self, cloud: LocalCloud) -> None:
        assert cloud.stack is not None, "start the cloud first"
        self.cloud = cloud
        self.stack = stack = cloud.stack
        # the local cloud's clients (localcloud.clients: one per process, not per cloud)
        self.s3, self.sfn = client("s3", REGION), client("stepfunctions", REGION)
        self.ddb, self.sqs = client("dynamodb", REGION), client("sqs", REGION)
        self.sns, self.events = client("sns", REGION), client("events", REGION)
        self.logs = client("logs", REGION)
        self.bucket = stack.outputs["IngestBucketName"]
        self.state_machine = stack.outputs["PipelineStateMachineArn"]
        self.table = stack.outputs["ObjectStateTableName"]
        self.functions = stack.functions
        self._runs = 0
        self._inboxes = {
            topic: self._subscribe(stack.outputs[topic])
            for topic in ("OperationsTopicArn", "DataQualityTopicArn")
        }

    # --- S3 and the rule's input ------------------------------------------------------
    def put(self, key: str, body: bytes) -> str:
        return str(self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)["VersionId"])

    def s3_event(self, key: str, version_id: str) -> dict[str, Any]:
        event = json.loads((EVENTS / "eventbridge" / "s3-object-created.json").read_text())
        event["id"] = str(uuid.uuid4())
        event["detail"]["bucket"]["name"] = self.bucket
        event["detail"]["object"].update({"key": key, "version-id": version_id})
        event["detail"]["object"].pop("sequencer", None)  # the sample's: not this write's
        return dict(event)

    def rule_input(self, event: dict[str, Any]) -> dict[str, Any]:
        """The state machine input exactly as the template's rule target would build it."""
        rule_arn = self.stack.outputs["ObjectCreatedRuleArn"]
        rule_name = rule_arn.rsplit("/", 1)[-1]
        (target,) = self.events.list_targets_by_rule(Rule=rule_name)["Targets"]
        return dict(json.loads(apply_input_transformer(event, target["InputTransformer"])))

    # --- executions -------------------------------------------------------------------
    def start(self, execution_input: dict[str, Any], name: str | None = None) -> str:
        return str(
            self.sfn.start_execution(
                stateMachineArn=self.state_machine,
                name=name or uuid.uuid4().hex,
                input=json.dumps(execution_input),
            )["executionArn"]
        )

    def wait(self, arn: str, timeout: float = 20.0) -> Execution:
        """Wait for the execution to end; its history and outcome (see ``wait_execution``)."""
        return wait_execution(self.cloud, arn, timeout, sfn=self.sfn, logs=self.logs)

    def handed_over_to(self, run: Execution, timeout: float = 20.0) -> Execution:
        """The large-object execution that ``run`` (a per-object execution ended in
        EndAsHandedOver) started, once it has ended."""
        handoff = (run.output or {}).get("handoff") or {}
        if not run.path or run.path[-1] != "EndAsHandedOver" or "executionArn" not in handoff:
            raise AssertionError(f"{run.arn} did not hand its object over: {run.path}")
        return self.wait(str(handoff["executionArn"]), timeout)

    def ingest(self, key: str, body: bytes, timeout: float = 20.0) -> tuple[str, Execution]:
        """Upload and run the workflow to the end. With event delivery on, S3 -> EventBridge
        -> the rule starts it; otherwise the rule's input is built and started here."""
        version = self.put(key, body)
        if self.cloud.event_delivery:
            delivery = self.delivery(key, version, timeout=timeout)
            if delivery.execution_arn is None:
                raise AssertionError(
                    f"s3://{self.bucket}/{key} was not delivered: {delivery.status} "
                    f"{delivery.error_code} {delivery.error_message}"
                )
            return version, self.wait(delivery.execution_arn, timeout)
        return version, self.wait(self.start(self.rule_input(self.s3_event(key, version))), timeout)

    def deliveries_for(self, key: str, version_id: str | None = None) -> list[Delivery]:
        """EventBridge deliveries of this object's events (any rule, any target)."""

        def matches(d: Delivery) -> bool:
            obj = d.event.get("detail", {}).get("object", {})
            return obj.get("key") == key and (
                version_id is None or obj.get("version-id") == version_id
            )

        return self.cloud.deliveries.find(matches)

    def delivery(self, key: str, version_id: str | None = None, timeout: float = 20.0) -> Delivery:
        """The (first) finished delivery of this object's event; TimeoutError otherwise."""
        done = self.cloud.deliveries.wait(
            lambda: [d for d in self.deliveries_for(key, version_id) if d.finished is not None],
            timeout,
        )
        if not done:
            raise TimeoutError(
                f"no EventBridge delivery for s3://{self.bucket}/{key} in {timeout}s"
            )
        return done[0]

    def wait_all(self, arns: list[str], timeout: float = 60.0) -> dict[str, str]:
        """Wait for many executions, Standard or Express (backend status, no API calls);
        arn -> final status."""
        pending = set(arns)
        final: dict[str, str] = {}

        def done() -> bool:  # one pass over the backend's executions per wake-up
            for arn, status in executions.execution_statuses().items():
                if arn in pending and status != "RUNNING":
                    final[arn] = status
                    pending.discard(arn)
            return not pending

        if not self.cloud.runtime.wait_until(done, timeout):
            raise TimeoutError(f"{len(pending)} executions still running after {timeout}s")
        return final

    # --- observations -----------------------------------------------------------------
    def record(self, key: str, version_id: str) -> dict[str, Any] | None:
        item = self.ddb.get_item(
            TableName=self.table,
            Key={"pk": {"S": state_pk(self.bucket, key)}, "sk": {"S": state_sk(version_id)}},
            ConsistentRead=True,
        ).get("Item")
        if item is None:
            return None
        deserializer = TypeDeserializer()
        return {k: deserializer.deserialize(v) for k, v in item.items()}

    def read(self, key: str) -> bytes:
        return bytes(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())

    def output_key(self, key: str, suffix: str = ".jsonl") -> str:
        """The output of ``key``'s current version (under the UTC date it landed)."""
        landed = self.s3.head_object(Bucket=self.bucket, Key=key)["LastModified"]
        return keys.output_key(key, keys.ingest_date(landed), suffix)

    def versions(self, key: str) -> int:
        listed = self.s3.list_object_versions(Bucket=self.bucket, Prefix=key)
        return sum(1 for v in listed.get("Versions", []) if v["Key"] == key)

    def keys(self, prefix: str) -> list[str]:
        listed = self.s3.list_objects_v2(Bucket=self.bucket, Prefix=prefix)
        return [o["Key"] for o in listed.get("Contents", [])]

    def notifications(self, topic: str) -> list[dict[str, Any]]:
        """SNS messages sent to ``OperationsTopicArn`` or ``DataQualityTopicArn`` so far."""
        queue_url = self._inboxes[topic]
        out: list[Any] = []
        while True:
            got = self.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
            messages = got.get("Messages", [])
            if not messages:
                return out
            for message in messages:
                envelope = json.loads(message["Body"])
                out.append(
                    {
                        "subject": envelope.get("Subject"),
                        "message": json.loads(envelope["Message"]),
                        "attributes": {
                            k: v["Value"] for k, v in envelope.get("MessageAttributes", {}).items()
                        },
                    }
                )
                self.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])

    # --- reconciliation -----------------------------------------------------------------
    @property
    def reconcile_schedule(self) -> str:
        return self.stack.outputs["ReconcileScheduleArn"].rsplit("/", 1)[-1]

    def reconcile(
        self,
        scheduled_time: dt.datetime | None = None,
        *,
        deliveries: int = 1,
        timeout: float = 30.0,
    ) -> str:
        """Fire the reconcile schedule (``deliveries`` times, one run), wait until the run's
        messages are consumed and every execution it started has ended. Returns the run's
        scheduled time (the run record's sort key)."""
        assert self.cloud.schedules is not None and self.cloud.mappings is not None
        if scheduled_time is None:  # the next distinct run (15 minutes apart, as deployed)
            self._runs += 1
            start = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
            scheduled_time = start + dt.timedelta(minutes=15 * self._runs)
        fired = self.cloud.schedules.fire(
            self.reconcile_schedule, scheduled_time=scheduled_time, deliveries=deliveries
        )
        self.cloud.mappings.drain(timeout)
        self.cloud.settle(timeout)
        return fired[0].scheduled_time

    def run_record(self, scheduled_time: str) -> dict[str, Any] | None:
        schedule_arn = self.stack.outputs["ReconcileScheduleArn"]
        item = self.ddb.get_item(
            TableName=self.table,
            Key={"pk": {"S": f"run#{schedule_arn}"}, "sk": {"S": scheduled_time}},
            ConsistentRead=True,
        ).get("Item")
        deserializer = TypeDeserializer()
        return {k: deserializer.deserialize(v) for k, v in item.items()} if item else None

    def set_record(self, key: str, version_id: str, **values: Any) -> None:
        """Overwrite attributes of a state record (arranging "time has passed", e.g.
        ``retry_after`` or ``claimed_at`` in the past)."""
        serializer = TypeSerializer()
        names = {f"#a{i}": name for i, name in enumerate(values)}
        self.ddb.update_item(
            TableName=self.table,
            Key={"pk": {"S": state_pk(self.bucket, key)}, "sk": {"S": state_sk(version_id)}},
            UpdateExpression="SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(values))),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues={
                f":v{i}": serializer.serialize(v) for i, v in enumerate(values.values())
            },
        )

    def age_object(self, key: str, seconds: float) -> None:
        """Make the current version of ``key`` look ``seconds`` older (moto's LastModified)."""
        from moto.s3.models import s3_backends

        bucket = s3_backends[self.cloud.account_id]["aws"].get_bucket(self.bucket)
        current = bucket.keys.getlist(key)[-1]
        current.last_modified = current.last_modified - dt.timedelta(seconds=seconds)

    def abort_while_processing(self, key: str, body: bytes) -> tuple[str, Any]:
        """Upload ``key`` and abort its execution while ProcessFunction runs: the claim stays
        RUNNING with nothing recorded, as when an execution dies. Returns (version, execution).

        A STANDARD execution is stopped with StopExecution. An EXPRESS one cannot be stopped
        on AWS (StopExecution refuses it): it is stopped through the backend
        (``executions.abort``), the test-only lever that simulates a lost execution."""
        process = self.functions["ProcessFunction"]
        gate = self.cloud.faults.gate(process, invocation=self.cloud.invocation_count(process) + 1)
        version = self.put(key, body)
        assert gate.entered.wait(10), "ProcessFunction was not invoked"
        (execution,) = self.executions_for(key)
        if is_express_execution_arn(execution.exec_arn):
            executions.abort(execution.exec_arn, error="Lost", cause="aborted")
        else:
            self.sfn.stop_execution(executionArn=execution.exec_arn, error="Lost", cause="aborted")
        gate.release()
        self.cloud.settle()
        return version, execution

    def executions_for(self, key: str) -> list[Any]:
        """Every execution, Standard or Express (moto's objects: ``.name``, ``.exec_arn``,
        ``.input_data``, ``.exec_status``), whose input names ``key``, oldest first."""
        found = [
            e
            for e in executions.executions()
            if isinstance(e.input_data, dict) and e.input_data.get("object", {}).get("key") == key
        ]
        return sorted(found, key=lambda e: e.start_date)

    def _subscribe(self, topic_arn: str) -> str:
        name = "inbox-" + topic_arn.rsplit(":", 1)[-1][-40:]
        url = self.sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        self.sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=arn)
        return str(url)


@contextmanager
def local_pipeline(
    template: Path = TEMPLATE,
    *,
    event_delivery: bool = False,
    parameters: dict[str, str] | None = None,
) -> Iterator[Pipeline]:
    """A started LocalCloud and its driver. ``event_delivery=False`` (state machine tests):
    uploads start nothing, the test starts executions with the rule's input. ``parameters``
    override the template's parameters, as ``sam deploy --parameter-overrides`` does."""
    with app_cloud(template, event_delivery=event_delivery, parameters=parameters) as cloud:
        yield Pipeline(cloud)


def app_cloud(template: Path = TEMPLATE, **kwargs: Any) -> LocalCloud:
    """A LocalCloud of this app's template and stack name (not started), with the app's
    console pages (``console_extensions``)."""
    kwargs.setdefault("stack_name", STACK_NAME)
    kwargs.setdefault("console", console_extensions())
    return LocalCloud(template, **kwargs)


# --- the console's application pages (localcloud/console/extensions.py) -------------------
# The dead-letter queues `ingestctl redrive` empties: EventBridge's and Scheduler's, which AWS
# cannot redrive itself (an SQS queue's DLQ keeps the console's start-message-move-task).
REDRIVEN_QUEUES = ("EventDeliveryDLQ", "ReconcileScheduleDLQ")
MAX_OBJECT_ROWS = 200


def console_extensions(outputs_file: str | None = None) -> ConsoleExtensions:
    """The console's "Objects" page (state records by object key) and the ``ingestctl
    redrive`` command of the stack's rule and schedule dead-letter queues. ``outputs_file``:
    the ``--outputs`` file of ``ingestctl local up``, which the command then names; without
    it the command names the queue, the endpoint and the ledger table itself."""

    def redrive(cloud: LocalCloud, queue_arn: str) -> str | None:
        outputs = cloud.outputs
        name = queue_arn.rsplit(":", 1)[-1]
        for queue in REDRIVEN_QUEUES:
            if outputs.get(f"{queue}Url", "").rsplit("/", 1)[-1] != name:
                continue
            if outputs_file:
                return f"ingestctl redrive {queue} --outputs {shlex.quote(outputs_file)}"
            endpoint = cloud.describe()["endpoint"] or "http://127.0.0.1:4566"
            return (
                f"ingestctl redrive {shlex.quote(name)} --endpoint-url {shlex.quote(endpoint)}"
                f" --ledger-table {shlex.quote(outputs['ObjectStateTableName'])}"
            )
        return None

    return ConsoleExtensions(redrive=redrive, objects=_console_objects, object=_console_object)


def _plain(value: Any) -> Any:
    """A DynamoDB value as JSON: numbers as int/float, sets as sorted lists."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, set | frozenset):
        return sorted(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return value


def _records(cloud: LocalCloud, **request: Any) -> Iterator[dict[str, Any]]:
    if "ObjectStateTableName" not in cloud.outputs or "IngestBucketName" not in cloud.outputs:
        raise NotFound("this stack has no ObjectStateTableName / IngestBucketName output")
    ddb = client("dynamodb", cloud.region)
    deserializer = TypeDeserializer()
    operation = "query" if "KeyConditionExpression" in request else "scan"
    pages = ddb.get_paginator(operation).paginate(
        TableName=cloud.outputs["ObjectStateTableName"], **request
    )
    for page in pages:
        for item in page.get("Items", []):
            yield {k: _plain(deserializer.deserialize(v)) for k, v in item.items()}


def _console_objects(cloud: LocalCloud, query: str) -> list[dict[str, Any]]:
    """Object keys whose state records' key contains ``query`` (case-insensitive), one row
    a key: its latest version's status and error code, how many versions it has."""
    records = list(_records(cloud))
    bucket = cloud.outputs["IngestBucketName"]
    prefix = state_pk(bucket, "")
    wanted = query.casefold()
    by_key: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        pk, sk = str(record.get("pk", "")), str(record.get("sk", ""))
        if not pk.startswith(prefix) or not sk.startswith(state_sk("")):
            continue
        key = pk[len(prefix) :]
        if wanted in key.casefold():
            by_key.setdefault(key, []).append(record)
    rows = []
    for key, records in by_key.items():
        latest = max(records, key=_record_time)
        rows.append(
            {
                "key": key,
                "versions": len(records),
                "status": latest.get("status"),
                "error_code": latest.get("error_code"),
                "updated_at": latest.get("updated_at") or latest.get("first_seen_at"),
            }
        )
    rows.sort(key=lambda row: str(row["updated_at"] or ""), reverse=True)
    return rows[:MAX_OBJECT_ROWS]


def _record_time(record: dict[str, Any]) -> str:
    return str(record.get("updated_at") or record.get("first_seen_at") or "")


_RECORD_FIELDS = (
    "version_id",
    "status",
    "outcome",
    "error_code",
    "error_cause",
    "output_key",
    "quarantine_key",
    "contract_version",
    "dataset",
    "row_count",
    "attempt",
    "first_seen_at",
    "updated_at",
    "execution_arn",
)


def _console_object(cloud: LocalCloud, key: str) -> dict[str, Any]:
    """Every version's state record of ``key``, its output and quarantine keys, each
    quarantine's reason (``<quarantine key>.reason.json``) and links to the executions."""
    bucket = cloud.outputs.get("IngestBucketName", "")
    records = sorted(
        _records(
            cloud,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": state_pk(bucket, key)}},
        ),
        key=_record_time,
    )
    if not records:
        raise NotFound(f"no state record for s3://{bucket}/{key}")
    s3 = client("s3", cloud.region)
    reasons: dict[str, Any] = {}
    for record in records:
        quarantined = record.get("quarantine_key")
        if isinstance(quarantined, str) and quarantined not in reasons:
            try:
                body = s3.get_object(Bucket=bucket, Key=f"{quarantined}.reason.json")["Body"]
                text = body.read().decode("utf-8", "replace")
            except s3.exceptions.NoSuchKey:
                reasons[quarantined] = None
                continue
            try:
                reasons[quarantined] = json.loads(text)
            except ValueError:
                reasons[quarantined] = text
    arns = [r["execution_arn"] for r in records if isinstance(r.get("execution_arn"), str)]
    return {
        "key": key,
        "bucket": bucket,
        "outputKeys": [r["output_key"] for r in records if r.get("output_key")],
        "quarantineKeys": list(reasons),
        "quarantineReason": next(reversed(reasons.values()), None) if reasons else None,
        "quarantineReasons": reasons if len(reasons) > 1 else None,
        "links": [
            {"text": f"execution {arn.rsplit(':', 1)[-1]}", "href": _execution_href(arn)}
            for arn in dict.fromkeys(arns)
        ],
        "records": [
            {field: record.get(field) for field in _RECORD_FIELDS if field in record}
            for record in records
        ],
    }


def _execution_href(arn: str) -> str:
    from urllib.parse import quote

    return "#/execution/" + quote(arn, safe="")
