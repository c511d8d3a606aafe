"""Fix: DynamoDB item operations are atomic, as on DynamoDB.

moto reads the item, checks the condition and writes without a lock
(dynamodb/models/__init__.py ``update_item``), so two threads could both pass
``attribute_not_exists(pk)``: two executions claiming one object version, which DynamoDB
never allows. Every item and table-read operation of the backend runs under one lock here,
as one request at a time per item does on DynamoDB.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from moto.dynamodb.models import DynamoDBBackend

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_ATOMIC = (
    "put_item",
    "get_item",
    "update_item",
    "delete_item",
    "query",
    "scan",
    "batch_get_item",
    "batch_write_item",
    "transact_get_items",
    "transact_write_items",
    "execute_statement",
    "execute_transaction",
    "batch_execute_statement",
)
_items_lock = threading.RLock()  # batch and transaction operations call the item operations


def _atomic(name: str) -> Any:
    original = DynamoDBBackend.__dict__[name]

    @functools.wraps(original)
    def operation(self: DynamoDBBackend, *args: Any, **kwargs: Any) -> Any:
        with _items_lock:
            return original(self, *args, **kwargs)

    return operation


def _build(rt: Runtime) -> Targets:
    return {(DynamoDBBackend, name): _atomic(name) for name in _ATOMIC}


PATCHES = [
    Patch(
        name="dynamodb-atomic-items",
        kind=Kind.FIX,
        reason="Conditional writes are atomic: two concurrent claims of one item cannot both "
        "pass attribute_not_exists (moto checks and writes without a lock).",
        test="tests/e2e/test_localcloud_moto_speedups.py"
        "::test_conditional_writes_are_atomic_under_concurrency",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto "
        "dynamodb/models/__init__.py (no lock around condition + write)",
    )
]
