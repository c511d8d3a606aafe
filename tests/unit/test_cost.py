"""Express pricing in ``ingest_tools.cost``: billed duration, memory and USD from a history.

The histories are built by hand in GetExecutionHistory's event shape (type, id,
previousEventId, timestamp, *EventDetails), with known timestamps, so every figure below is
worked out by hand from the us-east-1 list prices.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ingest_tools.cost import (
    EXPRESS_MEMORY_MB,
    PRICES,
    execution_duration_ms,
    express_billed_ms,
    express_memory_estimate_mb,
    measure,
)
from ingest_tools.local_pipeline import Execution

T0 = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
PROCESS = "ingest-ProcessFunction"


def _event(event_id: int, previous: int, at_ms: float, kind: str, **details: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "id": event_id,
        "previousEventId": previous,
        "timestamp": T0 + timedelta(milliseconds=at_ms),
        "type": kind,
    }
    event.update(details)
    return event


def happy_history(end_ms: float = 177) -> list[dict[str, Any]]:
    """Identity check, claim (DynamoDB), process (Lambda, 1024 MB, 53 ms), record; the last
    event at ``end_ms``."""
    payload = json.dumps({"object": {"bucket": "b", "key": "k", "versionId": "v"}})
    lambda_call = {
        "resourceType": "lambda",
        "resource": "invoke",
        "parameters": json.dumps(
            {"FunctionName": f"arn:aws:lambda:us-east-1:1:function:{PROCESS}"}
        ),
    }
    return [
        _event(1, 0, 0, "ExecutionStarted", executionStartedEventDetails={"input": payload}),
        _event(2, 1, 0, "ChoiceStateEntered", stateEnteredEventDetails={"name": "Check"}),
        _event(3, 2, 12, "ChoiceStateExited", stateExitedEventDetails={"name": "Check"}),
        _event(4, 3, 12, "TaskStateEntered", stateEnteredEventDetails={"name": "Claim"}),
        _event(
            5,
            4,
            22,
            "TaskScheduled",
            taskScheduledEventDetails={"resourceType": "dynamodb", "resource": "updateItem"},
        ),
        _event(6, 5, 22, "TaskStarted"),
        _event(7, 6, 67, "TaskSucceeded"),
        _event(8, 7, 72, "TaskStateExited", stateExitedEventDetails={"name": "Claim"}),
        _event(9, 8, 72, "TaskStateEntered", stateEnteredEventDetails={"name": "Process"}),
        _event(10, 9, 76, "TaskScheduled", taskScheduledEventDetails=lambda_call),
        _event(11, 10, 76, "TaskStarted"),
        _event(12, 11, 129, "TaskSucceeded"),
        _event(13, 12, 136, "TaskStateExited", stateExitedEventDetails={"name": "Process"}),
        _event(14, 13, 138, "TaskStateEntered", stateEnteredEventDetails={"name": "Record"}),
        _event(
            15,
            14,
            150,
            "TaskScheduled",
            taskScheduledEventDetails={"resourceType": "dynamodb", "resource": "updateItem"},
        ),
        _event(16, 15, 150, "TaskStarted"),
        _event(17, 16, 176, "TaskSucceeded"),
        _event(18, 17, end_ms, "TaskStateExited", stateExitedEventDetails={"name": "Record"}),
        _event(19, 18, end_ms, "ExecutionSucceeded", executionSucceededEventDetails={}),
    ]


def _measure(history: list[dict[str, Any]], **kwargs: Any) -> Any:
    run = Execution(
        arn="arn", status="SUCCEEDED", output={}, error=None, cause=None, history=history
    )
    return measure("Happy path", run, {PROCESS: 1024}, Counter({"GetObject": 1}), **kwargs)


def test_the_express_prices_are_the_us_east_1_list_prices() -> None:
    assert PRICES["express_request"] * 1e6 == pytest.approx(1.00)
    assert PRICES["express_gb_second"] == 0.00001667
    # The Step Functions workshop's form of the same price: $0.0000001042 per 100 ms at 64 MB.
    assert 0.1 * 64 / 1024 * PRICES["express_gb_second"] == pytest.approx(0.0000001042, rel=1e-3)
    assert EXPRESS_MEMORY_MB == 64


@pytest.mark.parametrize(
    ("duration_ms", "billed"),
    [
        (0, 100),  # at least one increment
        (1, 100),
        (100, 100),
        (100.0000000001, 100),  # float noise of a timedelta is not another increment
        (100.5, 200),
        (177, 200),
        (3177, 3200),
    ],
)
def test_the_billed_duration_is_rounded_up_to_100_ms(duration_ms: float, billed: int) -> None:
    assert express_billed_ms(duration_ms) == billed


def test_the_duration_runs_from_execution_started_to_the_last_event() -> None:
    history = happy_history(end_ms=177)
    assert execution_duration_ms(history) == pytest.approx(177)
    # As read from CloudWatch Logs: ISO timestamps, events not in order.
    shuffled = [{**e, "timestamp": e["timestamp"].isoformat()} for e in reversed(history)]
    assert execution_duration_ms(shuffled) == pytest.approx(177)


def test_a_177_ms_run_bills_200_ms_at_64_mb() -> None:
    cost = _measure(happy_history(end_ms=177))
    assert cost.duration_ms == pytest.approx(177)
    assert cost.express_requests == 1
    assert cost.express_billed_ms == 200
    assert cost.express_gb_seconds == pytest.approx(0.2 * 64 / 1024)  # 0.0125
    # $1.00 per million requests + 0.0125 GB-s x $0.00001667 x 1e6 = $0.208375
    assert cost.per_million_express["Step Functions"] == pytest.approx(1.208375)
    assert cost.per_million["Step Functions"] == pytest.approx(4 * 25.0)  # 4 transitions


def test_only_the_step_functions_part_differs_between_the_workflow_types() -> None:
    cost = _measure(happy_history())
    standard, express = cost.per_million, cost.per_million_express
    assert standard.keys() == express.keys()
    for service in standard.keys() - {"Step Functions"}:
        assert express[service] == standard[service]
    # Lambda: 1 request ($0.20/M) + 53 ms x 1 GB x $0.0000133334 x 1e6
    assert express["Lambda"] == pytest.approx(0.20 + 0.053 * 0.0000133334 * 1e6)
    assert express["DynamoDB"] == pytest.approx(2 * 0.625)


def test_waits_the_history_does_not_show_are_billed() -> None:
    """The local cloud's virtual clock runs retry backoff at once: 3,000 ms of it are added
    to the 177 ms the timestamps show, billed as 3,200 ms."""
    cost = _measure(happy_history(end_ms=177), waits_ms=3000)
    assert cost.express_billed_ms == 3200
    assert cost.per_million_express["Step Functions"] == pytest.approx(
        1.00 + 3.2 * 64 / 1024 * 0.00001667 * 1e6  # $4.334
    )


def test_the_memory_estimate_of_our_workflow_is_one_64_mb_chunk() -> None:
    """50 MB + a 45,000-byte definition + the largest state payload."""
    history = happy_history()
    payload = len(history[0]["executionStartedEventDetails"]["input"])
    estimate = express_memory_estimate_mb(45_000, history)
    assert estimate == pytest.approx(50 + (45_000 + payload) / 1024**2)
    assert estimate <= EXPRESS_MEMORY_MB
