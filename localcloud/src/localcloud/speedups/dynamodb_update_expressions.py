"""Speedup: moto's DynamoDB UpdateItem, without re-deriving what depends only on the expression.

The workflow's ClaimObject and Record* states send the same long UpdateExpressions for every
object. moto 5.2 (dynamodb/) parses each one twice per call (responses.py:1242 for the
names and values it uses, models/__init__.py:456 for the update), deep-copies the tree for
every validation (parsing/validators.py:558; twice for a new item, models/__init__.py:501
and :524), and runs three checks that depend only on the expression, its attribute names
and the table's keys (ActionCountValidator and OverlappingPathsValidator, both quadratic in
the number of actions, and UpdateHashRangeKeyValidator). At ~20 actions that was ~15 ms of
CPU per UpdateItem, most of the workflow's cost on the local cloud.

Same answers, including every validation error:

* ``UpdateExpressionParser.make`` is memoised per expression string. The tree is shared but
  never mutated: moto only reads it (find_clauses) or hands it to a validator, which copies it;
* the validator copies the tree from a pickle of it (a fraction of ``deepcopy``'s cost);
* the three expression-only checks run as before until they have passed once for an
  (expression, attribute names, table keys) combination; after that they would pass again,
  so they are skipped. The item-dependent processors always run;
* the processors' tree walk (``DepthFirstTraverser.traverse_node_recursively``,
  parsing/ast_nodes.py:377) visits the same nodes in the same order, but decides "is this a
  Node" and "which processing function applies" once per node class instead of with ABC
  ``isinstance`` checks at every node, and skips the no-op pre-processing hook.
"""

from __future__ import annotations

import copy
import pickle
import threading
from typing import Any

from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, Node  # type: ignore[attr-defined]
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
from moto.dynamodb.parsing.validators import (
    ActionCountValidator,
    OverlappingPathsValidator,
    UpdateExpressionValidator,
    UpdateHashRangeKeyValidator,
    Validator,
)

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_ORIG_MAKE = UpdateExpressionParser.__dict__["make"]
_EXPRESSION_ONLY = (ActionCountValidator, OverlappingPathsValidator, UpdateHashRangeKeyValidator)
_MAX_EXPRESSIONS = 1024
_trees: dict[str, Any] = {}  # expression -> parsed tree (shared, never mutated)
_pickles: dict[int, tuple[Any, bytes]] = {}  # id(tree) -> (tree, its pickle): ids stay valid
_passed: set[tuple[Any, ...]] = set()  # (id(tree), names, table keys) whose static checks passed
_lock = threading.RLock()


def _make(cls: type, expression_str: str) -> Any:
    tree = _trees.get(expression_str)
    if tree is None:
        tree = _ORIG_MAKE.__func__(cls, expression_str)
        data = pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL)
        with _lock:
            if len(_trees) >= _MAX_EXPRESSIONS:
                _clear()
            _trees[expression_str] = tree
            _pickles[id(tree)] = (tree, data)
    return tree


def _validator_init(  # noqa: PLR0917 - moto's signature
    self: Validator,
    expression: Any,
    expression_attribute_names: dict[str, str],
    expression_attribute_values: dict[str, dict[str, Any]],
    item: Any,
    table: Any,
) -> None:
    self.expression_attribute_names = expression_attribute_names
    self.expression_attribute_values = expression_attribute_values
    self.item = item
    self.table = table
    self.processors = self.get_ast_processors()
    cached = _pickles.get(id(expression))
    if cached is None or cached[0] is not expression:  # a tree this module did not parse
        self.node_to_validate = copy.deepcopy(expression)
        self._static_key = None  # type: ignore[attr-defined]
        return
    self.node_to_validate = pickle.loads(cached[1])  # noqa: S301 - bytes this process pickled
    # Only cached trees stay alive, so only their ids can key what has passed.
    names = tuple(sorted((expression_attribute_names or {}).items()))
    keys = tuple(getattr(table, "table_key_attrs", ()) or ())
    self._static_key = (id(expression), names, keys)  # type: ignore[attr-defined]


def _validate(self: UpdateExpressionValidator) -> Any:
    node = self.node_to_validate
    processors = list(self.processors)
    static = len(_EXPRESSION_ONLY)
    key = getattr(self, "_static_key", None)
    if not all(isinstance(p, c) for p, c in zip(processors, _EXPRESSION_ONLY, strict=False)):
        key = None  # not moto's checks in moto's order: none skipped, none recorded
    elif key in _passed:
        processors, key = processors[static:], None
    for index, processor in enumerate(processors):
        node = processor.traverse(node)
        if key is not None and index == static - 1:
            with _lock:
                _passed.add(key)
    return node


_is_node: dict[type, bool] = {}
_applies: dict[tuple[type, type], int] = {}  # (processor class, node class) -> map index or -1
_NO_PRE_PROCESSING = DepthFirstTraverser.pre_processing_of_child


def _traverse(self: DepthFirstTraverser, node: Any, child_id: int = -1) -> Any:
    node_type = type(node)
    is_node = _is_node.get(node_type)
    if is_node is None:
        is_node = _is_node[node_type] = isinstance(node, Node)
    if not is_node:
        return node
    parent_node = node.parent
    children = node.children
    if children is not None:
        pre = type(self).pre_processing_of_child
        for i, child_node in enumerate(children):
            if pre is not _NO_PRE_PROCESSING:
                self.pre_processing_of_child(node, i)
            self.traverse_node_recursively(child_node, i)
    key = (type(self), node_type)
    index = _applies.get(key)
    if index is None:
        classes = self._processing_map() if isinstance(node, self.nodes_to_be_processed()) else ()
        index = _applies[key] = next((i for i, c in enumerate(classes) if isinstance(node, c)), -1)
    if index >= 0:
        node = list(self._processing_map().values())[index](node)
        node.parent = parent_node
        if parent_node:
            parent_node.children[child_id] = node
    return node


def _clear() -> None:
    with _lock:
        _trees.clear()
        _pickles.clear()
        _passed.clear()


def _build(rt: Runtime) -> Targets:
    rt.on_close(_clear)
    return {
        (DepthFirstTraverser, "traverse_node_recursively"): _traverse,
        (UpdateExpressionParser, "make"): classmethod(_make),
        (Validator, "__init__"): _validator_init,
        (UpdateExpressionValidator, "validate"): _validate,
    }


PATCHES = [
    Patch(
        name="dynamodb-update-expressions",
        kind=Kind.SPEEDUP,
        reason="UpdateItem parses, copies and validates an expression's fixed parts once "
        "(~15 ms of CPU per claim/record write otherwise); same answers and errors.",
        test="tests/e2e/test_localcloud_moto_speedups.py"
        "::test_dynamodb_update_validation_errors_every_time",
        build=_build,
    )
]
