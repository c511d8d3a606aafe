"""The large-file path on the real ASL and handlers (Distributed Map on the local cloud),
deployed with 1 MiB thresholds and chunks so that a few MiB make several chunks.

Each test checks what a user sees: the execution's path, the output object (byte for byte
the single-Lambda path's), the state record, the notifications."""

from __future__ import annotations

import io
import json
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ingest_pipeline.dal.contracts import register
from ingest_pipeline.logic.contracts import load_contract, parse_contract
from ingest_pipeline.logic.transform import Summary, convert
from ingest_tools.cost import measure
from ingest_tools.local_pipeline import Execution, Pipeline, local_pipeline
from tests.support import wait_for

pytestmark = pytest.mark.statemachine

KEY = "incoming/orders/2026/11/23/large.csv"
HEADER = "order_id,customer_id,amount,currency,quantity,ordered_at,gift"
# The per-object execution hands the object over; the large-object execution does the work.
# ProcessObject raises SplitRequiredError; its first Catch starts the large-object workflow.
HANDOFF = ["ClaimObject", "ProcessObject", "StartLargeObjectWorkflow", "EndAsHandedOver"]
LARGE = [
    "TakeOverClaim",
    "SplitObject",
    "ProcessChunks",
    "AssembleOutput",
    "ChooseAssemblyOutcome",
    "RecordSuccess",
]


@pytest.fixture(scope="module")
def pipeline() -> Iterator[Pipeline]:
    with local_pipeline(
        parameters={"LargeObjectThresholdMiB": "1", "LargeObjectChunkMiB": "1"}
    ) as running:
        yield running


def orders(count: int, *, customer: str = "c-{n}", newline: str = "\n", bad: int = 0) -> bytes:
    """``count`` orders rows after the header; row ``bad`` (1-based) has a bad amount."""
    rows = [HEADER]
    for n in range(1, count + 1):
        amount = "12.5x" if n == bad else f"{n % 1000}.25"
        rows.append(
            f"o-{n},{customer.format(n=n)},{amount},EUR,{n % 9 + 1},2026-11-21T07:55:00+00:00,false"
        )
    return (newline.join(rows) + newline).encode()


def ingest_large(pipeline: Pipeline, body: bytes) -> tuple[str, Execution]:
    """Upload ``body``: its per-object execution hands it over; the large-object execution."""
    version, handoff = pipeline.ingest(KEY, body, timeout=120)
    assert handoff.status == "SUCCEEDED" and handoff.path == HANDOFF, handoff.path
    return version, pipeline.handed_over_to(handoff, timeout=120)


def single_path_output(body: bytes) -> bytes:
    """What ProcessObject would write for ``body`` (the same transform, one pass)."""
    summary = Summary(dataset="orders")
    return b"".join(convert(io.BytesIO(body), load_contract("orders"), summary))


def chunk_count(pipeline: Pipeline, arn: str) -> int:
    """How many chunks the execution's plan had (SplitObject's result in its history)."""
    history = pipeline.sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    for event in history:
        details = event.get("taskSucceededEventDetails") or {}
        output = json.loads(details.get("output") or "{}")
        payload = output.get("Payload") or {}
        if "chunkCount" in payload:
            return int(payload["chunkCount"])
    raise AssertionError("no SplitObject result in the history")


def test_several_chunks_make_the_single_paths_output(pipeline: Pipeline) -> None:
    body = orders(60_000)  # about 4.4 MiB: 4 or 5 chunks
    version, handoff = pipeline.ingest(KEY, body, timeout=120)
    # handed over by SplitRequiredError, no Choice: 4 billed transitions, nothing retried
    assert handoff.status == "SUCCEEDED" and handoff.path == HANDOFF
    assert measure("handoff", handoff, {}, Counter()).transitions == 4
    assert handoff.invocations("invoke") == 1
    run = pipeline.handed_over_to(handoff, timeout=120)
    assert run.status == "SUCCEEDED", run.cause
    assert run.path == LARGE
    assert chunk_count(pipeline, run.arn) >= 4
    assert pipeline.read(pipeline.output_key(KEY)) == single_path_output(body)
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["status"], record["outcome"], record["row_count"], record["bytes_in"]) == (
        "SUCCEEDED",
        "PROCESSED",
        60_000,
        len(body),
    )
    assert record["sha256"].startswith("parts:")
    assert (record["execution_arn"], record["handed_over_by"]) == (run.arn, handoff.arn)
    assert pipeline.keys(f"work/{run.arn.rsplit(':', 1)[-1]}/") == []  # working files gone


def test_quoted_newlines_across_chunk_cuts(pipeline: Pipeline) -> None:
    # Every customer id holds line breaks inside quotes: cuts land inside them.
    body = orders(30_000, customer='"c-{n}\nfloor 2\nbuilding B"')
    _, run = ingest_large(pipeline, body)
    assert run.status == "SUCCEEDED", run.cause
    assert pipeline.read(pipeline.output_key(KEY)) == single_path_output(body)


def test_crlf_lines_and_a_bom(pipeline: Pipeline) -> None:
    body = b"\xef\xbb\xbf" + orders(50_000, newline="\r\n")
    _, run = ingest_large(pipeline, body)
    assert run.status == "SUCCEEDED", run.cause
    output = pipeline.read(pipeline.output_key(KEY))
    assert output == single_path_output(body)
    assert json.loads(output.splitlines()[0])["order_id"] == "o-1"


def test_a_bad_value_in_the_last_chunk_quarantines_the_object_with_its_line(
    pipeline: Pipeline,
) -> None:
    body = orders(60_000, bad=60_000)
    version, run = ingest_large(pipeline, body)
    assert run.status == "FAILED"
    assert run.path[-5:] == [
        "AssembleOutput",
        "QuarantineObject",
        "RecordRejection",
        "NotifyDataQuality",
        "FailExecution",
    ]
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["error_class"], record["error_code"]) == ("PERMANENT", "BAD_VALUE")
    assert "line 60001" in record["error_cause"]  # the header is line 1
    assert pipeline.read(record["quarantine_key"]) == body
    sent = pipeline.notifications("DataQualityTopicArn")[-1]
    assert "60001" in json.dumps(sent["message"])


def test_a_duplicate_during_a_running_large_execution_is_absorbed(pipeline: Pipeline) -> None:
    assemble = pipeline.functions["AssembleOutputFunction"]
    calls = pipeline.cloud.invocation_count(assemble)
    gate = pipeline.cloud.faults.gate(assemble, invocation=calls + 1, timeout=60)
    body = orders(30_000)
    version = pipeline.put(KEY, body)
    execution_input = pipeline.rule_input(pipeline.s3_event(KEY, version))
    first = pipeline.start(execution_input)
    wait_for(gate.entered.is_set, what="the large execution to reach AssembleOutput", timeout=60)

    duplicate = pipeline.wait(pipeline.start(execution_input))
    gate.release()
    done = pipeline.handed_over_to(pipeline.wait(first, timeout=60), timeout=60)

    assert duplicate.status == "SUCCEEDED"
    assert duplicate.path == ["ClaimObject", "SkipDuplicateObject"]
    assert done.status == "SUCCEEDED" and done.path == LARGE
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["status"], record["execution_arn"], record["handed_over_by"]) == (
        "SUCCEEDED",
        done.arn,
        first,
    )
    assert record["attempt"] == 1
    assert pipeline.read(pipeline.output_key(KEY)) == single_path_output(body)


def test_a_stale_large_execution_is_fenced_off(pipeline: Pipeline) -> None:
    assemble = pipeline.functions["AssembleOutputFunction"]
    calls = pipeline.cloud.invocation_count(assemble)
    gate = pipeline.cloud.faults.gate(assemble, invocation=calls + 1, timeout=60)
    body = orders(30_000)
    version = pipeline.put(KEY, body)
    stale_input = pipeline.rule_input(pipeline.s3_event(KEY, version))
    stale = pipeline.start(stale_input)
    wait_for(gate.entered.is_set, what="the large execution to reach AssembleOutput", timeout=60)

    # Its lease is declared expired: a takeover claims the object and runs it to the end.
    takeover_input = dict(stale_input)
    cutoff = (datetime.now(UTC) + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    takeover_input["request"] = {"reprocess": False, "staleBefore": cutoff}
    takeover = pipeline.handed_over_to(pipeline.wait(pipeline.start(takeover_input)), 60)
    gate.release()
    fenced = pipeline.handed_over_to(pipeline.wait(stale), timeout=60)

    assert takeover.status == "SUCCEEDED" and takeover.path == LARGE
    assert fenced.status == "FAILED" and fenced.error == "ClaimLost"
    assert fenced.path == [*LARGE, "FailClaimLost"]
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["status"], record["execution_arn"], record["attempt"]) == (
        "SUCCEEDED",
        takeover.arn,
        2,
    )
    assert pipeline.read(pipeline.output_key(KEY)) == single_path_output(body)


def test_a_chunk_failure_is_raised_by_its_name_and_routed_by_the_taxonomy(
    pipeline: Pipeline,
) -> None:
    """An AccessDenied in one chunk (after its child execution's catch) fails the object as
    a configuration problem, as it would on the single-Lambda path."""
    from ingest_pipeline.errors import AccessDeniedError

    chunk = pipeline.functions["ProcessChunkFunction"]
    calls = pipeline.cloud.invocation_count(chunk)
    pipeline.cloud.fail_next(
        "ProcessChunkFunction", AccessDeniedError("AccessDenied on GetObject"), times=1
    )
    version, run = ingest_large(pipeline, orders(30_000))
    assert run.status == "FAILED"
    assert run.error == "AccessDeniedError"
    assert run.path[-5:] == [
        "AssembleOutput",
        "DescribeConfigurationFailure",
        "RecordConfigurationFailure",
        "NotifyOperations",
        "FailExecution",
    ]
    assert pipeline.cloud.invocation_count(chunk) > calls
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["error_class"], record["error_code"]) == ("CONFIGURATION", "ACCESS_DENIED")
    assert record["retryable"] is False


def test_a_cut_inside_a_quoted_field_of_record_like_lines_is_planned_again(
    pipeline: Pipeline,
) -> None:
    """A quoted field holds lines that parse as orders rows and spans the 1 MiB cut: the
    plan's guess starts inside it, the chunk before ends past it, AssembleOutput plans
    again (REALIGN) and the second round makes the single path's output."""
    lines = orders(20_000).decode().splitlines(keepends=True)
    fake = "".join(lines[1:9_000])  # about 470 KiB of valid-looking rows
    rows = lines[:12_000]
    rows[11_999] = rows[11_999].replace("c-11999", f'"{fake}"')
    body = "".join(rows + lines[12_000:]).encode()
    assert body.index(b'"o-1,') < 1024 * 1024 < body.index(b'false\n"')  # spans the cut
    _, run = ingest_large(pipeline, body)
    assert run.status == "SUCCEEDED", run.cause
    assert "UseRealignedPlan" in run.path
    assert run.path.count("ProcessChunks") == 2
    assert pipeline.read(pipeline.output_key(KEY)) == single_path_output(body)


@pytest.mark.parametrize(
    "published",
    [
        "aws-docs-s3-object-created.json",  # AWS docs: S3 EventBridge "Object Created"
        "powertools-s3EventBridgeNotificationObjectCreatedEvent.json",  # no version-id
    ],
)
def test_a_published_object_created_event_for_a_large_object(
    pipeline: Pipeline, published: str
) -> None:
    """The published event, through the rule's InputTransformer, with only our bucket, key,
    version and size put in: the object takes the large-file path to its output."""
    samples = Path(__file__).parents[1] / "conformance" / "samples"
    event = json.loads((samples / published).read_text())
    body = orders(30_000)
    version = pipeline.put(KEY, body)
    event["detail"]["bucket"]["name"] = pipeline.bucket
    event["detail"]["object"].update({"key": KEY, "size": len(body)})
    if "version-id" in event["detail"]["object"]:
        event["detail"]["object"]["version-id"] = version
    handoff = pipeline.wait(pipeline.start(pipeline.rule_input(event)), timeout=120)
    assert handoff.path[-4:] == HANDOFF[-4:]
    run = pipeline.handed_over_to(handoff, timeout=120)
    assert run.status == "SUCCEEDED", run.cause
    assert run.path == LARGE
    record = pipeline.record(KEY, version)
    assert record is not None
    assert (record["status"], record["row_count"]) == ("SUCCEEDED", 30_000)
    assert pipeline.read(pipeline.output_key(KEY)) == single_path_output(body)


def test_a_registered_contract_and_its_processor_apply_to_every_chunk(pipeline: Pipeline) -> None:
    """A dataset registered at run time whose contract names a processor (mask_emails): the
    chunks of a large file go through the processor, as the single path's file would
    (logic/processing.py). A version registered while SplitObject is held (after the claim)
    changes nothing for this object: every function of one claim uses the version current at
    the claim (dal/contracts.py), and the record says 1."""
    columns = [
        {"name": "contact_id", "type": "string"},
        {"name": "email", "type": "string", "required": False},
        {"name": "signed_up", "type": "date"},
    ]
    text = json.dumps({"dataset": "contacts", "processor": "mask_emails", "columns": columns})
    contract = parse_contract(text)
    assert register(pipeline.bucket, contract, text) == 1
    rows = [f"C-{n},person{n}@example.com,2026-11-02" for n in range(40_000)]
    body = ("contact_id,email,signed_up\n" + "\n".join(rows) + "\n").encode()  # 1.4 MiB
    key = "incoming/contacts/large.csv"
    split = pipeline.functions["SplitObjectFunction"]
    gate = pipeline.cloud.faults.gate(
        split, invocation=pipeline.cloud.invocation_count(split) + 1, timeout=60
    )
    version, handoff = pipeline.ingest(key, body, timeout=120)
    assert handoff.path == HANDOFF, handoff.path
    assert gate.entered.wait(30), "SplitObject was not invoked"
    second = int(time.time())  # S3 keeps a version's time to the second
    assert pipeline.cloud.runtime.wait_until(lambda: int(time.time()) > second, timeout=3)
    unmasked = json.dumps({"dataset": "contacts", "columns": columns})
    assert register(pipeline.bucket, parse_contract(unmasked), unmasked) == 2
    gate.release()
    run = pipeline.handed_over_to(handoff, timeout=120)
    assert run.status == "SUCCEEDED", run.cause
    assert chunk_count(pipeline, run.arn) >= 2
    expected = b"".join(convert(io.BytesIO(body), contract, Summary(dataset="contacts")))
    assert pipeline.read(pipeline.output_key(key)) == expected
    assert b'"email":"p***@example.com"' in expected[:200]
    record = pipeline.record(key, version)
    assert record is not None
    assert (record["contract_version"], record["row_count"]) == (1, 40_000)
