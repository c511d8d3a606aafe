"""Failure reports: what the state machine records and what on-call people are sent."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from ingest_pipeline.errors import ErrorClass
from ingest_pipeline.logic.classify import Classification, classify
from ingest_pipeline.logic.policy import FailurePolicy

if TYPE_CHECKING:
    from ingest_pipeline.models import FailureRequest

_OWN_MESSAGE = re.compile(r"^\[(?P<code>[A-Z0-9_]+)\] (?:line (?P<line>\d+): )?(?P<text>.*)$", re.S)
MAX_CAUSE_CHARS = 2000
MAX_SUBJECT_CHARS = 100

SEVERITY = {
    ErrorClass.PERMANENT: "medium",
    ErrorClass.CONFIGURATION: "high",
    ErrorClass.TRANSIENT: "low",
}


class CaughtError(Struct, frozen=True):
    """A Step Functions caught error: ``{"Error": ..., "Cause": ...}``."""

    name: str
    cause: str

    @property
    def message(self) -> str:
        """The human message: Lambda's ``errorMessage`` when the cause is Lambda's JSON."""
        try:
            parsed = json.loads(self.cause)
        except ValueError:
            return self.cause
        if isinstance(parsed, dict) and isinstance(parsed.get("errorMessage"), str):
            return str(parsed["errorMessage"])
        return self.cause

    def code_and_line(self) -> tuple[str, int | None, str]:
        match = _OWN_MESSAGE.match(self.message)
        if match:
            line = match.group("line")
            return match.group("code"), int(line) if line else None, match.group("text")
        return self.name, None, self.message


def is_express_execution(execution_arn: str) -> bool:
    """``arn:aws:states:<region>:<account>:express:<machine>:<name>:<id>``: an execution of an
    Express workflow (no DescribeExecution, history or redrive; its record is all there is)."""
    parts = execution_arn.split(":")
    return len(parts) > 5 and parts[5] == "express"


def console_url(execution_arn: str) -> str:
    """The execution's page in the Step Functions console (an Express execution's page reads
    its CloudWatch Logs)."""
    parts = execution_arn.split(":")
    region = parts[3] if len(parts) > 3 and parts[3] else "us-east-1"
    page = "express-executions" if is_express_execution(execution_arn) else "v2/executions"
    return (
        f"https://{region}.console.aws.amazon.com/states/home?region={region}"
        f"#/{page}/details/{execution_arn}"
    )


def suggested_action(
    error_class: ErrorClass, code: str, key: str, quarantine_key: str | None, retry_after: str
) -> str:
    if error_class is ErrorClass.PERMANENT:
        if code == "OBJECT_NOT_FOUND":
            return (
                "The object was deleted before it was processed: "
                "upload it again if it is still needed."
            )
        where = f" The rejected file is kept at {quarantine_key}." if quarantine_key else ""
        return (
            f"Fix the file as the cause says and upload the corrected file to {key} "
            f"(a new version is processed automatically).{where}"
        )
    if error_class is ErrorClass.CONFIGURATION:
        return (
            "Fix the deployment as the cause says (permissions, missing resource, code), then "
            f"reprocess the object: ingestctl reprocess --key '{key}'."
        )
    return (
        f"No action needed now: the object is retried automatically after {retry_after}. "
        "If it keeps failing, check the health of the service named in the cause."
    )


def describe(
    request: FailureRequest,
    policy: FailurePolicy,
    now: datetime,
    *,
    quarantine_key: str | None = None,
) -> dict[str, Any]:
    """The failure report of a caught error (ClassifyError, QuarantineObject): its class as
    the Catch that routed it decided, else as ``logic.classify.RULES`` say."""
    caught = CaughtError(name=request.error.error, cause=request.error.cause)
    classification = classify(caught.name)
    if request.error_class is not None and request.error_class is not classification.error_class:
        # The Catch that routed this error decided its class by name; keep its decision.
        classification = Classification(request.error_class, "routed by the workflow", "catch")
    return build_report(
        bucket=request.object.bucket,
        key=request.object.key,
        version_id=request.object.version_id,
        error=caught,
        classification=classification,
        attempt=request.attempt,
        execution_arn=request.execution_arn,
        now=now,
        policy=policy,
        quarantine_key=quarantine_key,
    )


def build_report(
    *,
    bucket: str,
    key: str,
    version_id: str | None,
    error: CaughtError,
    classification: Classification,
    attempt: int,
    execution_arn: str,
    now: datetime,
    policy: FailurePolicy,
    quarantine_key: str | None = None,
) -> dict[str, Any]:
    """The failure report the state machine records in DynamoDB and sends by SNS."""
    error_class = classification.error_class
    code, line, text = error.code_and_line()
    now = now.astimezone(UTC)
    retryable = error_class is ErrorClass.TRANSIENT
    retry_after = _iso(now + timedelta(seconds=policy.retry_delay(attempt))) if retryable else ""
    where = f" at line {line}" if line is not None else ""
    cause = f"{error.name} [{code}]{where}: {text}"[:MAX_CAUSE_CHARS]
    action = suggested_action(error_class, code, key, quarantine_key, retry_after)
    severity = SEVERITY[error_class]
    url = console_url(execution_arn)
    message: dict[str, Any] = {
        "object": {"bucket": bucket, "key": key, "versionId": version_id},
        "errorClass": str(error_class),
        "error": error.name,
        "code": code,
        "line": line,
        "cause": cause,
        "classifiedBy": classification.rule,
        "classificationReason": classification.reason,
        "attempt": attempt,
        "executionArn": execution_arn,
        "consoleUrl": url,
        "severity": severity,
        "retryable": retryable,
        "retryAfter": retry_after or None,
        "quarantineKey": quarantine_key,
        "suggestedAction": action,
        "failedAt": _iso(now),
    }
    subject = f"[{error_class}] {code}: s3://{bucket}/{key}"
    return {
        "errorClass": str(error_class),
        "error": error.name,
        "code": code,
        "cause": cause,
        "retryable": retryable,
        "retryAfter": retry_after,
        "severity": severity,
        "suggestedAction": action,
        "quarantineKey": quarantine_key or "",
        "failedAt": _iso(now),
        "expiresAt": str(int((now + timedelta(days=policy.record_retention_days)).timestamp())),
        "subject": _subject(subject),
        "message": json.dumps(message, ensure_ascii=False, indent=2),
    }


def _subject(text: str) -> str:
    # SNS subjects: ASCII, no line breaks, at most 100 characters.
    ascii_text = text.encode("ascii", "replace").decode().replace("\n", " ")
    if len(ascii_text) > MAX_SUBJECT_CHARS:
        ascii_text = ascii_text[: MAX_SUBJECT_CHARS - 3] + "..."
    return ascii_text


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
