"""CloudWatch alarm actions: a state change notifies the alarm's SNS actions, as CloudWatch does.

moto stores AlarmActions / OKActions / InsufficientDataActions but never runs them: SetAlarmState
(and the stored state) change nothing else. Here, when an alarm changes state and its actions
are enabled, each SNS topic among the actions for the new state (ALARM -> AlarmActions, OK ->
OKActions, INSUFFICIENT_DATA -> InsufficientDataActions) receives the notification CloudWatch
publishes: subject ``ALARM: "<name>" in <region>`` and a JSON message with AlarmName,
AlarmDescription, AWSAccountId, NewStateValue, NewStateReason, StateChangeTime, Region,
AlarmArn, OldStateValue and Trigger (CloudWatch User Guide, "Using Amazon CloudWatch
alarms"). Metrics are not evaluated: ``SetAlarmState`` drives the state, which is how AWS
documents testing an alarm's actions. Other action types (EC2, Auto Scaling, SSM) are not run.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from moto.cloudwatch.models import CloudWatchBackend
from moto.core.utils import utcnow
from moto.sns.models import sns_backends

from localcloud.iam import enforcement as iam
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "alarm_notification"]

_REGIONS = {"us-east-1": "US East (N. Virginia)"}


def _timestamp(value: Any) -> str:
    """CloudWatch's notification time format: 2026-11-23T10:00:00.123+0000."""
    moment = value if isinstance(value, dt.datetime) else dt.datetime.now(dt.UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"


def alarm_notification(alarm: Any, old_state: str) -> tuple[str, dict[str, Any]]:
    """(subject, message) of the SNS notification CloudWatch sends for ``alarm``'s new state."""
    region = _REGIONS.get(alarm.region_name, alarm.region_name)
    dimensions = [{"value": d.value, "name": d.name} for d in alarm.dimensions or []]
    missing = alarm.treat_missing_data or "missing"
    message = {
        "AlarmName": alarm.name,
        "AlarmDescription": alarm.description,
        "AWSAccountId": str(alarm.alarm_arn).split(":")[4],
        "AlarmConfigurationUpdatedTimestamp": _timestamp(alarm.configuration_updated_timestamp),
        "NewStateValue": alarm.state_value,
        "NewStateReason": alarm.state_reason,
        "StateChangeTime": _timestamp(alarm.state_updated_timestamp),
        "Region": region,
        "AlarmArn": alarm.alarm_arn,
        "OldStateValue": old_state,
        "OKActions": list(alarm.ok_actions),
        "AlarmActions": list(alarm.alarm_actions),
        "InsufficientDataActions": list(alarm.insufficient_data_actions),
        "Trigger": {
            "MetricName": alarm.metric_name,
            "Namespace": alarm.namespace,
            "StatisticType": "Statistic",
            "Statistic": str(alarm.statistic or "").upper(),
            "Unit": alarm.unit,
            "Dimensions": dimensions,
            "Period": alarm.period,
            "EvaluationPeriods": alarm.evaluation_periods,
            "ComparisonOperator": alarm.comparison_operator,
            "Threshold": alarm.threshold,
            # As published (aws/aws-lambda-go events/testdata/cloudwatch-alarm-sns-payload-*.json)
            "TreatMissingData": f"- TreatMissingData:                    {missing}",
            "EvaluateLowSampleCountPercentile": alarm.evaluate_low_sample_count_percentile or "",
        },
    }
    return f'{alarm.state_value}: "{alarm.name}" in {region}'[:100], message


def _may_publish(rt: Runtime, alarm: Any, topic_arn: str) -> bool:
    """CloudWatch publishes as cloudwatch.amazonaws.com for the alarm: the topic's policy
    and, for an encrypted topic, its key's policy must allow it."""
    authorizer = rt.authorizer
    if not authorizer.enabled:
        return True
    caller = iam.service("cloudwatch.amazonaws.com", alarm.alarm_arn, authorizer.account)
    region = topic_arn.split(":")[3]
    refused = authorizer.authorize(
        caller, "sns", "Publish", {"TopicArn": topic_arn}, region=region, secure=True
    )
    if refused is not None:  # recorded as AWS records it (tests/conformance/samples/
        # access-denied-cloudwatch-alarm-action-kms-history.json); moto has no DescribeAlarmHistory
        error = refused[1]["Error"]["Message"]
        summary = f'Failed to execute action {topic_arn}. Received error: "{error}"'
        data = json.dumps(
            {"actionState": "Failed", "notificationResource": topic_arn, "error": error}
        )
        alarm.history.append(("Action", summary, data, alarm.state_value, utcnow()))
    return refused is None


def _build(rt: Runtime) -> Targets:
    set_alarm_state = CloudWatchBackend.set_alarm_state

    def set_alarm_state_and_notify(
        self: CloudWatchBackend, alarm_name: str, reason: str, reason_data: str, state_value: str
    ) -> None:
        alarm = self.alarms.get(alarm_name)
        old_state = alarm.state_value if alarm is not None else None
        set_alarm_state(self, alarm_name, reason, reason_data, state_value)
        alarm = self.alarms[alarm_name]
        if not alarm.actions_enabled or old_state == alarm.state_value:
            return
        actions = {
            "ALARM": alarm.alarm_actions,
            "OK": alarm.ok_actions,
            "INSUFFICIENT_DATA": alarm.insufficient_data_actions,
        }[alarm.state_value]
        subject, message = alarm_notification(alarm, str(old_state))
        for arn in actions or []:
            parts = str(arn).split(":")
            # a topic CloudWatch may publish to (refused by a topic or key policy: it fails)
            if len(parts) >= 6 and parts[2] == "sns" and _may_publish(rt, alarm, str(arn)):
                sns_backends[parts[4]][parts[3]].publish(
                    json.dumps(message), arn=arn, subject=subject
                )

    return {(CloudWatchBackend, "set_alarm_state"): set_alarm_state_and_notify}


PATCHES = [
    Patch(
        name="cloudwatch-alarm-actions",
        kind=Kind.FEATURE,
        reason="An alarm's state change publishes CloudWatch's notification to its SNS actions "
        "(moto stores the actions and never runs them).",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_an_alarm_pages_operations_when_it_fires_and_when_it_clears",
        build=_build,
    )
]
