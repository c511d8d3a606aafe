"""The order CloudFormation creates a template's resources in, and the cycle it refuses.

A resource depends on every resource it names with ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``
(``${Name}`` / ``${Name.Attribute}``) or ``DependsOn`` (CloudFormation User Guide,
"DependsOn attribute"). When they form a cycle, CloudFormation refuses the template before
creating anything: "Circular dependency between resources: [...]", naming the resources it
cannot order (moto's CloudFormation recurses until Python's stack overflows instead).
"""

from __future__ import annotations

import re
from typing import Any

from localcloud.stack.base import StackDeployError

__all__ = ["check_circular_dependencies", "dependencies", "references"]

_SUB_NAME = re.compile(r"\$\{([^!}][^}]*)\}")


def references(node: Any, *, sub: bool = True) -> set[str]:
    """The names ``node`` refers to by ``Ref``, ``Fn::GetAtt`` and (``sub``) ``Fn::Sub``."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                found.add(value)
            elif key == "Fn::GetAtt":
                target = value.split(".", 1)[0] if isinstance(value, str) else value
                if isinstance(target, list) and target:
                    target = target[0]
                found |= {target} if isinstance(target, str) else set()
            elif key == "Fn::Sub" and sub:
                text, variables = (value, {}) if isinstance(value, str) else (value[0], value[1])
                if isinstance(text, str):
                    refs = {m.split(".", 1)[0] for m in _SUB_NAME.findall(text)}
                    found |= refs - set(variables or {})
                found |= references(variables)
                continue
            found |= references(value, sub=sub)
    elif isinstance(node, list):
        for value in node:
            found |= references(value, sub=sub)
    return found


def dependencies(template: dict[str, Any]) -> dict[str, set[str]]:
    """Logical id -> the resources it depends on."""
    resources = template.get("Resources") or {}
    names = set(resources)
    found = {}
    for logical_id, resource in resources.items():
        depends = resource.get("DependsOn") or []
        depends = [depends] if isinstance(depends, str) else depends
        needs = (references(resource.get("Properties") or {}) | set(depends)) & names
        found[logical_id] = needs - {logical_id}
    return found


def check_circular_dependencies(template: dict[str, Any]) -> None:
    """Refuse, as CloudFormation does, a template whose resources cannot be ordered."""
    remaining = dependencies(template)
    while ready := [name for name, needs in remaining.items() if not needs & remaining.keys()]:
        for name in ready:
            del remaining[name]
    if remaining:
        raise StackDeployError(
            f"Circular dependency between resources: [{', '.join(sorted(remaining))}]"
        )
