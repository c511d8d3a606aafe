"""Handlers of the asynchronous-invocation test template (localcloud/tests/test_lambda_async.py)."""

from typing import Any


def fail(event: Any, context: Any) -> Any:
    raise ValueError(f"cannot process {event!r}"[:200])


def maybe_fail(event: Any, context: Any) -> Any:
    if isinstance(event, dict) and event.get("fail"):
        raise RuntimeError(f"asked to fail: {event['fail']}")
    return {"processed": event, "requestId": context.aws_request_id}
