"""What operators look at, on the deployed stack: the dashboard, the saved Logs Insights
queries and the alarms name this stack's resources, and read the metrics and log fields the
functions really write (captured from their stdout, as Lambda sends it to CloudWatch Logs).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from ingest_pipeline.errors import AccessDeniedError, ErrorClass, StorageUnavailableError
from ingest_pipeline.observability import logger
from ingest_tools.local_pipeline import ROOT, Pipeline
from tests.support import sample_file

pytestmark = pytest.mark.e2e

CUSTOM_NAMESPACE = "S3IngestPipeline"
LONG_AGO = "2000-01-01T00:00:00.000Z"
# Fields of Step Functions' own log lines (the state machine's log group), not the Lambdas'.
STATE_MACHINE_FIELDS = {"type"}


@pytest.fixture
def p(pipeline: Pipeline) -> Pipeline:
    return pipeline


def dashboard(p: Pipeline) -> dict[str, Any]:
    cloudwatch = boto3.client("cloudwatch", region_name=p.cloud.region)
    body = cloudwatch.get_dashboard(DashboardName=f"{p.stack.stack_name}-operations")[
        "DashboardBody"
    ]
    parsed: dict[str, Any] = json.loads(body)
    return parsed


def metric_rows(board: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(namespace, metric, dimensions) of every metric line (math expressions skipped)."""
    for widget in board["widgets"]:
        for row in widget["properties"].get("metrics", []):
            names = [part for part in row if isinstance(part, str)]
            if len(names) >= 2:
                yield names[0], names[1], dict(zip(names[2::2], names[3::2], strict=True))


def saved_queries(p: Pipeline) -> dict[str, dict[str, Any]]:
    logs = boto3.client("logs", region_name=p.cloud.region)
    prefix = f"{p.stack.stack_name}/"
    found = logs.describe_query_definitions(queryDefinitionNamePrefix=prefix)["queryDefinitions"]
    return {d["name"].removeprefix(prefix): d for d in found}


def test_saved_queries_are_deployed_for_the_stack(p: Pipeline) -> None:
    queries = saved_queries(p)
    assert set(queries) == {
        "failures-by-error-code",
        "object-story",
        "slowest-objects",
        "reconcile-runs",
    }
    logs = boto3.client("logs", region_name=p.cloud.region)
    groups = {g["logGroupName"] for g in logs.describe_log_groups()["logGroups"]}
    for name, query in queries.items():
        assert query["logGroupNames"], name
        assert set(query["logGroupNames"]) <= groups, f"{name}: reads a log group not deployed"
    story = queries["object-story"]["logGroupNames"]
    assert any(g.startswith("/aws/vendedlogs/states/") for g in story)  # the executions too
    assert {f"/aws/lambda/{fn}" for fn in p.stack.functions.values()} <= set(story)


def test_the_dashboard_shows_this_stacks_resources(p: Pipeline) -> None:
    board = dashboard(p)
    cloudwatch = boto3.client("cloudwatch", region_name=p.cloud.region)
    alarms = {a["AlarmArn"] for a in cloudwatch.describe_alarms()["MetricAlarms"]}
    (alarm_widget,) = [w for w in board["widgets"] if w["type"] == "alarm"]
    assert set(alarm_widget["properties"]["alarms"]) == alarms  # every alarm, nothing else

    sqs = boto3.client("sqs", region_name=p.cloud.region)
    queues = {url.rsplit("/", 1)[-1] for url in sqs.list_queues()["QueueUrls"]}
    dead_letter_queues = {q for q in queues if "DLQ" in q}
    shown: dict[str, set[str]] = {}
    for namespace, _metric, dimensions in metric_rows(board):
        for name, value in dimensions.items():
            shown.setdefault(f"{namespace}/{name}", set()).add(value)
    assert shown["AWS/Lambda/FunctionName"] == set(p.stack.functions.values())
    assert shown["AWS/SQS/QueueName"] == dead_letter_queues and len(dead_letter_queues) == 3
    assert shown["AWS/States/StateMachineArn"] == {
        p.stack.outputs["PipelineStateMachineArn"],
        p.stack.outputs["LargeObjectStateMachineArn"],
    }
    assert shown[f"{CUSTOM_NAMESPACE}/service"] == {p.stack.stack_name}


def run_every_path(p: Pipeline) -> list[dict[str, Any]]:
    """Good, bad data, a configuration error, transient errors exhausted then retried by the
    reconciler, a claim stuck past its lease: the JSON lines the functions printed."""
    good = sample_file("orders-good.csv")
    out = io.StringIO()
    # The Logger's handler keeps the stream it was made with; metrics are print()ed.
    handler = logger.registered_handler
    previous = handler.setStream(out)  # type: ignore[attr-defined]
    with contextlib.redirect_stdout(out), contextlib.ExitStack() as restore:
        restore.callback(handler.setStream, previous)  # type: ignore[attr-defined]
        p.ingest("incoming/orders/good.csv", good)
        p.ingest("incoming/orders/bad.csv", sample_file("orders-bad-values.csv"))
        p.cloud.fail_next("ProcessFunction", AccessDeniedError("AccessDenied"), times=1)
        p.ingest("incoming/orders/denied.csv", good)
        p.cloud.fail_next("ProcessFunction", StorageUnavailableError("SlowDown"), times=4)
        flaky, _ = p.ingest("incoming/orders/flaky.csv", good)
        stuck, _ = p.abort_while_processing("incoming/orders/stuck.csv", good)
        p.set_record("incoming/orders/flaky.csv", flaky, retry_after=LONG_AGO)
        p.set_record("incoming/orders/stuck.csv", stuck, claimed_at=LONG_AGO)
        p.reconcile()
    lines = []
    for line in out.getvalue().splitlines():
        with contextlib.suppress(ValueError):
            lines.append(json.loads(line))
    return lines


def emitted_metrics(lines: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(namespace, metric) -> the dimension values of each EMF record that carried it."""
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for line in lines:
        for directive in line.get("_aws", {}).get("CloudWatchMetrics", []):
            for dimension_set in directive["Dimensions"]:
                dims = {name: line[name] for name in dimension_set}
                for metric in directive["Metrics"]:
                    found.setdefault((directive["Namespace"], metric["Name"]), []).append(dims)
    return found


def query_fields(query: str) -> set[str]:
    """Log fields a Logs Insights query reads (not @-fields, literals, functions or aliases)."""
    text = re.sub(r'"[^"]*"', " ", query)  # string literals
    aliases = set(re.findall(r"\bas\s+(\w+)", text))
    text = re.sub(r"\bas\s+\w+", " ", text)
    words = set(re.findall(r"(?<![@\w])[A-Za-z_]\w*\b(?!\s*\()", text)) - aliases
    keywords = {"fields", "filter", "stats", "sort", "limit", "by", "desc", "asc", "in", "like"}
    keywords |= {"and", "or", "not"}
    return words - keywords


def query_messages(query: str) -> set[str]:
    """The ``message`` values a query filters on."""
    found = set(re.findall(r'message\s*=\s*"([^"]+)"', query))
    for listed in re.findall(r"message\s+in\s+\[([^\]]*)\]", query):
        found |= set(re.findall(r'"([^"]+)"', listed))
    return found


def logged_messages() -> set[str]:
    """Every string literal of the handlers (log messages among them; some are chosen by a
    conditional expression, so not only the first argument of a logger call)."""
    source = "\n".join(path.read_text() for path in Path(ROOT, "functions").rglob("*.py"))
    return set(re.findall(r'"([^"\n]+)"', source))


def test_what_operators_read_is_what_the_functions_write(p: Pipeline) -> None:
    lines = run_every_path(p)
    emitted = emitted_metrics(lines)
    logs = [line for line in lines if "message" in line]
    assert logs and emitted

    # Every custom metric on the dashboard or behind an alarm is emitted with those dimensions.
    cloudwatch = boto3.client("cloudwatch", region_name=p.cloud.region)
    alarm_rows = [
        (a["Namespace"], a["MetricName"], {d["Name"]: d["Value"] for d in a["Dimensions"]})
        for a in cloudwatch.describe_alarms()["MetricAlarms"]
    ]
    wanted = [*metric_rows(dashboard(p)), *alarm_rows]
    custom = [row for row in wanted if row[0] == CUSTOM_NAMESPACE]
    assert {metric for _, metric, _ in custom} >= {"ObjectsFailed", "ExpiredClaimAgeSeconds"}
    for namespace, metric, dimensions in custom:
        seen = emitted.get((namespace, metric))
        assert seen, f"{metric} is shown but no function emits it"
        assert any(set(d) == set(dimensions) for d in seen), f"{metric}: dimensions {seen}"
        assert all(d["service"] == p.stack.stack_name for d in seen)
        if "ErrorClass" in dimensions:
            assert dimensions["ErrorClass"] in set(ErrorClass)
    classes = {d["ErrorClass"] for d in emitted[(CUSTOM_NAMESPACE, "ObjectsFailed")]}
    assert classes == {"TRANSIENT", "CONFIGURATION"}
    # The stuck claim's age reached the metric the ExpiredClaimsAlarm watches.
    ages: list[float] = []
    for line in lines:  # EMF: one value, or a list when a flush carried several
        value = line.get("ExpiredClaimAgeSeconds", [])
        ages += value if isinstance(value, list) else [value]
    assert ages and max(ages) > 3600

    # Every field a saved query reads is one the functions log; every message it filters
    # on is one they write.
    keys = {key for line in logs for key in line}
    seen_messages = {line["message"] for line in logs}
    known_messages = logged_messages()
    for name, query in saved_queries(p).items():
        missing = query_fields(query["queryString"]) - keys - STATE_MACHINE_FIELDS
        assert not missing, f"{name} reads fields no function logs: {sorted(missing)}"
        messages = query_messages(query["queryString"])
        assert messages <= known_messages, f"{name}: {sorted(messages - known_messages)}"
        if name != "reconcile-runs":  # its failure/duplicate lines need a broken run
            assert messages <= seen_messages, f"{name}: {sorted(messages - seen_messages)}"
    assert {"reconcile run", "execution started"} <= seen_messages
    # The failures query groups by these: every failure line carries both.
    failures = [
        line for line in logs if line["message"] in {"failure classified", "object rejected"}
    ]
    assert failures and all({"error_class", "error_code"} <= set(line) for line in failures)
