"""Speedups of the local stack deploy, installed only while ``create_stack`` runs: a JSON
template is parsed as JSON before moto's PyYAML (cloudformation/models.py
``Stack.parse_template``); generated names (``parsing.generate_resource_name``) take, instead of
AWS's random suffix, one derived from the stack and logical id, unique per stack, so the
definitions that embed them are parsed once per process (sfn_parsed_definitions.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from moto.cloudformation import models as cfn_models
from moto.cloudformation import parsing as cfn_parsing

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]


def _build_json_first(rt: Runtime) -> Targets:
    parse_template = cfn_models.Stack.__dict__["parse_template"]

    def json_first(template: str) -> dict[str, Any]:
        try:
            return dict(json.loads(template))
        except ValueError:
            return parse_template.__func__(template)  # type: ignore[no-any-return]

    return {(cfn_models.Stack, "parse_template"): staticmethod(json_first)}


def _build_stable_names(rt: Runtime) -> Targets:
    generate_resource_name = cfn_parsing.generate_resource_name

    def resource_name(resource_type: str, stack_name: str, logical_id: str) -> str:
        digest = base64.b32encode(hashlib.sha256(f"{stack_name}/{logical_id}".encode()).digest())
        random_suffix = cfn_parsing.random_suffix
        cfn_parsing.random_suffix = digest[:12].decode
        try:
            return str(generate_resource_name(resource_type, stack_name, logical_id))
        finally:
            cfn_parsing.random_suffix = random_suffix

    return {(cfn_parsing, "generate_resource_name"): resource_name}


PATCHES = [
    Patch(
        name="cloudformation-json-templates",
        kind=Kind.SPEEDUP,
        reason="A JSON template body is parsed as JSON first (moto tries PyYAML first, ~0.1 s).",
        test="tests/statemachine/test_stack_deploy.py::test_outputs",
        build=_build_json_first,
        when="deploy",
    ),
    Patch(
        name="cloudformation-stable-names",
        kind=Kind.SPEEDUP,
        reason="Generated names are derived from stack and logical id, so a definition embedding "
        "them is parsed once per process, not per deploy.",
        test="tests/statemachine/test_stack_deploy.py::test_outputs",
        build=_build_stable_names,
        when="deploy",
    ),
]
