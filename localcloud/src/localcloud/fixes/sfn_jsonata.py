"""Fix: JSONata states and workflow variables run, as on AWS.

moto's Step Functions interpreter (LocalStack's, asl/) parses ``QueryLanguage: "JSONata"``,
``{% ... %}`` expressions, ``Arguments``, ``Output``, ``Assign``, ``Condition``, ``Items`` and
the ``$states`` variable, and JSONPath states' ``Assign`` and ``$variable`` references, but
evaluates none of them: LocalStack evaluates with a Java JSONata through jpype, and moto ships
that evaluator switched off (asl/jsonata/jsonata.py ``eval_jsonata_expression`` calls ``None``).
Every JSONata expression, and every JSONPath ``$variable`` read, ended the execution with
``States.Runtime`` ``TypeError('NoneType' object is not callable)``.

The two places that evaluate, ``StringJSONata._eval_body`` (a ``{% %}`` expression) and
``StringVariableSample._eval_body`` (a JSONPath field naming a ``$variable``), get bodies that
evaluate with jsonata-python (a pure-Python port of jsonata-java, the implementation LocalStack
runs; pinned in localcloud/pyproject.toml). Where moto prints ``$states`` and every variable
into the expression's text as JSON literals (``($states:={...};$x:=...;expr)``) to hand one
string to the evaluator, these bind the values instead: the parsed expression is cached and
nothing is serialized or re-parsed per evaluation (a 140 KB input cost 0.58 s of parsing per
field that way, 0.014 s bound), and string values holding quotes, backslashes or non-BMP
characters no longer break the expression (moto wrote them as ``"{value}"`` unescaped).

As on AWS: an expression that fails to parse or evaluate, returns nothing (undefined) or
returns a function fails the state with ``States.QueryEvaluationError`` (history event
``EvaluationFailed``), which Retry / Catch can handle; a JSONata ``null`` is ``null``.
Step Functions' own functions: ``$partition``, ``$range``, ``$parse`` (moto's JSONata
declarations), ``$hash`` (MD5, SHA-1, SHA-256, SHA-384, SHA-512) and ``$uuid`` (moto declares
both as stubs returning "not supported" strings; here they are computed).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import uuid
from typing import TYPE_CHECKING, Any

import jsonata  # type: ignore[import-untyped]  # jsonata-python ships no py.typed
from moto.stepfunctions.parser.api import HistoryEventType
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
    StatesErrorNameType,
)
from moto.stepfunctions.parser.asl.component.common.query_language import QueryLanguageMode
from moto.stepfunctions.parser.asl.component.common.string.string_expression import (
    StringJSONata,
    StringVariableSample,
)
from moto.stepfunctions.parser.asl.component.intrinsic.jsonata import (
    get_intrinsic_functions_declarations,
)
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
from moto.stepfunctions.parser.asl.jsonata.jsonata import extract_jsonata_variable_references

from localcloud.fixes.sfn_failure_passthrough import states_failure
from localcloud.patching import Kind, Patch, Targets

if TYPE_CHECKING:
    from moto.stepfunctions.parser.asl.eval.environment import Environment

    from localcloud.runtime import Runtime

__all__ = ["PATCHES", "evaluate", "string_jsonata_eval_body", "variable_sample_eval_body"]

# Step Functions' functions computed here rather than by moto's JSONata stubs.
_HASH_ALGORITHMS = {
    name: name.replace("-", "").lower()
    for name in ("MD5", "SHA-1", "SHA-256", "SHA-384", "SHA-512")
}
_PYTHON_FUNCTIONS = frozenset({"$hash", "$uuid"})
_JSON_TYPES = (dict, list, str, int, float, bool)
_THREW = "threw an error during evaluation."  # a cause's words for an expression that failed


class JSONataError(Exception):
    """Why an expression failed: the end of States.QueryEvaluationError's cause."""


def _hash(value: Any, algorithm: Any) -> str:
    name = _HASH_ALGORITHMS.get(str(algorithm))
    if not isinstance(value, str) or name is None:
        raise jsonata.JException(
            "D3137", 0, f"$hash needs a string and one of {', '.join(_HASH_ALGORITHMS)}"
        )
    return hashlib.new(name, value.encode()).hexdigest()


@functools.lru_cache(maxsize=2048)
def _parsed(text: str) -> jsonata.Jsonata:
    expression = jsonata.Jsonata(text)
    expression.register_lambda("hash", _hash)
    expression.register_lambda("uuid", lambda: str(uuid.uuid4()))
    return expression


def evaluate(expression: str, bindings: dict[str, Any], *, functions: bool = True) -> Any:
    """``expression`` (JSONata, without ``{% %}``) with ``bindings`` (names without ``$``).

    Raises JSONataError. The result shares nothing with ``bindings``.
    """
    references = extract_jsonata_variable_references(expression)
    declarations = (
        get_intrinsic_functions_declarations(references - _PYTHON_FUNCTIONS) if functions else ""
    )
    text = f"({declarations}{expression})" if declarations else expression
    try:
        # A parsed expression keeps per-evaluation state (its timestamp for $now, and the
        # thread's "current" instance its functions read): each evaluation gets its own copy.
        instance = copy.copy(_parsed(text))
        jsonata.Jsonata.CURRENT.jsonata = instance
        instance.set_output_convert_nulls(False)
        result = instance.evaluate(None, bindings)
    except jsonata.JException as error:
        code = getattr(error, "error", None)
        raise JSONataError(f"{_THREW} {code}: {error}" if code else f"{_THREW} {error}") from error
    except RecursionError as error:
        raise JSONataError(f"{_THREW} the expression recursed too deeply") from error
    if result is None:
        raise JSONataError("returned nothing (undefined).")
    result = jsonata.Utils.convert_nulls(result)
    if result is not None and not isinstance(result, _JSON_TYPES):
        raise JSONataError("returned an unsupported result type.")
    return copy.deepcopy(result)


def _bindings(env: Environment, *, states: bool) -> dict[str, Any]:
    store = env.variable_store
    bindings: dict[str, Any] = {**store._outer_scope, **store._inner_scope}
    if states:
        bindings["states"] = env.states._states_data
    return bindings


def _failure(env: Environment, cause: str) -> FailureEventException:
    """States.QueryEvaluationError, with its EvaluationFailed history event added."""
    failure = states_failure(
        env,
        StatesErrorNameType.StatesQueryEvaluationError,
        HistoryEventType.EvaluationFailed,
        cause,
    )
    env.event_manager.add_event(
        context=env.event_history_context,
        event_type=HistoryEventType.EvaluationFailed,
        event_details=EventDetails(
            evaluationFailedEventDetails=failure.get_evaluation_failed_event_details()
        ),
    )
    return failure


def _evaluate_in(env: Environment, expression: str, *, states: bool) -> Any:
    try:
        return evaluate(expression, _bindings(env, states=states), functions=states)
    except JSONataError as error:
        raise _failure(env, f"The JSONata expression '{expression}' {error}") from None


def string_jsonata_eval_body(self: StringJSONata, env: Environment) -> None:
    """A ``{% expression %}``: evaluated with ``$states`` and the variables in scope."""
    env.stack.append(_evaluate_in(env, self.expression, states=True))


def variable_sample_eval_body(self: StringVariableSample, env: Environment) -> None:
    """A ``$variable`` (with a path) read by a field: ``$states`` too in a JSONata state."""
    states = self.query_language_mode == QueryLanguageMode.JSONata
    env.stack.append(_evaluate_in(env, self.expression, states=states))


def _build(rt: Runtime) -> Targets:
    return {
        (StringJSONata, "_eval_body"): string_jsonata_eval_body,
        (StringVariableSample, "_eval_body"): variable_sample_eval_body,
    }


PATCHES = [
    Patch(
        name="sfn-jsonata",
        kind=Kind.FIX,
        reason="JSONata states ({% %} expressions, Arguments, Output, Assign, Condition, Items, "
        "$states) and JSONPath variables ($name) are evaluated (jsonata-python, values bound, "
        "not printed into the expression); moto's evaluator is switched off and every such "
        "execution failed with States.Runtime TypeError('NoneType' object is not callable).",
        test="localcloud/tests/test_sfn_jsonata.py"
        "::test_the_docs_jsonpath_to_jsonata_conversion_gives_the_same_arguments",
        build=_build,
        upstream="no moto issue found (searched 2026-11-28): moto's asl/jsonata/jsonata.py "
        "eval_jsonata_expression sets its evaluator to None (LocalStack's is a jpype JVM)",
    )
]
