"""Fix: a new alarm starts in INSUFFICIENT_DATA, and updating an alarm keeps its state.

moto (cloudwatch/models.py, ``Alarm.__init__``) starts every alarm in ``OK`` (with AWS's
reason, "Unchecked: Initial alarm creation"), and ``put_metric_alarm`` builds a new ``Alarm``
each time, so updating an alarm's configuration resets its state to ``OK``. On AWS a new alarm
is ``INSUFFICIENT_DATA`` until CloudWatch has evaluated it, and PutMetricAlarm on an existing
alarm "overwrites the previous configuration" but leaves its state alone (CloudWatch API
Reference, PutMetricAlarm). It matters for what operators see (doctor's alarm summary) and
for alarm actions: the first evaluation of a freshly deployed alarm is a change from
INSUFFICIENT_DATA, which runs its OKActions.
"""

from __future__ import annotations

from typing import Any

from moto.cloudwatch.models import CloudWatchBackend

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_STATE = ("state_value", "state_reason", "state_reason_data", "state_updated_timestamp")


def _build(rt: Runtime) -> Targets:
    put_metric_alarm = CloudWatchBackend.put_metric_alarm

    def put_metric_alarm_keeping_state(self: CloudWatchBackend, name: str, **kw: Any) -> Any:
        previous = self.alarms.get(name)
        alarm = put_metric_alarm(self, name, **kw)
        if previous is not None:
            for attribute in (*_STATE, "history"):
                setattr(alarm, attribute, getattr(previous, attribute))
        else:
            alarm.state_value = "INSUFFICIENT_DATA"
        return alarm

    return {(CloudWatchBackend, "put_metric_alarm"): put_metric_alarm_keeping_state}


PATCHES = [
    Patch(
        name="cloudwatch-alarm-initial-state",
        kind=Kind.FIX,
        reason="A new alarm is INSUFFICIENT_DATA (moto: OK), and PutMetricAlarm on an existing "
        "alarm keeps its state (moto: back to OK).",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_a_new_alarm_has_insufficient_data_and_an_update_keeps_its_state",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto cloudwatch/models.py "
        "Alarm.__init__ sets state_value = 'OK'",
    )
]
