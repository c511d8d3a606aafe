"""EventBridge InputTransformer, as AWS applies it to a rule target's input.

Placeholders ``<name>`` outside JSON strings are replaced by the JSON encoding of the value
(a string gets its quotes, escaped); inside a JSON string, by the raw text, escaped for that
string. Missing paths give ``null`` (outside strings) or an empty string (inside).
"""

from __future__ import annotations

import json
import re
from typing import Any

_PLACEHOLDER = re.compile(r"<([A-Za-z0-9_.\-]+)>")


def resolve_path(event: Any, path: str) -> Any:
    """Dot-notation JSONPath as EventBridge supports it (``$.detail.object.version-id``)."""
    if path == "$":
        return event
    node = event
    for part in path.removeprefix("$.").split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def apply_input_transformer(
    event: dict[str, Any], transformer: dict[str, Any], *, rule_arn: str = "", rule_name: str = ""
) -> str:
    values: dict[str, Any] = {
        name: resolve_path(event, path)
        for name, path in (transformer.get("InputPathsMap") or {}).items()
    }
    values.setdefault("aws.events.rule-arn", rule_arn)
    values.setdefault("aws.events.rule-name", rule_name)
    values.setdefault("aws.events.event.json", event)
    template: str = transformer["InputTemplate"]

    def replace(match: re.Match[str]) -> str:
        if match.group(1) not in values:
            return match.group(0)
        value = values[match.group(1)]
        if _inside_string(template, match.start()):
            text = value if isinstance(value, str) else ("" if value is None else json.dumps(value))
            return json.dumps(text)[1:-1]
        return json.dumps(value, ensure_ascii=False)

    return _PLACEHOLDER.sub(replace, template)


def _inside_string(template: str, index: int) -> bool:
    """Whether ``index`` falls inside a JSON string literal of the template."""
    inside = False
    escaped = False
    for char in template[:index]:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            inside = not inside
    return inside
