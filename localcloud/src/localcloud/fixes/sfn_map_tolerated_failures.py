"""Fix: a Distributed Map's failed children fail the Map Run past the tolerated threshold.

AWS (developer guide, "Setting failure thresholds for Distributed Map states"): a Map Run
fails with ``States.ExceedToleratedFailureThreshold`` when its failed (or timed-out) items
exceed ``ToleratedFailureCount``, or their share of all items exceeds
``ToleratedFailurePercentage``; either one may be set (or both: exceeding either fails);
without either, one failed item fails it. The Map state then fails with that error (cause
"The specified tolerated failure threshold was exceeded", as recorded on AWS in LocalStack's
tests/aws/services/stepfunctions/v2/test_state/test_state_configuration.snapshot.json), which
its Retry/Catch handle like any other.

moto 5.2.5 (iteration/distributed_iteration_component.py ``_map_run`` and
map_run_record.py: "TODO: add support for failure toleration fields") only counts failed
children: the Map Run always succeeds, a failed child's result becomes ``null``, and the
preprocessor logs "declarations currently have no effect" (a warning the stack deploy
reports). Its grammar also refuses an integer ``ToleratedFailurePercentage`` (``0``, ``5``:
the ``INT`` token, where the rule wants ``NUMBER``), which AWS accepts.

Here the threshold is checked once every child has ended (moto starts no child later than
AWS would; AWS may stop starting new children as soon as the threshold is exceeded, so with
more items than MaxConcurrency fewer of them run there), the integer percentage parses, and
the "no effect" warnings are gone.

Also tested: localcloud/tests/test_distributed_map.py
::test_failures_within_the_tolerated_count_let_the_map_succeed.
"""

from __future__ import annotations

from typing import Any

from antlr4.error.Errors import RecognitionException  # type: ignore[import-untyped]
from moto.stepfunctions.parser.api import HistoryEventType
from moto.stepfunctions.parser.asl.antlr.runtime.ASLParser import ASLParser
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
    StatesErrorNameType,
)
from moto.stepfunctions.parser.asl.component.common.query_language import QueryLanguageMode
from moto.stepfunctions.parser.asl.component.state.exec.state_map import state_map
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (  # noqa: E501
    DistributedIterationComponent,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.tolerated_failure import (
    ToleratedFailureCountDecl,
    ToleratedFailureCountInt,
    ToleratedFailureCountPath,
    ToleratedFailurePercentage,
    ToleratedFailurePercentageDecl,
    ToleratedFailurePercentagePath,
)
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

from localcloud.fixes.sfn_failure_passthrough import states_failure
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["CAUSE", "ERROR", "PATCHES", "exceeded"]

ERROR = "States.ExceedToleratedFailureThreshold"
CAUSE = "The specified tolerated failure threshold was exceeded"
# Which thresholds the Map state declares, set on its iteration component at parse time (an
# undeclared threshold is 0 in moto's records, as DescribeMapRun reports it on AWS).
_DECLARED = "_localcloud_tolerance_declared"


def exceeded(
    failed: int, total: int, count: int, percentage: float, declared: tuple[bool, bool]
) -> bool:
    """AWS's rule: over the count, or over the percentage of all items; with neither
    declared, any failure."""
    count_declared, percentage_declared = declared
    if not count_declared and not percentage_declared:
        return failed > 0
    over_count = count_declared and failed > count
    over_share = percentage_declared and total > 0 and failed * 100 > percentage * total
    return over_count or over_share


def _percentage_decl(self: Any) -> Any:
    """``ToleratedFailurePercentage: INT`` as well as ``NUMBER`` (moto: NUMBER only)."""
    stream = self._input
    if not (stream.LA(1) == ASLParser.TOLERATEDFAILUREPERCENTAGE and stream.LA(3) == ASLParser.INT):
        return _ORIGINAL_PERCENTAGE_RULE(self)
    localctx = ASLParser.Tolerated_failure_percentage_declContext(self, self._ctx, self.state)
    self.enterRule(localctx, 164, self.RULE_tolerated_failure_percentage_decl)
    try:
        localctx = ASLParser.Tolerated_failure_percentage_numberContext(self, localctx)
        self.enterOuterAlt(localctx, 2)
        self.match(ASLParser.TOLERATEDFAILUREPERCENTAGE)
        self.match(ASLParser.COLON)
        self.match(ASLParser.INT)
    except RecognitionException as re:
        localctx.exception = re
        self._errHandler.reportError(self, re)
        self._errHandler.recover(self, re)
    finally:
        self.exitRule()
    return localctx


_ORIGINAL_PERCENTAGE_RULE = ASLParser.__dict__["tolerated_failure_percentage_decl"]


# The preprocessor's visitors, without "declarations currently have no effect" warnings.
def _visit_percentage_number(self: Any, ctx: Any) -> ToleratedFailurePercentage:
    token = ctx.NUMBER() or ctx.getToken(ASLParser.INT, 0)
    return ToleratedFailurePercentage(tolerated_failure_percentage=float(token.getText()))


def _visit_percentage_path(self: Any, ctx: Any) -> ToleratedFailurePercentagePath:
    self._raise_if_query_language_is_not(query_language_mode=QueryLanguageMode.JSONPath, ctx=ctx)
    return ToleratedFailurePercentagePath(
        string_sampler=self.visitString_sampler(ctx.string_sampler())
    )


def _visit_count_int(self: Any, ctx: Any) -> ToleratedFailureCountInt:
    return ToleratedFailureCountInt(tolerated_failure_count=int(ctx.INT().getText()))


def _visit_count_path(self: Any, ctx: Any) -> ToleratedFailureCountPath:
    self._raise_if_query_language_is_not(query_language_mode=QueryLanguageMode.JSONPath, ctx=ctx)
    return ToleratedFailureCountPath(string_sampler=self.visitString_sampler(ctx.string_sampler()))


def _build(rt: Runtime) -> Targets:
    from_state_props = state_map.StateMap.__dict__["from_state_props"]
    map_run = DistributedIterationComponent.__dict__["_map_run"]

    def state_from_props(self: Any, state_props: Any) -> None:
        from_state_props(self, state_props)
        declared = (
            state_props.get(ToleratedFailureCountDecl) is not None,
            state_props.get(ToleratedFailurePercentageDecl) is not None,
        )
        setattr(self.iteration_component, _DECLARED, declared)

    def distributed_map_run(self: Any, env: Any, eval_input: Any) -> None:
        total = len(env.stack[-1]) if env.stack and isinstance(env.stack[-1], list) else 0
        map_run(self, env, eval_input)  # every child has ended; their results are on the stack
        counter = eval_input.map_run_record.item_counter
        failed = counter.failed.get() + counter.timed_out.get()
        limits = (eval_input.tolerated_failure_count, eval_input.tolerated_failure_percentage)
        if exceeded(failed, total, *limits, getattr(self, _DECLARED, (False, False))):
            env.stack.pop()  # the children's results: the Map state fails instead
            raise states_failure(
                env,
                StatesErrorNameType.StatesExceedToleratedFailureThreshold,
                HistoryEventType.MapRunFailed,
                CAUSE,
            )

    return {
        (ASLParser, "tolerated_failure_percentage_decl"): _percentage_decl,
        (Preprocessor, "visitTolerated_failure_percentage_number"): _visit_percentage_number,
        (Preprocessor, "visitTolerated_failure_percentage_path"): _visit_percentage_path,
        (Preprocessor, "visitTolerated_failure_count_int"): _visit_count_int,
        (Preprocessor, "visitTolerated_failure_count_path"): _visit_count_path,
        (state_map.StateMap, "from_state_props"): state_from_props,
        (DistributedIterationComponent, "_map_run"): distributed_map_run,
    }


PATCHES = [
    Patch(
        name="sfn-map-tolerated-failures",
        kind=Kind.FIX,
        reason="A Distributed Map Run fails with States.ExceedToleratedFailureThreshold when "
        "failed children exceed ToleratedFailureCount/Percentage (none set: any failure), as "
        "on AWS; moto always succeeds it. An integer ToleratedFailurePercentage parses.",
        test="localcloud/tests/test_distributed_map.py"
        "::test_a_failed_child_fails_the_map_run_and_the_map_catch_handles_it",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto map_run_record.py "
        "'TODO: add support for failure toleration fields'",
    )
]
