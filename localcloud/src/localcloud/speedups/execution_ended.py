"""Word when an execution ends, instead of polling for it.

The worker reports its end to ``BaseExecutionWorkerCommunication.terminated`` (moto:
stepfunctions/parser/backend/execution.py); the patch notifies ``Runtime.executions_changed``
there, which ``Runtime.wait_until`` waits on. Without it, ``wait_until`` re-checks every
50 ms: the same answers, later.
"""

from __future__ import annotations

from typing import Any

from moto.stepfunctions.parser.backend import execution as sfn_execution

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]


def _build(rt: Runtime) -> Targets:
    terminated = sfn_execution.BaseExecutionWorkerCommunication.terminated

    def notify_terminated(self: Any) -> None:
        try:
            terminated(self)
        finally:
            with rt.executions_changed:
                rt.executions_changed.notify_all()

    return {(sfn_execution.BaseExecutionWorkerCommunication, "terminated"): notify_terminated}


PATCHES = [
    Patch(
        name="execution-ended",
        kind=Kind.SPEEDUP,
        reason="Waiting for an execution wakes when it ends instead of re-checking every 50 ms "
        "(moto has no completion callback).",
        test="tests/e2e/test_event_graph.py::test_upload_runs_the_happy_path",
        build=_build,
    )
]
