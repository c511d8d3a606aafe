"""An Amazon States Language definition as nodes and edges to draw, as the Step Functions
console's graph shows it.

The console draws one box per state, a start and an end circle, an arrow per transition
(``Next``, each Choice rule, the Choice ``Default``, each ``Catch``) and ``Map``/``Parallel``
states as frames holding their nested states; retries are not arrows but a mark on the state.
``graph`` computes that from the definition alone (JSONPath or JSONata, any template), so a
page only lays it out, and an execution's path (console/data.py) can name the nodes it
visited.

Ids (unique within one graph, stable for one definition):

* a *group* is one list of ``States``: the top level is ``"States"``; a Parallel branch is
  ``"<Parallel node id>/Branch<i>"`` (``i`` from 0); a Map's item processor is
  ``"<Map node id>/ItemProcessor"`` (also for the legacy ``Iterator`` field);
* a state's node id is ``"States.<Name>"`` at the top level and ``"<group id>/<Name>"``
  nested (``"States.Fan/Branch0/Left"``, ``"States.Chunks/ItemProcessor/Process"``);
* each group has its own start and end nodes, ``"<group id>#start"`` and
  ``"<group id>#end"`` (types ``Start``/``End``): a nested branch's ``End: true`` arrives at
  its frame's end, not at the whole machine's. No state id can take these forms: a state's
  id always has ``.`` or ``/`` right after its group id.

Every node carries ``group`` (its group id); a Map or Parallel node lists its groups in
``children``; ``groups`` describes each group (``id``, ``parent`` node id or None, ``label``).

Edge ``kind``: ``start`` (a group's start -> its ``StartAt``), ``next``, ``choice`` (label: the
rule rendered when short, else ``rule <n>`` from 1), ``default``, ``catch`` (label: the
``ErrorEquals`` joined), ``end`` (``End: true``, Succeed and Fail -> the group's end). A target
the definition does not hold gets a node of type ``Missing`` rather than a dangling edge.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["choice_label", "graph", "short_resource"]

TOP = "States"
MAX_LABEL = 60  # longer rule renderings become "rule <n>": a label, not the rule itself
_SERVICE_INTEGRATION = re.compile(r"^arn:[^:]+:states:::(?:aws-sdk:)?(.+)$")
_LAMBDA_FUNCTION = re.compile(r"^arn:[^:]+:lambda:[^:]*:[^:]*:function:([^:]+)")
_ACTIVITY = re.compile(r"^arn:[^:]+:states:[^:]*:[^:]*:activity:(.+)$")
_OPERATORS = {
    "Equals": "==",
    "LessThan": "<",
    "GreaterThan": ">",
    "LessThanEquals": "<=",
    "GreaterThanEquals": ">=",
    "Matches": "matches",
}
_TYPE_TESTS = {
    "IsPresent": "present",
    "IsNull": "null",
    "IsString": "a string",
    "IsNumeric": "numeric",
    "IsBoolean": "a boolean",
    "IsTimestamp": "a timestamp",
}


def short_resource(resource: Any) -> str | None:
    """A Task's ``Resource`` as the console labels it: ``lambda:invoke``,
    ``dynamodb:updateItem``, ``rekognition:detectLabels`` (an SDK integration without its
    ``aws-sdk:``), ``lambda:<function>`` for a bare function ARN, ``activity:<name>``;
    anything else (a ``${...}`` substitution left in) unchanged."""
    if not isinstance(resource, str):
        return None
    for pattern, prefix in (
        (_SERVICE_INTEGRATION, ""),
        (_LAMBDA_FUNCTION, "lambda:"),
        (_ACTIVITY, "activity:"),
    ):
        if match := pattern.match(resource):
            return prefix + match.group(1)
    return resource


def _operand(key: str, value: Any) -> str:
    if key.endswith("Path"):
        return str(value)  # a path compared with a path: shown as the path
    if isinstance(value, str):
        return f"'{value}'"
    return json.dumps(value)


def _comparison_text(rule: dict[str, Any]) -> str | None:
    """``{"Variable": "$.x", "StringEquals": "a"}`` -> ``$.x == 'a'`` (None: not one)."""
    variable = rule.get("Variable")
    if not isinstance(variable, str):
        return None
    for key, value in rule.items():
        if key in _TYPE_TESTS:
            negation = "" if value is True else "not "
            return f"{variable} is {negation}{_TYPE_TESTS[key]}"
        base = key.removesuffix("Path")
        for suffix, operator in sorted(_OPERATORS.items(), key=lambda kv: -len(kv[0])):
            if base.endswith(suffix) and base != suffix:
                return f"{variable} {operator} {_operand(key, value)}"
    return None


def _rule_text(rule: Any) -> str | None:
    """One JSONPath or JSONata rule as text, or None when it is not one we can read."""
    if not isinstance(rule, dict):
        return None
    if isinstance(rule.get("Condition"), str):  # JSONata: "{% ... %}"
        text = str(rule["Condition"]).strip()
        return text[2:-2].strip() if text.startswith("{%") and text.endswith("%}") else text
    if "Not" in rule:
        inner = _rule_text(rule["Not"])
        return None if inner is None else f"not ({inner})"
    if isinstance(junction := rule.get("And", rule.get("Or")), list):
        parts = [_rule_text(item) for item in junction]
        word = " and " if "And" in rule else " or "
        return word.join(f"({part})" for part in parts) if parts and all(parts) else None
    return _comparison_text(rule)


def choice_label(rule: Any, index: int) -> str:
    """A Choice rule's edge label: the rule (``$.x == 'a'``, ``$states.input.n > 3``) when it
    reads in a few words, else ``rule <index + 1>``, as the console numbers them."""
    text = _rule_text(rule)
    if text is None or len(text) > MAX_LABEL:
        return f"rule {index + 1}"
    return text


def _retries(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "errorEquals": list(retrier.get("ErrorEquals") or []),
            "maxAttempts": retrier.get("MaxAttempts", 3),  # ASL's default
            "intervalSeconds": retrier.get("IntervalSeconds", 1),
            "backoffRate": retrier.get("BackoffRate", 2.0),
        }
        for retrier in state.get("Retry") or []
        if isinstance(retrier, dict)
    ]


class _Builder:
    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []
        self.groups: list[dict[str, Any]] = []
        self._ids: set[str] = set()

    def node(self, node: dict[str, Any]) -> None:
        if node["id"] not in self._ids:
            self._ids.add(node["id"])
            self.nodes.append(node)

    def edge(self, source: str, target: str, kind: str, label: str | None = None) -> None:
        self.edges.append({"source": source, "target": target, "kind": kind, "label": label})

    def group(self, group_id: str, body: Any, *, parent: str | None, label: str) -> None:
        """Nodes and edges of one ``{"StartAt", "States"}`` body, under ``group_id``."""
        self.groups.append({"id": group_id, "parent": parent, "label": label})
        start, end = f"{group_id}#start", f"{group_id}#end"
        self.node({"id": start, "label": "Start", "type": "Start", "group": group_id})
        self.node({"id": end, "label": "End", "type": "End", "group": group_id})
        if not isinstance(body, dict) or not isinstance(body.get("States"), dict):
            return  # an odd nested body: an empty frame, not a crash
        states: dict[str, Any] = body["States"]
        sep = "." if group_id == TOP else "/"

        def target(name: Any) -> str:
            node_id = f"{group_id}{sep}{name}"
            if name not in states:
                self.node({"id": node_id, "label": str(name), "type": "Missing", "group": group_id})
            return node_id

        if "StartAt" in body:
            self.edge(start, target(body["StartAt"]), "start")
        for name, state in states.items():
            self.state(group_id, name, state, target)

    def state(self, group_id: str, name: str, state: Any, target: Any) -> None:
        """The node of one state, its nested groups and its outgoing edges."""
        node_id = target(name)  # a state of the group: never Missing
        if not isinstance(state, dict):
            self.node({"id": node_id, "label": name, "type": "Unknown", "group": group_id})
            return
        kind = state.get("Type")
        node: dict[str, Any] = {
            "id": node_id,
            "label": name,
            "type": kind if isinstance(kind, str) else "Unknown",
            "group": group_id,
        }
        if kind == "Task":
            node["resource"] = short_resource(state.get("Resource"))
            node["resourceArn"] = state.get("Resource")
        if retry := _retries(state):
            node["retry"] = retry
        if isinstance(state.get("Comment"), str):
            node["comment"] = state["Comment"]
        self.node(node)
        self.nested(node, state)
        self.transitions(node_id, state, target, end=f"{group_id}#end")

    def nested(self, node: dict[str, Any], state: dict[str, Any]) -> None:
        """A Parallel's branches and a Map's item processor, as groups of ``node``."""
        node_id = node["id"]
        if state.get("Type") == "Parallel":
            node["children"] = []
            for index, branch in enumerate(state.get("Branches") or []):
                child = f"{node_id}/Branch{index}"
                node["children"].append(child)
                self.group(child, branch, parent=node_id, label=f"Branch {index + 1}")
        if state.get("Type") == "Map":
            processor = state.get("ItemProcessor", state.get("Iterator"))
            child = f"{node_id}/ItemProcessor"
            node["children"] = [child]
            config = processor.get("ProcessorConfig") if isinstance(processor, dict) else None
            node["mode"] = (config or {}).get("Mode", "INLINE")
            self.group(child, processor, parent=node_id, label="Item processor")

    def transitions(self, node_id: str, state: dict[str, Any], target: Any, end: str) -> None:
        """Next, each Choice rule, Default, each Catch, and End/Succeed/Fail as edges."""
        if isinstance(state.get("Next"), str):
            self.edge(node_id, target(state["Next"]), "next")
        for index, rule in enumerate(state.get("Choices") or []):
            if isinstance(rule, dict) and "Next" in rule:
                self.edge(node_id, target(rule["Next"]), "choice", choice_label(rule, index))
        if "Default" in state:
            self.edge(node_id, target(state["Default"]), "default")
        for catcher in state.get("Catch") or []:
            if isinstance(catcher, dict) and "Next" in catcher:
                errors = ", ".join(str(e) for e in catcher.get("ErrorEquals") or [])
                self.edge(node_id, target(catcher["Next"]), "catch", errors)
        if state.get("End") is True or state.get("Type") in ("Succeed", "Fail"):
            self.edge(node_id, end, "end")


def graph(definition: dict[str, Any] | str) -> dict[str, Any]:
    """Nodes, edges and groups of an ASL definition (a dict, or its JSON text as
    DescribeStateMachine returns it); see the module docstring for ids and kinds.

    Raises ValueError for what is not a definition (not an object with ``States`` an object
    and ``StartAt`` a string); anything odd inside one (an unknown type, a missing target,
    a malformed branch) is drawn as well as it can be instead."""
    if isinstance(definition, str):
        try:
            definition = json.loads(definition)
        except ValueError as exc:
            raise ValueError(f"not a state machine definition: invalid JSON ({exc})") from exc
    if not isinstance(definition, dict):
        raise ValueError(f"not a state machine definition: a {type(definition).__name__}")
    if not isinstance(definition.get("States"), dict) or not isinstance(
        definition.get("StartAt"), str
    ):
        raise ValueError("not a state machine definition: it needs StartAt and States")
    builder = _Builder()
    builder.group(TOP, definition, parent=None, label="State machine")
    return {
        "startAt": definition["StartAt"],
        "queryLanguage": definition.get("QueryLanguage", "JSONPath"),
        "comment": definition.get("Comment"),
        "nodes": builder.nodes,
        "edges": builder.edges,
        "groups": builder.groups,
    }
