"""Malformed events to any Lambda get a typed InvalidEventError naming the bad fields."""

from __future__ import annotations

from typing import Any

import pytest

from ingest_pipeline.errors import InvalidEventError
from ingest_pipeline.handlers import classify_error, process, quarantine
from tests.support import load_event

pytestmark = pytest.mark.unit


class Context:
    function_name = "test"
    memory_limit_in_mb = 128
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:test"
    aws_request_id = "req-1"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Test")


@pytest.mark.parametrize("module", [process, classify_error, quarantine])
@pytest.mark.parametrize("event", [{}, [], "text", {"object": {"bucket": "b"}}, {"state": 1}])
def test_malformed_events_raise_invalid_event(module: Any, event: Any) -> None:
    with pytest.raises(InvalidEventError) as info:
        module.handler(event, Context())
    assert info.value.code == "INVALID_EVENT"


def test_sample_invalid_event_names_each_field() -> None:
    with pytest.raises(InvalidEventError) as info:
        process.handler(load_event("process/invalid-event.json"), Context())
    assert "object.key" in str(info.value) and "attempt" in str(info.value)


def test_classify_sample_event_gives_a_report() -> None:
    report = classify_error.handler(load_event("classify-error/states-timeout.json"), Context())
    assert report["errorClass"] == "TRANSIENT" and report["retryAfter"]
