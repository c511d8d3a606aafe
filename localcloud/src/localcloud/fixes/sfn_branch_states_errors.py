"""Fix: a Parallel branch or Map iteration that fails with a ``States.*`` error passes it on.

On AWS a Parallel state fails with its failed branch's error, and an inline Map state with
its failed iteration's, ``States.Timeout`` or ``States.TaskFailed`` included, so a Catch on
the Parallel or Map for ``States.Timeout`` handles a branch's task timeout. moto re-raises the
branch's (state_parallel/branches_decl.py) or iteration's (state_map/iteration/
iteration_worker.py) error name as a ``CustomErrorName``, whose constructor refuses names that
begin with ``States.``: the execution ends with ``ValueError(Custom Error Names MUST NOT begin
with the prefix 'States.' ...)`` and no Catch matches.
"""

from __future__ import annotations

from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
    CustomErrorName,
)
from moto.stepfunctions.parser.asl.component.common.error_name.error_name import ErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
    StatesErrorName,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import (
    iteration_worker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branches_decl

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "error_name"]


def error_name(error_name: str) -> ErrorName:
    """The error name a branch or iteration failed with, ``States.*`` ones included."""
    if error_name.startswith("States."):
        return StatesErrorName.from_name(error_name)
    return CustomErrorName(error_name)


def _build(rt: Runtime) -> Targets:
    return {
        (branches_decl, "CustomErrorName"): error_name,
        (iteration_worker, "CustomErrorName"): error_name,
    }


PATCHES = [
    Patch(
        name="sfn-branch-states-errors",
        kind=Kind.FIX,
        reason="A Parallel branch or Map iteration failing with a States.* error (a task's "
        "States.Timeout) fails its state with that error, which a Catch can handle; moto ends "
        "the execution with a ValueError.",
        test="localcloud/tests/test_branch_errors.py"
        "::test_a_branch_task_timeout_is_caught_as_states_timeout",
        build=_build,
        upstream="no moto issue found (searched 2026-11-27): branches_decl.py and "
        "iteration_worker.py build CustomErrorName from the failed branch's error",
    )
]
