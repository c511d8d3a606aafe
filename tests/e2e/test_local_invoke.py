"""The README's "Try a function" commands without Docker: ``localcloud invoke FUNCTION -e
events/...`` deploys template.yaml into the embedded local cloud and runs the function on the
sample event, as ``sam local invoke`` does, with the outcome AWS would give. The events name
``example-ingest-bucket``, not the stack's bucket, so a function that reads it is refused as
its role is refused on AWS."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from ingest_tools.local_pipeline import app_cloud
from localcloud.cloud import LocalCloud
from localcloud.invoke import invoke_in
from tests.support import EVENTS

pytestmark = [pytest.mark.e2e]


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    """One stack for the module: each event runs as ``localcloud invoke`` runs it there
    (test_invoke_command.py runs the command itself, deploy included)."""
    with app_cloud() as running:
        yield running


def run(cloud: LocalCloud, function: str, event: str) -> tuple[int, dict[str, object], str]:
    out, log = io.StringIO(), io.StringIO()
    status = invoke_in(cloud, function, (EVENTS / event).read_bytes(), out=out, log=log)
    return status, json.loads(out.getvalue()), log.getvalue()


@pytest.mark.parametrize(
    ("function", "event", "status", "expected"),
    [
        ("ClassifyErrorFunction", "classify-error/states-timeout.json", 0,
         {"errorClass": "TRANSIENT", "retryable": True}),
        ("ClassifyErrorFunction", "classify-error/access-denied.json", 0,
         {"errorClass": "CONFIGURATION", "retryable": False}),
        ("ProcessFunction", "process/invalid-event.json", 1, {"errorType": "InvalidEventError"}),
        ("ProcessFunction", "process/object.json", 1, {"errorType": "AccessDeniedError"}),
        ("ResolveObjectFunction", "resolve/object-without-version.json", 1,
         {"errorType": "AccessDeniedError"}),
        ("QuarantineFunction", "quarantine/header-error.json", 1,
         {"errorType": "AccessDeniedError"}),
        ("ReconcileFunction", "reconcile/scheduled-run.json", 0, {"batchItemFailures": []}),
    ],
)  # fmt: skip
def test_a_readme_sample_event_runs_without_docker(
    cloud: LocalCloud, function: str, event: str, status: int, expected: dict[str, object]
) -> None:
    got_status, response, log = run(cloud, function, event)
    assert got_status == status, (response, log)
    assert {key: response.get(key) for key in expected} == expected, response
    assert "START RequestId:" in log and "REPORT RequestId:" in log
