"""The EXPRESS pass's exceptions (tests/conftest.py) name tests that exist."""

from __future__ import annotations

import ast

from tests.conftest import WORKFLOW_INDEPENDENT_TESTS
from tests.support import ROOT


def test_every_workflow_independent_test_exists() -> None:
    missing = {}
    for module, names in WORKFLOW_INDEPENDENT_TESTS.items():
        tree = ast.parse((ROOT / module).read_text())
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        if names - defined:
            missing[module] = sorted(names - defined)
    assert missing == {}
