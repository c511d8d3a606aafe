"""The Distributed Map fixes' pure rules: AWS's failure threshold and result-file splitting
(localcloud/fixes/sfn_map_tolerated_failures.py, sfn_map_result_writer.py)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from localcloud.fixes.sfn_map_result_writer import child_entry, manifest, result_files
from localcloud.fixes.sfn_map_tolerated_failures import exceeded

pytestmark = pytest.mark.unit

NEITHER, COUNT, PERCENTAGE, BOTH = (False, False), (True, False), (False, True), (True, True)


@pytest.mark.parametrize(
    ("run", "declared", "fails"),
    [
        ((0, 10, 0, 0.0), NEITHER, False),
        ((1, 10, 0, 0.0), NEITHER, True),  # no threshold declared: any failure
        ((1, 10, 0, 0.0), PERCENTAGE, True),  # ToleratedFailurePercentage 0
        ((1, 10, 0, 10.0), PERCENTAGE, False),  # 10 % is not more than 10 %
        ((2, 10, 0, 10.0), PERCENTAGE, True),
        ((1, 10, 1, 0.0), COUNT, False),  # only the count applies
        ((2, 10, 1, 0.0), COUNT, True),
        ((2, 10, 5, 10.0), BOTH, True),  # exceeding either fails
        ((2, 10, 1, 50.0), BOTH, True),
        ((1, 10, 1, 50.0), BOTH, False),
    ],
)
def test_the_tolerated_failure_threshold_is_awss(
    run: tuple[int, int, int, float], declared: tuple[bool, bool], fails: bool
) -> None:
    failed, total, count, percentage = run  # failed items of total; the declared thresholds
    assert exceeded(failed, total, count, percentage, declared) is fails


def test_result_files_split_at_the_size_limit_and_stay_json_arrays() -> None:
    entries = [{"i": i, "pad": "x" * 10} for i in range(7)]
    one = len(json.dumps(entries[0], separators=(",", ":")))
    files = list(result_files(entries, limit=2 + 3 * one + 2))  # three entries per file

    assert [len(json.loads(f)) for f in files] == [3, 3, 1]
    assert [e for f in files for e in json.loads(f)] == entries
    assert all(len(f) <= 2 + 3 * one + 2 for f in files)
    assert list(result_files([])) == []
    assert len(list(result_files(entries, limit=1))) == 7  # one entry per file at least


def test_a_child_entry_has_awss_fields() -> None:
    when = dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)
    ok = child_entry(
        map_state_machine_arn="arn:aws:states:us-east-1:1:stateMachine:sm/Label",
        name="n1",
        child_input='{"a":1}',
        status="SUCCEEDED",
        start=when,
        stop=when,
        output='{"b":2}',
    )
    assert list(ok) == sorted(ok)
    assert ok["ExecutionArn"] == "arn:aws:states:us-east-1:1:execution:sm/Label:n1"
    assert ok["Output"] == '{"b":2}' and ok["StartDate"] == "2026-01-02T03:04:05.678Z"
    assert ok["RedriveStatus"] == "NOT_REDRIVABLE"
    failed = child_entry(
        map_state_machine_arn="arn:aws:states:us-east-1:1:stateMachine:sm/Label",
        name="n2",
        child_input="{}",
        status="FAILED",
        start=when,
        stop=when,
        error="E",
        cause="C",
    )
    assert {"Output", "OutputDetails"}.isdisjoint(failed)
    assert (failed["Error"], failed["Cause"], failed["Status"]) == ("E", "C", "FAILED")
    assert json.loads(manifest("b", "arn", {})) == {
        "DestinationBucket": "b",
        "MapRunArn": "arn",
        "ResultFiles": {"FAILED": [], "PENDING": [], "SUCCEEDED": []},
    }
