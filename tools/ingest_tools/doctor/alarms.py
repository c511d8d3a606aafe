"""The ``alarms`` check: is any of the stack's CloudWatch alarms in ALARM (found from the
stack's resources; each alarm's description says what to run)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from ingest_tools.doctor.report import Check, Status

if TYPE_CHECKING:
    from ingest_tools.doctor.context import Context

__all__ = ["alarms"]


def _stack_alarms(context: Context) -> dict[str, str]:
    """The stack's CloudWatch alarms: physical name -> logical id."""
    found: dict[str, str] = {}
    kwargs: dict[str, Any] = {"StackName": context.stack}
    while True:
        page = context.clients.cloudformation.list_stack_resources(**kwargs)
        for resource in page.get("StackResourceSummaries", []):
            if resource.get("ResourceType") == "AWS::CloudWatch::Alarm":
                found[str(resource["PhysicalResourceId"])] = str(resource["LogicalResourceId"])
        if not page.get("NextToken"):
            return found
        kwargs["NextToken"] = page["NextToken"]


def alarms(context: Context) -> list[Check]:
    """FAIL when any of the stack's alarms is in ALARM (each says, in its description, what
    to run). INSUFFICIENT_DATA passes: the alarms treat missing data as not breaching."""
    if not context.stack:
        return [
            Check(
                "alarms",
                Status.WARN,
                "not checked: the stack's name is unknown (its alarms are found from it)",
                "run doctor with --stack NAME, or an --outputs file that names the stack",
            )
        ]
    names = _stack_alarms(context)
    described: list[dict[str, Any]] = []
    ordered = sorted(names)
    for start in range(0, len(ordered), 100):
        page = context.clients.cloudwatch.describe_alarms(
            AlarmNames=ordered[start : start + 100], MaxRecords=100
        )
        described.extend(page.get("MetricAlarms", []))
        described.extend(page.get("CompositeAlarms", []))
    states = Counter(str(a.get("StateValue")) for a in described)
    firing = sorted(
        (a for a in described if a.get("StateValue") == "ALARM"),
        key=lambda a: str(a.get("AlarmName")),
    )
    data = {
        "byState": dict(states),
        "inAlarm": [
            {
                "name": a.get("AlarmName"),
                "logicalId": names.get(str(a.get("AlarmName"))),
                "reason": a.get("StateReason"),
                "description": a.get("AlarmDescription"),
            }
            for a in firing
        ],
    }
    counts = ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
    if not firing:
        detail = f"none of {len(described)} alarms in ALARM ({counts})"
        return [Check("alarms", Status.PASS, detail, data=data)]
    labels = ", ".join(names.get(str(a.get("AlarmName")), str(a.get("AlarmName"))) for a in firing)
    first = str(firing[0].get("AlarmDescription") or "").strip()
    return [
        Check(
            "alarms",
            Status.FAIL,
            f"{len(firing)} of {len(described)} alarms in ALARM: {labels}",
            " ".join(first.split()) or "see the alarm in the CloudWatch console",
            data,
        )
    ]
