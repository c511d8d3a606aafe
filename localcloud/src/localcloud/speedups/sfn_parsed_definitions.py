"""Speedup: parse each state machine definition once, not on every StartExecution.

moto parses the definition with ANTLR on every StartExecution
(backend/execution_worker.py ``_get_evaluation_entrypoint``): about 40 % of an execution's
CPU. The evaluation components keep per-execution state in ``env.heap`` / ``env.stack``
(keyed by each component's ``heap_key``), so one parsed program serves every execution of a
definition. The lazily assigned heap keys are fixed once, under a lock, before the program
is shared.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
from moto.stepfunctions.parser.asl.parse import asl_parser

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_PARSE = asl_parser.AmazonStateLanguageParser.__dict__["parse"]


def _fix_heap_keys(root: Any) -> None:
    seen: set[int] = set()
    todo = [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, EvalComponent):
            _ = obj.heap_key
            todo.extend(vars(obj).values())
        elif isinstance(obj, (list, tuple, set)):
            todo.extend(obj)
        elif isinstance(obj, dict):
            todo.extend(obj.values())


# A process-wide cache of immutable parse results, keyed by the definition's text: the same
# template deployed by the next cloud parses nothing (names are stable, see
# cloudformation_deploy.py), which is most of a cloud's start-up time otherwise.
_LOCK = threading.Lock()
_PARSED: dict[str, Any] = {}


def _cached_parse(definition: str) -> Any:
    with _LOCK:
        program = _PARSED.get(definition)
        if program is None:
            program = _PARSE.__func__(definition)
            _fix_heap_keys(program[0])
            _PARSED[definition] = program
        return program


def _build(rt: Runtime) -> Targets:
    return {(asl_parser.AmazonStateLanguageParser, "parse"): staticmethod(_cached_parse)}


PATCHES = [
    Patch(
        name="sfn-parsed-definitions",
        kind=Kind.SPEEDUP,
        reason="A definition is parsed (ANTLR) once per process, not per StartExecution or "
        "deploy: ~40% of an execution's CPU and most of a cloud's start.",
        test="tests/e2e/test_event_graph.py::test_ten_concurrent_copies_process_exactly_once",
        build=_build,
    )
]
