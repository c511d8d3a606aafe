"""Fix: a Distributed Map's ``"ExecutionType": "EXPRESS"`` is a valid definition, as on AWS.

AWS: a Distributed Map's ``ItemProcessor.ProcessorConfig.ExecutionType`` is ``STANDARD`` or
``EXPRESS`` (Step Functions developer guide, "ItemProcessor (Map)": Express child workflows
are the usual choice for short, idempotent items). moto 5.2.5's ASL grammar
(asl/antlr/runtime/ASLParser.py ``execution_type``) matches only the ``"STANDARD"`` token, and
``"EXPRESS"`` is not a token at all, so CreateStateMachine (and so the stack deploy) fails with
``ASLParserException ... mismatched input '"EXPRESS"' expecting '"STANDARD"'``.

Here the rule also accepts the string ``"EXPRESS"``, and the preprocessor turns it into
:data:`EXPRESS` (moto's ``ExecutionType`` enum has only ``Standard``). moto runs every child
workflow in-process whatever its type, and nothing in its evaluation reads the type, so the
children then run exactly as STANDARD ones do locally: what differs on AWS (at-least-once
delivery, the 5-minute limit, no execution history) is not emulated.
"""

from __future__ import annotations

import enum
from typing import Any

from antlr4.error.Errors import RecognitionException  # type: ignore[import-untyped]
from moto.stepfunctions.parser.asl.antlr.runtime.ASLParser import ASLParser
from moto.stepfunctions.parser.asl.component.state.exec.state_map.execution_type import (
    ExecutionType,
)
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["EXPRESS", "PATCHES", "ChildExecutionType"]

_EXPRESS_TEXT = '"EXPRESS"'


class ChildExecutionType(enum.Enum):
    """The execution type moto's ``ExecutionType`` lacks."""

    EXPRESS = "EXPRESS"


EXPRESS = ChildExecutionType.EXPRESS


def _execution_type(self: Any) -> Any:
    """``execution_type: STANDARD | '"EXPRESS"'`` (moto: ``STANDARD`` only)."""
    if self._input.LT(1).text != _EXPRESS_TEXT:
        return _ORIGINAL_RULE(self)
    localctx = ASLParser.Execution_typeContext(self, self._ctx, self.state)
    self.enterRule(localctx, 138, self.RULE_execution_type)
    try:
        self.enterOuterAlt(localctx, 1)
        self.state = 824
        self.consume()  # the '"EXPRESS"' string token
    except RecognitionException as re:
        localctx.exception = re
        self._errHandler.reportError(self, re)
        self._errHandler.recover(self, re)
    finally:
        self.exitRule()
    return localctx


def _visit_execution_decl(self: Any, ctx: Any) -> Any:
    if ctx.execution_type().getText() == _EXPRESS_TEXT:
        return EXPRESS
    return ExecutionType(self.visit(ctx.execution_type()))


_ORIGINAL_RULE = ASLParser.__dict__["execution_type"]


def _build(rt: Runtime) -> Targets:
    return {
        (ASLParser, "execution_type"): _execution_type,
        (Preprocessor, "visitExecution_decl"): _visit_execution_decl,
    }


PATCHES = [
    Patch(
        name="sfn-map-express-children",
        kind=Kind.FIX,
        reason="A Distributed Map's ProcessorConfig ExecutionType EXPRESS parses, as on AWS "
        "(moto's grammar accepts only STANDARD and CreateStateMachine fails).",
        test="localcloud/tests/test_distributed_map.py"
        "::test_express_item_processor_deploys_and_runs",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto ASLParser.execution_type "
        "matches STANDARD only",
    )
]
