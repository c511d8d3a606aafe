"""Fix: ``$$.State.EnteredTime`` and ``$$.Execution.StartTime`` formatted as AWS formats them.

moto (asl/component/state/state.py) sets ``$$.State.EnteredTime`` to
``datetime.now(utc).isoformat()``, "2026-01-01T00:00:00.123456+00:00", and
``$$.Execution.StartTime`` is a datetime (backend/execution_worker.py) serialised with
``isoformat()``. AWS gives "2026-01-01T00:00:00.123Z" (millisecond precision, "Z"). It
matters when the value is stored and compared as a string: the workflow stores
``claimed_at`` from EnteredTime and the reconciler compares it with ``claimed_at < :cutoff``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from moto.stepfunctions.parser.asl.component.state import state as state_module
from moto.stepfunctions.parser.asl.eval.states import StateData
from moto.stepfunctions.parser.backend import execution_worker

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "aws_ts"]


def aws_ts(value: Any) -> str:
    d = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(value)
    d = d.astimezone(dt.UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def _build(rt: Runtime) -> Targets:
    get_env = execution_worker.ExecutionWorker._get_evaluation_environment

    def state_data(EnteredTime: Any, Name: str, **kw: Any) -> Any:
        return StateData(EnteredTime=aws_ts(EnteredTime), Name=Name, **kw)

    def evaluation_environment(self: Any) -> Any:
        env = get_env(self)
        execution = env.states.context_object.context_object_data["Execution"]
        execution["StartTime"] = aws_ts(execution["StartTime"])
        return env

    return {
        (state_module, "StateData"): state_data,
        (execution_worker.ExecutionWorker, "_get_evaluation_environment"): evaluation_environment,
    }


PATCHES = [
    Patch(
        name="sfn-context-timestamps",
        kind=Kind.FIX,
        reason="$$.State.EnteredTime / $$.Execution.StartTime in AWS's format "
        "(2026-01-01T00:00:00.123Z), not Python's isoformat(); stored and compared as strings.",
        test="tests/e2e/test_localcloud_fidelity.py"
        "::test_context_timestamps_are_formatted_as_aws_formats_them",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto "
        "asl/component/state/state.py uses isoformat()",
    )
]
