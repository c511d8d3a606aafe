"""Fix: a Choice state whose rules all fail and that has no Default fails with
``States.NoChoiceMatched``.

On AWS the state (and so the execution, or the Parallel branch / Map iteration it is in) fails
with the error ``States.NoChoiceMatched``, which a Parallel or Map state's Retry and Catch
match by that name. moto's ``StateChoice._eval_state`` (asl/component/state/choice/
state_choice.py) raises ``RuntimeError('No branching option reached in state %s', name)``,
which the interpreter reports as ``States.Runtime``: a Catch for ``States.NoChoiceMatched``
never matched, and the cause was the repr of a tuple.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from moto.stepfunctions.parser.api import HistoryEventType
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
    StatesErrorNameType,
)
from moto.stepfunctions.parser.asl.component.state.choice.state_choice import StateChoice

from localcloud.fixes.sfn_failure_passthrough import states_failure
from localcloud.patching import Kind, Patch, Targets

if TYPE_CHECKING:
    from moto.stepfunctions.parser.asl.eval.environment import Environment

    from localcloud.runtime import Runtime

__all__ = ["PATCHES", "eval_state"]


def eval_state(self: StateChoice, env: Environment) -> None:
    """moto's, with ``States.NoChoiceMatched`` where it raised a RuntimeError."""
    for rule in self.choices_decl.rules:
        rule.eval(env)
        if env.stack.pop() is True:
            if not rule.next_stmt:
                raise RuntimeError(
                    f"Missing Next definition for state_choice rule '{rule}' in choices '{self}'."
                )
            env.stack.append(rule.next_stmt.name)
            return
    if self.default_state is None:
        raise states_failure(
            env,
            StatesErrorNameType.StatesNoChoiceMatched,
            HistoryEventType.ExecutionFailed,
            f"No Choice Rule matched in the Choice state '{self.name}' and it has no Default.",
        )
    env.stack.append(self.default_state.state_name)


def _build(rt: Runtime) -> Targets:
    return {(StateChoice, "_eval_state"): eval_state}


PATCHES = [
    Patch(
        name="sfn-no-choice-matched",
        kind=Kind.FIX,
        reason="A Choice state with no matching rule and no Default fails with "
        "States.NoChoiceMatched, which a Parallel's or Map's Catch can handle; moto fails it "
        "as States.Runtime with RuntimeError('No branching option reached ...').",
        test="localcloud/tests/test_sfn_no_choice_matched.py"
        "::test_a_branch_without_a_matching_choice_is_caught_as_no_choice_matched",
        build=_build,
        upstream="no moto issue found (searched 2026-11-28): state_choice.py raises "
        "RuntimeError when no rule matches and there is no Default",
    )
]
