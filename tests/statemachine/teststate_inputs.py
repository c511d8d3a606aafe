"""Inputs for the TestState cases (teststate_cases.py): JSONPath reads and writes on plain
documents, and the Choice rules' evaluation to build an input that takes a chosen branch."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

REGION, ACCOUNT = "us-east-1", "123456789012"

EXECUTION = f"arn:aws:states:{REGION}:{ACCOUNT}:execution:PipelineStateMachine:e-1"

# The workflows' real inputs (what EventBridge's rule, and the hand-over, start them with)
INPUTS: dict[str, dict[str, Any]] = {
    "PipelineStateMachine": {
        "object": {"bucket": "ingest", "key": "incoming/orders/a.csv", "versionId": "v1"},
        "trigger": {"source": "aws.s3", "eventId": "e-1", "eventTime": "2026-11-21T12:00:00Z"},
        "request": {"reprocess": False, "staleBefore": "2026-11-21T11:00:00.000Z"},
    },
    "LargeObjectStateMachine": {
        "object": {"bucket": "ingest", "key": "incoming/orders/big.csv", "versionId": "v1"},
        "trigger": {"source": "aws.s3", "eventId": "e-1", "eventTime": "2026-11-21T12:00:00Z"},
        "claim": {"attempt": "1", "claimedAt": "2026-11-21T12:00:01.000Z"},
        "handoff": {"executionArn": EXECUTION},
        "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID": EXECUTION,
    },
}

PLAN = {
    "bucket": "ingest",
    "key": "work/e-1/plan-1.json",
    "headerEnd": 24,
    "headerLines": 1,
    "size": 268435456,
    "chunkCount": 4,
    "round": 1,
    "maxConcurrency": 4,
}

ERROR = {"Error": "HeaderError", "Cause": "the header does not match the dataset's contract"}

PATH = re.compile(r"(?<![$\w])\$((?:\.[A-Za-z_]\w*|\[\d+\])+)")
ABSENT = object()
UNCHECKED = object()

VALUES: dict[str, Any] = {
    "report.error": "HeaderError",
    "report.cause": "the header does not match the dataset's contract",
    "error": ERROR,
    "error.Error": ERROR["Error"],
    "error.Cause": ERROR["Cause"],
    "recordError.Cause": "the state record could not be written",
    "unhandled.Cause": "the failure could not be classified",
    "bucket": "ingest",
    "key": "incoming/orders/a.csv",
    "versionId": "v1",
    "object": dict(INPUTS["PipelineStateMachine"]["object"]),
    "attempt": "1",
    "claimedAt": "2026-11-21T12:00:01.000Z",
    "claimed_at": "2026-11-21T12:00:01.000Z",
    "executionArn": EXECUTION,
    "source": "aws.s3",
    "reprocess": False,
    "staleBefore": "2026-11-21T11:00:00.000Z",
    "errorClass": "CONFIGURATION",
    "code": "HEADER_MISMATCH",
    "failedAt": "2026-11-21T12:00:05.000Z",
    "expiresAt": "1795000000",
    "retryAfter": "2026-11-21T12:15:00.000Z",
    "quarantineKey": "quarantine/orders/a.csv",
    "subject": "orders: a.csv rejected",
    "message": "incoming/orders/a.csv: the header does not match the dataset's contract",
    "severity": "ERROR",
    "dataset": "orders",
    "rows": 1000,
    "bytesIn": 65536,
    "bytesOut": 131072,
    "sha256": "0" * 64,
    "outputKey": "processed/orders/ingest_date=2026-11-21/a.jsonl",
    "outcome": "PROCESSED",
    "supersededBy": "",
    "contractVersion": 0,
    "plan": PLAN,
    "chunks": {"MapRunArn": f"arn:aws:states:{REGION}:{ACCOUNT}:mapRun:LargeObject/Chunks:1"},
    "index": 0,
    "N": "1",
    **{k: v for k, v in PLAN.items() if isinstance(v, int)},
}


# A concrete error that only a wildcard (States.ALL, States.TaskFailed) matches, by resource
def steps(path: str) -> list[str | int]:
    """``$.a.b[0]`` -> ["a", "b", 0]; ``$`` -> []."""
    return [int(i) if i else n for n, i in re.findall(r"\.(\w+)|\[(\d+)\]", path[1:])]


def get(doc: Any, path: str) -> Any:
    for step in steps(path):
        doc = doc[step]
    return doc


def _step(node: Any, step: str | int, after: str | int | None) -> Any:
    """``node[step]``, made (a container for ``after``) unless it is one already."""
    if isinstance(node, list):
        node.extend({} for _ in range(int(step) + 1 - len(node)))
    child = node[step] if isinstance(node, list) else node.get(step)
    if not isinstance(child, dict | list):
        node[step] = child = [] if isinstance(after, int) else {}
    return child


def put(doc: Any, path: list[str | int], value: Any) -> Any:
    """``doc`` with ``value`` at ``path`` (ABSENT removes it), containers made on the way."""
    if not path:
        return value
    node = doc
    for depth, step in enumerate(path[:-1]):
        node = _step(node, step, path[depth + 1])
    if value is ABSENT:
        node.pop(path[-1], None)
    elif isinstance(node, list):
        node.extend({} for _ in range(int(path[-1]) + 1 - len(node)))
        node[path[-1]] = value
    else:
        node[path[-1]] = value
    return doc


def leaf(path: list[str | int]) -> Any:
    names = [str(s) for s in path if isinstance(s, str)]
    for key in (".".join(names[-2:]), names[-1] if names else ""):
        if key in VALUES:
            return copy.deepcopy(VALUES[key])
    return f"{names[-1] if names else 'item'}-value"


def ensure(doc: Any, path: list[str | int]) -> None:
    """Makes ``path`` exist in ``doc``: a plausible leaf value unless it has one."""
    node = doc
    for depth, step in enumerate(path[:-1]):
        node = _step(node, step, path[depth + 1])
    if path and not (isinstance(node, dict) and path[-1] in node):
        put(doc, path, leaf(path))


def paths_in(template: Any) -> Iterator[str]:
    """The reference paths a Parameters / ItemSelector / ResultSelector template reads."""
    if isinstance(template, dict):
        for key, value in template.items():
            if key.endswith(".$") and isinstance(value, str):
                yield from (f"${m}" for m in PATH.findall(value))
            else:
                yield from paths_in(value)
    elif isinstance(template, list):
        for item in template:
            yield from paths_in(item)


def rule_variables(rule: dict[str, Any]) -> Iterator[str]:
    for key in ("Not",):
        if key in rule:
            yield from rule_variables(rule[key])
    for key in ("And", "Or"):
        for inner in rule.get(key) or ():
            yield from rule_variables(inner)
    if "Variable" in rule:
        yield rule["Variable"]


def read_paths(state: dict[str, Any]) -> list[str]:
    """Every input path ``state`` reads, relative to its raw input."""
    found = [state["InputPath"]] if state.get("InputPath") else []
    within = [*paths_in(state.get("Parameters")), *paths_in(state.get("ItemSelector"))]
    for key in ("ItemsPath", "MaxConcurrencyPath", "ToleratedFailureCountPath"):
        if state.get(key):
            within.append(state[key])
    for rule in state.get("Choices") or ():
        within += rule_variables(rule)
    prefix = state.get("InputPath") or "$"
    found += [prefix + path[1:] for path in within]
    found += [state[k] for k in ("ErrorPath", "CausePath") if state.get(k)]
    return found


def build(base: Any, paths: list[str]) -> Any:
    doc = copy.deepcopy(base)
    for path in sorted(paths, key=len):
        ensure(doc, steps(path))
    return doc


def resolve(template: Any, doc: Any) -> Any:
    """A payload template applied to ``doc`` (reference paths only; UNCHECKED otherwise)."""
    if isinstance(template, dict):
        out = {}
        for key, value in template.items():
            if key.endswith(".$"):
                if not isinstance(value, str) or not re.fullmatch(r"\$(\.\w+|\[\d+\])*", value):
                    return UNCHECKED
                out[key[:-2]] = copy.deepcopy(get(doc, value))
            else:
                inner = resolve(value, doc)
                if inner is UNCHECKED:
                    return UNCHECKED
                out[key] = inner
        return out
    return copy.deepcopy(template)


def with_result(doc: Any, result_path: Any, result: Any) -> Any:
    """ResultPath applied: ``null`` keeps the input, ``$`` is the result."""
    if result is UNCHECKED:
        return UNCHECKED
    if result_path is None:
        return doc
    return put(copy.deepcopy(doc), steps(result_path), result)


# --- Choice rules: an input that takes a chosen rule --------------------------------------------
COMPARISONS = ("String", "Numeric", "Boolean", "Timestamp")


def assignments(rule: dict[str, Any], want: bool) -> dict[str, Any]:
    """Values (or ABSENT) of the rule's variables that make it evaluate to ``want``."""
    if "Not" in rule:
        return assignments(rule["Not"], not want)
    if "And" in rule or "Or" in rule:
        inner = rule.get("And") or rule["Or"]
        if want == ("And" in rule):  # all of them must be so
            return {k: v for r in inner for k, v in assignments(r, want).items()}
        return assignments(inner[0], want)
    variable = rule["Variable"]
    (op, operand), *_ = ((k, v) for k, v in rule.items() if k not in {"Variable", "Next"})
    if op == "IsPresent":
        return {variable: leaf(steps(variable)) if want == operand else ABSENT}
    if op in {"StringEquals", "BooleanEquals"}:
        other = leaf(steps(variable))
        if other == operand:
            other = not operand if op == "BooleanEquals" else f"NOT_{operand}"
        return {variable: operand if want else other}
    if op.startswith("Numeric") and not op.endswith("Path"):
        below, above = operand - 1, operand + 1
        chosen = {
            "NumericEquals": (operand, above),
            "NumericLessThan": (below, operand),
            "NumericLessThanEquals": (operand, above),
            "NumericGreaterThan": (above, operand),
            "NumericGreaterThanEquals": (operand, below),
        }[op]
        return {variable: chosen[0] if want else chosen[1]}
    raise NotImplementedError(f"no input built for a Choice rule with {op}")


def evaluate(rule: dict[str, Any], doc: Any) -> bool:
    """The rule on ``doc``, for the comparisons assignments() builds inputs for."""
    if "Not" in rule:
        return not evaluate(rule["Not"], doc)
    if "And" in rule:
        return all(evaluate(r, doc) for r in rule["And"])
    if "Or" in rule:
        return any(evaluate(r, doc) for r in rule["Or"])
    (op, operand), *_ = ((k, v) for k, v in rule.items() if k not in {"Variable", "Next"})
    try:
        value = get(doc, rule["Variable"])
    except (KeyError, IndexError, TypeError):
        return op == "IsPresent" and not operand
    compare = {
        "IsPresent": lambda: operand,
        "StringEquals": lambda: value == operand,
        "BooleanEquals": lambda: value is operand,
        "NumericEquals": lambda: value == operand,
        "NumericLessThan": lambda: value < operand,
        "NumericLessThanEquals": lambda: value <= operand,
        "NumericGreaterThan": lambda: value > operand,
        "NumericGreaterThanEquals": lambda: value >= operand,
    }
    return bool(compare[op]())


def choice_input(state: dict[str, Any], base: Any, chosen: int | None) -> Any:
    """An input on which rule ``chosen`` is the first that matches (None: no rule does)."""
    rules = state["Choices"]
    doc = build(base, read_paths(state))
    wanted: dict[str, Any] = {}
    for rule in rules if chosen is None else rules[:chosen]:
        wanted.update(assignments(rule, False))
    if chosen is not None:
        wanted.update(assignments(rules[chosen], True))
    for variable, value in wanted.items():
        put(doc, steps(variable), value)
    first = next((i for i, rule in enumerate(rules) if evaluate(rule, doc)), None)
    assert first == chosen, f"the built input takes rule {first}, not {chosen}: {doc}"
    return doc


# --- Retry and Catch ------------------------------------------------------------------------
