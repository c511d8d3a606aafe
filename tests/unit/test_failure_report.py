from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from ingest_pipeline.errors import ErrorClass, HeaderError
from ingest_pipeline.logic.classify import classify
from ingest_pipeline.logic.failure import CaughtError, build_report, console_url
from ingest_pipeline.logic.policy import FailurePolicy

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
EXEC = "arn:aws:states:eu-west-1:123456789012:execution:Pipeline:abc"


def lambda_cause(exc: Exception) -> str:
    return json.dumps({"errorMessage": str(exc), "errorType": type(exc).__name__, "stackTrace": []})


def test_report_for_bad_data_names_line_code_and_action() -> None:
    exc = HeaderError("header does not match", line=1)
    report = build_report(
        bucket="b",
        key="incoming/orders/a b.csv",
        version_id="v1",
        error=CaughtError("HeaderError", lambda_cause(exc)),
        classification=classify("HeaderError"),
        attempt=1,
        execution_arn=EXEC,
        now=NOW,
        policy=FailurePolicy(),
        quarantine_key="quarantine/orders/a b.csv",
    )
    assert report["errorClass"] == "PERMANENT"
    assert report["code"] == "BAD_HEADER"
    assert report["retryable"] is False and report["retryAfter"] == ""
    assert report["cause"] == "HeaderError [BAD_HEADER] at line 1: header does not match"
    message = json.loads(report["message"])
    assert message["object"] == {"bucket": "b", "key": "incoming/orders/a b.csv", "versionId": "v1"}
    assert message["consoleUrl"] == console_url(EXEC)
    assert "eu-west-1.console.aws.amazon.com" in message["consoleUrl"]
    assert "quarantine/orders/a b.csv" in message["suggestedAction"]
    assert message["attempt"] == 1 and message["severity"] == "medium"
    assert len(report["subject"]) <= 100 and report["subject"].isascii()
    assert int(report["expiresAt"]) == int(NOW.timestamp()) + 90 * 86400


def test_transient_report_has_backoff_by_attempt() -> None:
    def retry_after(attempt: int) -> str:
        return build_report(
            bucket="b",
            key="incoming/orders/a.csv",
            version_id="v1",
            error=CaughtError("States.Timeout", "Task timed out"),
            classification=classify("States.Timeout"),
            attempt=attempt,
            execution_arn=EXEC,
            now=NOW,
            policy=FailurePolicy(retry_base_seconds=300, retry_max_seconds=3600),
        )["retryAfter"]

    assert retry_after(1) == "2026-11-21T12:05:00.000Z"
    assert retry_after(2) == "2026-11-21T12:10:00.000Z"
    assert retry_after(9) == "2026-11-21T13:00:00.000Z"  # capped


def test_foreign_error_cause_is_kept_verbatim() -> None:
    report = build_report(
        bucket="b",
        key="incoming/orders/a.csv",
        version_id=None,
        error=CaughtError("States.Permissions", "not authorized to invoke"),
        classification=classify("States.Permissions"),
        attempt=2,
        execution_arn=EXEC,
        now=NOW,
        policy=FailurePolicy(),
    )
    assert report["errorClass"] == str(ErrorClass.CONFIGURATION)
    assert report["code"] == "States.Permissions"
    assert "not authorized to invoke" in report["cause"]
    assert "ingestctl reprocess" in report["suggestedAction"]
    assert report["severity"] == "high"


def test_long_non_ascii_subject_is_trimmed() -> None:
    report = build_report(
        bucket="b",
        key="incoming/orders/" + "\u00e9" * 300 + ".csv",
        version_id="v",
        error=CaughtError("HeaderError", "x"),
        classification=classify("HeaderError"),
        attempt=1,
        execution_arn=EXEC,
        now=NOW,
        policy=FailurePolicy(),
    )
    assert len(report["subject"]) == 100 and report["subject"].isascii()
