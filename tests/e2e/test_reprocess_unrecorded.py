"""``ingestctl reprocess --key/--prefix`` also starts objects that have no state record.

Issue 29: DynamoDB throttled through every retry of the workflow's claim, so the execution
ended without a record, and the object sat under ``incoming/`` until the reconciler's
missed-object scan (after ``MissedEventGraceSeconds``). Reprocess now starts it at once, as
that scan would: same execution name and input, so the object is processed exactly once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ingest_pipeline.logic.failure import is_express_execution
from ingest_pipeline.logic.reconcile import ActionKind, execution_name
from ingest_pipeline.models import ObjectVersion
from ingest_tools import cli
from ingest_tools.local_pipeline import Pipeline
from tests.support import sample_file

pytestmark = pytest.mark.e2e

GOOD = sample_file("orders-good.csv")


def cli_json(capsys: pytest.CaptureFixture[str]) -> Any:
    """The JSON document the command printed (Lambda logs of the local cloud share stdout)."""
    out = "\n" + capsys.readouterr().out
    if out.endswith("\n[]\n"):
        return []
    start = max(out.rfind("\n{\n"), out.rfind("\n[\n"))
    return json.JSONDecoder().raw_decode(out[start + 1 :])[0]


def unrecorded_after_throttled_claim(p: Pipeline, key: str) -> str:
    """Upload ``key`` while DynamoDB throttles every UpdateItem: the execution ends and no
    state record exists. Returns the version id."""
    p.cloud.faults.fail_operation("dynamodb", "UpdateItem", "ThrottlingException", times=50)
    version, run = p.ingest(key, GOOD)
    p.cloud.settle()
    p.cloud.faults.clear()  # the throttling is over
    assert run.status != "SUCCEEDED"
    assert p.record(key, version) is None
    return version


def test_reprocess_prefix_starts_an_object_whose_claim_was_throttled(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = pipeline
    key = "incoming/orders/throttled.csv"
    version = unrecorded_after_throttled_claim(p, key)
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(p.cloud.describe()))
    command = ["reprocess", "--prefix", "incoming/orders/", "--json", "--outputs", str(outputs)]

    assert cli.main([*command, "--dry-run"]) == 0
    (row,) = cli_json(capsys)
    assert (row["key"], row["action"], row["outcome"]) == (key, "start-missed", "dry-run")
    assert "no state record" in row["reason"]
    assert len(p.executions_for(key)) == 1  # the dry run started nothing

    assert cli.main(command) == 0
    (row,) = cli_json(capsys)
    assert (row["action"], row["outcome"]) == ("start-missed", "started")
    obj = ObjectVersion(p.bucket, key, row["versionId"])
    name = execution_name(ActionKind.START_MISSED, obj)  # the reconciler's name for it
    assert name in row["executionArn"].split(":")  # Express ARNs add a uuid after it
    p.cloud.settle()
    record = p.record(key, version)
    assert record is not None and (record["status"], record["attempt"]) == ("SUCCEEDED", 1)
    assert record["trigger_source"] == "ingestctl.reprocess"

    # Again: the record now exists (SUCCEEDED, not open): nothing to start.
    assert cli.main(command) == 0
    assert cli_json(capsys) == []
    assert len(p.executions_for(key)) == 2
    # The reconciler's scan, once the grace period has passed, starts nothing either.
    p.age_object(key, 3600)
    p.reconcile()
    p.cloud.settle()
    assert len(p.executions_for(key)) == 2
    record = p.record(key, version)
    assert record is not None and (record["status"], record["attempt"]) == ("SUCCEEDED", 1)


def test_reprocess_key_and_the_reconciler_start_an_unrecorded_object_once(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = pipeline
    key = "incoming/orders/throttled-key.csv"
    version = unrecorded_after_throttled_claim(p, key)
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(p.cloud.describe()))
    command = ["reprocess", "--key", key, "--json", "--outputs", str(outputs)]

    assert cli.main(command) == 0
    (row,) = cli_json(capsys)
    assert (row["action"], row["outcome"]) == ("start-missed", "started")
    # Again at once: while that execution runs, the same name is "already started"; once it
    # has claimed the object, its record is there and nothing is started. An EXPRESS machine
    # starts a name again (AWS gives it no idempotency): before the first execution's claim,
    # a second one may start, and the claim lets only one of them process the object.
    assert cli.main(command) == 0
    rows = cli_json(capsys)
    again = {"already-started", "skipped"}
    if is_express_execution(row["executionArn"]):
        again.add("started")
    assert all(r["outcome"] in again for r in rows), rows
    p.cloud.settle()
    record = p.record(key, version)
    assert record is not None and (record["status"], record["attempt"]) == ("SUCCEEDED", 1)
    # the throttled one and the reprocess (and the concurrent EXPRESS one, if it started)
    assert len(p.executions_for(key)) == 2 + sum(r["outcome"] == "started" for r in rows)


def test_reprocess_outside_incoming_or_outside_the_lookback_starts_nothing(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = pipeline
    key = "incoming/orders/old.csv"
    unrecorded_after_throttled_claim(p, key)
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(p.cloud.describe()))
    base = ["--json", "--outputs", str(outputs), "--dry-run"]

    assert cli.main(["reprocess", "--prefix", "processed/", *base]) == 0
    assert cli_json(capsys) == []
    # Older than the lookback, its record may have expired: never started again.
    p.age_object(key, 4 * 86400)
    assert cli.main(["reprocess", "--prefix", "incoming/", *base]) == 0
    assert cli_json(capsys) == []
    assert cli.main(["reprocess", "--key", key, "--lookback", "5d", *base]) == 0
    (row,) = cli_json(capsys)
    assert (row["action"], row["outcome"]) == ("start-missed", "dry-run")
