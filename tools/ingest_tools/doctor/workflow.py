"""The checks of the workflow: ``state-machine`` (is it ACTIVE; does an EXPRESS one log its
executions) and ``execution-failures`` (the share of executions that ended FAILED, TIMED_OUT or
ABORTED in the window: from ListExecutions for a STANDARD state machine, from its AWS/States
metrics for an EXPRESS one, which has no ListExecutions).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ingest_tools.doctor.report import Check, Status, duration

if TYPE_CHECKING:
    from ingest_tools.doctor.context import Context

__all__ = ["FAILURE_RATE_WARN", "execution_failures", "state_machine"]

#: Executions that ended FAILED, TIMED_OUT or ABORTED above this share of those that ended
#: in the window WARN.
FAILURE_RATE_WARN = 0.10
#: At most this many executions are read for the failure rate (newest first).
EXECUTIONS_READ_LIMIT = 5000
#: The namespace of the metrics Step Functions publishes (dimension StateMachineArn), and the
#: metric that counts each status an execution ends in (Step Functions developer guide,
#: "Monitoring Step Functions metrics using Amazon CloudWatch": published for every state
#: machine, Standard and Express).
STATES_NAMESPACE = "AWS/States"
EXPRESS_STATUS_METRICS = {
    "SUCCEEDED": "ExecutionsSucceeded",
    "FAILED": "ExecutionsFailed",
    "TIMED_OUT": "ExecutionsTimedOut",
    "ABORTED": "ExecutionsAborted",
}
#: The execution events of the failed statuses, logged at log levels ERROR, FATAL and ALL
#: (developer guide, "Using CloudWatch Logs to log execution history in Step Functions").
EXPRESS_LOG_EVENTS = ("ExecutionFailed", "ExecutionTimedOut", "ExecutionAborted")


def state_machine(context: Context) -> list[Check]:
    """FAIL unless the state machine is ACTIVE (DELETING: nothing can start). An EXPRESS one
    WARNs when it logs its executions nowhere: Step Functions records no Express execution,
    its CloudWatch Logs are the only place to find one."""
    arn = context.output("PipelineStateMachineArn")
    described = context.clients.stepfunctions.describe_state_machine(stateMachineArn=arn)
    status = str(described.get("status", ""))
    name = arn.rsplit(":", 1)[-1]
    if status == "ACTIVE" and described.get("type") == "EXPRESS":
        group, level = _log_group(described)
        data = {"type": "EXPRESS", "logGroup": group, "logLevel": level}
        if group is None:
            return [
                Check(
                    "state-machine",
                    Status.WARN,
                    f"{name} is ACTIVE (EXPRESS) and logs its executions nowhere (logging "
                    f"level {level}): Step Functions keeps no record of Express executions",
                    "enable its CloudWatch Logs logging (template.yaml Logging: Level ERROR or "
                    "ALL, a log group destination) and redeploy (sam deploy)",
                    data,
                )
            ]
        detail = f"{name} is ACTIVE (EXPRESS; executions logged to {group}, level {level})"
        return [Check("state-machine", Status.PASS, detail, data=data)]
    if status == "ACTIVE":
        return [Check("state-machine", Status.PASS, f"{name} is ACTIVE ({described.get('type')})")]
    return [
        Check(
            "state-machine",
            Status.FAIL,
            f"{name} is {status}: no execution can start",
            "redeploy the stack (sam deploy)",
            {"status": status},
        )
    ]


def _recent_executions(context: Context, since: datetime) -> Iterator[dict[str, Any]]:
    """Executions started since ``since``, newest first (ListExecutions' order)."""
    kwargs: dict[str, Any] = {
        "stateMachineArn": context.output("PipelineStateMachineArn"),
        "maxResults": 1000,
    }
    read = 0
    while True:
        page = context.clients.stepfunctions.list_executions(**kwargs)
        for execution in page.get("executions", []):
            if execution["startDate"] < since or read >= EXECUTIONS_READ_LIMIT:
                return
            read += 1
            yield execution
        if not page.get("nextToken"):
            return
        kwargs["nextToken"] = page["nextToken"]


def execution_failures(context: Context) -> list[Check]:
    """WARN when more than FAILURE_RATE_WARN of the executions that ended in the window
    (``--since``) ended FAILED, TIMED_OUT or ABORTED. Not a FAIL: rejected data ends an
    execution FAILED too, and the ExecutionsFailed alarm pages for bursts (see alarms).

    The state machine's type comes from DescribeStateMachine (an ARN does not tell: Standard
    and Express state machine ARNs have the same form). STANDARD: ListExecutions, the
    executions started in the window by status. EXPRESS has no ListExecutions (nor
    DescribeExecution or GetExecutionHistory): the same figures come from the execution
    metrics Step Functions publishes for every state machine (``_express_statuses``)."""
    arn = context.output("PipelineStateMachineArn")
    described = context.clients.stepfunctions.describe_state_machine(stateMachineArn=arn)
    if described.get("type") == "EXPRESS":
        return _express_execution_failures(context, described)
    since = context.now - context.since
    statuses = Counter(str(e["status"]) for e in _recent_executions(context, since))

    def action(worst: str) -> str:
        return (
            f"aws stepfunctions list-executions --state-machine-arn {arn} --status-filter "
            f"{worst}; fix the cause, then "
            + context.ingestctl("reprocess --key KEY (or --error-class CONFIGURATION)")
        )

    return [_failure_verdict(context, statuses, action)]


def _failure_verdict(
    context: Context, statuses: Counter[str], action: Callable[[str], str], note: str = ""
) -> Check:
    """The execution-failures verdict over ``statuses`` (executions by status, RUNNING ones
    included); ``action(worst status)`` says what to do on WARN, ``note`` where the figures
    come from (appended to the detail)."""
    ended = sum(n for s, n in statuses.items() if s != "RUNNING")
    failed = sum(statuses[s] for s in ("FAILED", "TIMED_OUT", "ABORTED"))
    window = duration(context.since)
    counts = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    data = {"window": window, "byStatus": dict(statuses), "ended": ended, "failed": failed}
    if not ended:
        detail = f"no execution ended in the last {window}" + (f" ({counts})" if counts else "")
        return Check("execution-failures", Status.PASS, detail + note, data={**data, "rate": None})
    rate = failed / ended
    detail = f"{failed} of {ended} executions that ended in the last {window} failed " + (
        f"({rate:.0%}; {counts})"
    )
    if rate <= FAILURE_RATE_WARN:
        return Check("execution-failures", Status.PASS, detail + note, data={**data, "rate": rate})
    worst = "FAILED" if statuses["FAILED"] else "TIMED_OUT" if statuses["TIMED_OUT"] else "ABORTED"
    return Check(
        "execution-failures",
        Status.WARN,
        f"{detail}, above {FAILURE_RATE_WARN:.0%}{note}",
        action(worst),
        {**data, "rate": rate},
    )


def _metric_period(window: timedelta) -> int:
    """One GetMetricData period over the whole window, in whole hours: a multiple of 3600 s
    is valid however old the window's start (CloudWatch wants a multiple of 60 s past 3 h,
    of 300 s past 15 days, of 3600 s past 63 days, or returns no data points)."""
    return max(1, math.ceil(window.total_seconds() / 3600)) * 3600


def _whole_minutes(start: datetime, end: datetime) -> dict[str, datetime]:
    """GetMetricData's StartTime and EndTime for ``start`` .. ``end`` in whole minutes (the
    start rounded down, as CloudWatch rounds it; the end up, so that the datapoints of the
    current minute, which CloudWatch stores at one-minute resolution, are in)."""
    minute = timedelta(minutes=1)
    floor = start - (start - datetime.min.replace(tzinfo=start.tzinfo)) % minute
    ceiling = end + (datetime.min.replace(tzinfo=end.tzinfo) - end) % minute
    return {"StartTime": floor, "EndTime": ceiling}


def _express_statuses(context: Context, arn: str, since: datetime) -> Counter[str]:
    """Executions by status from the AWS/States metrics of state machine ``arn`` (dimension
    StateMachineArn), Sum over ``since`` .. now: each ended status is its metric's count of
    executions that ended in the window (the same statuses ListExecutions reports); RUNNING
    is ExecutionsStarted less those that ended, never below 0 (an estimate: metrics name no
    execution, and an execution that started before the window may end in it). Step
    Functions delivers metrics best effort, at least once: a datapoint may come late or
    twice."""
    metrics = {"RUNNING": "ExecutionsStarted", **EXPRESS_STATUS_METRICS}
    ids = {status: f"m{i}" for i, status in enumerate(metrics)}
    period = _metric_period(context.since)
    kwargs: dict[str, Any] = {
        "MetricDataQueries": [
            {
                "Id": ids[status],
                "MetricStat": {
                    "Metric": {
                        "Namespace": STATES_NAMESPACE,
                        "MetricName": name,
                        "Dimensions": [{"Name": "StateMachineArn", "Value": arn}],
                    },
                    "Period": period,
                    "Stat": "Sum",
                },
            }
            for status, name in metrics.items()
        ],
        **_whole_minutes(since, context.now),
    }
    status_of = {query_id: status for status, query_id in ids.items()}
    sums: Counter[str] = Counter()
    while True:
        page = context.clients.cloudwatch.get_metric_data(**kwargs)
        for result in page.get("MetricDataResults", []):
            sums[status_of[str(result["Id"])]] += round(sum(result.get("Values") or ()))
        if not page.get("NextToken"):
            break
        kwargs["NextToken"] = page["NextToken"]
    statuses = Counter({s: n for s, n in sums.items() if s != "RUNNING" and n > 0})
    running = sums["RUNNING"] - sum(statuses.values())
    if running > 0:
        statuses["RUNNING"] = running
    return statuses


def _log_group(described: Mapping[str, Any]) -> tuple[str | None, str]:
    """(log group name, level) of the state machine's CloudWatch Logs logging: the group is
    None when it logs nowhere (level OFF or no destination)."""
    config = described.get("loggingConfiguration") or {}
    level = str(config.get("level") or "OFF")
    for destination in config.get("destinations") or []:
        group_arn = str((destination.get("cloudWatchLogsLogGroup") or {}).get("logGroupArn", ""))
        if ":log-group:" in group_arn and level != "OFF":
            return group_arn.split(":log-group:", 1)[1].removesuffix(":*"), level
    return None, level


def _express_execution_failures(context: Context, described: Mapping[str, Any]) -> list[Check]:
    """execution-failures of an EXPRESS state machine: the figures from its AWS/States
    metrics; what to do points to what Express has: the executions' CloudWatch Logs (Logs
    Insights, and the console's Express execution view, which reads them) and the state
    table (``ingestctl reprocess``)."""
    arn = context.output("PipelineStateMachineArn")
    name = arn.rsplit(":", 1)[-1]
    since = context.now - context.since
    group, level = _log_group(described)
    reprocess = context.ingestctl("reprocess --key KEY (or --error-class CONFIGURATION)")
    listed = context.ingestctl("reprocess --prefix incoming/ --dry-run")

    def action(_worst: str) -> str:
        if group is None:
            return (
                f"{name} is EXPRESS (no ListExecutions) and logs nothing (logging level "
                f"{level}): enable its CloudWatch Logs logging (template.yaml Logging, Level "
                "ERROR or ALL) to see its failed executions in Logs Insights and the console's "
                f"Express execution view; meanwhile {listed} lists the failed objects from the "
                "state table; fix the cause, then " + reprocess
            )
        events = ", ".join(f'"{event}"' for event in EXPRESS_LOG_EVENTS)
        query = (
            "fields @timestamp, execution_arn, type, @message | filter type in "
            f"[{events}] | sort @timestamp desc | limit 50"
        )
        return (
            f"{name} is EXPRESS (no ListExecutions): its executions are in log group {group} "
            f"(level {level}): CloudWatch Logs Insights, aws logs start-query --log-group-name "
            f"{group} --start-time {int(since.timestamp())} --end-time "
            f"{int(context.now.timestamp())} --query-string '{query}' then aws logs "
            "get-query-results --query-id ID; or the Step Functions console's Express "
            f"execution view of {name} (read from those logs); {listed} lists the failed "
            "objects from the state table; fix the cause, then " + reprocess
        )

    statuses = _express_statuses(context, arn, since)
    note = " (AWS/States metrics: the state machine is EXPRESS)"
    return [_failure_verdict(context, statuses, action, note)]
