"""Powertools Logger, Tracer and Metrics shared by every handler.

Service name and metrics namespace come from POWERTOOLS_SERVICE_NAME and
POWERTOOLS_METRICS_NAMESPACE (set in template.yaml's Globals).

Tracing (template.yaml: ``Tracing: Active``) records a subsegment per handler invocation and
one per AWS call: botocore is the only library patched (``TRACED_MODULES``), as the functions
make no other outbound calls. Powertools' default, ``patch_all``, would import every library
the X-Ray SDK can patch that is installed (requests, sqlite3, ...) on each cold start.

The X-Ray SDK itself is imported only where tracing is enabled (``XRayProvider``): powertools
imports ``aws_xray_sdk.core`` whenever a Tracer is built, even a disabled one, and outside
Lambda that SDK builds a client for centralized sampling on import. Where it is imported,
``asyncio`` is deferred (``defer_import``): the SDK's wrapt (2.x, from the Powertools layer)
imports it at import time for decorators the functions never use, about 11 ms of every traced
cold start on Python 3.13 (docs/performance.md, Cold start).

``handler_imported``: each handler module calls it last. When the runtime is importing that
module as the function's handler (``_HANDLER``), what the import made is frozen
(``gc.freeze``): the modules, classes and functions live as long as the process, and the
garbage collector's passes no longer go over them, from the first invocation's clients on.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import types
from collections.abc import Iterator, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager, nullcontext
from functools import cached_property
from importlib.util import find_spec, module_from_spec
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.tracing.base import BaseProvider, BaseSegment

from ingest_pipeline.logic.keys import correlation_id
from ingest_pipeline.models import ObjectRef

if TYPE_CHECKING:
    import numbers
    import traceback

# What the Tracer patches for the X-Ray SDK (names of aws_xray_sdk.core.patcher): every AWS
# call goes through botocore.
TRACED_MODULES = ("botocore",)


class _NoSegment(BaseSegment):
    """The subsegment of an invocation that is not traced: records nothing."""

    def close(self, end_time: int | None = None) -> None:
        pass

    def add_subsegment(self, subsegment: Any) -> None:
        pass

    def remove_subsegment(self, subsegment: Any) -> None:
        pass

    def put_annotation(self, key: str, value: str | numbers.Number | bool) -> None:
        pass

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        pass

    def add_exception(
        self,
        exception: BaseException,
        stack: list[traceback.StackSummary],
        remote: bool = False,
    ) -> None:
        pass


# The modules the X-Ray SDK's dependencies import but the functions never use: wrapt 2.x's
# ``wrapt.synchronization`` imports asyncio (about 30 modules) for its async decorators.
DEFERRED_BY_XRAY = ("asyncio",)
_DEFERRED_LOCK = threading.RLock()
_DEFERRED_RUNNING: set[str] = set()


class _DeferredModule(types.ModuleType):
    """A module in ``sys.modules`` whose code runs on the first access to an attribute it does
    not have yet (``import name`` alone does not run it). Unlike ``importlib.util.LazyLoader``,
    its ``__spec__`` can be read without loading it, which ``import`` statements do."""

    def __getattr__(self, attr: str) -> Any:
        spec = self.__spec__
        if spec is None or spec.loader is None:  # never: defer_import gives it both
            raise AttributeError(attr)
        with _DEFERRED_LOCK:  # reentrant: the module's own code may look itself up as it runs
            if type(self) is _DeferredModule and spec.name not in _DEFERRED_RUNNING:
                _DEFERRED_RUNNING.add(spec.name)
                try:
                    spec.loader.exec_module(self)
                except BaseException:
                    sys.modules.pop(spec.name, None)  # as a failed import leaves it
                    raise
                finally:
                    _DEFERRED_RUNNING.discard(spec.name)
                object.__setattr__(self, "__class__", types.ModuleType)
        if type(self) is _DeferredModule:  # looked up by its own code before it defines it
            raise AttributeError(f"partially initialized module {spec.name!r} has no {attr!r}")
        return getattr(self, attr)


def defer_import(name: str) -> None:
    """Put ``name`` (a top-level module not imported yet) in ``sys.modules`` unexecuted: its
    code runs when an attribute of it is first used, if ever."""
    if name in sys.modules:
        return
    spec = find_spec(name)
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    module.__class__ = _DeferredModule
    sys.modules[name] = module


def _xray_sdk() -> Any:
    """``aws_xray_sdk.core``, imported without what it never needs here."""
    for name in DEFERRED_BY_XRAY:
        defer_import(name)
    import aws_xray_sdk.core

    return aws_xray_sdk.core


class XRayProvider(BaseProvider):
    """The X-Ray SDK's recorder, imported the first time tracing needs it.

    Until ``enabled`` is set (by ``_build_tracer``, when powertools has decided that tracing is
    on), subsegments are no-ops and nothing of the SDK is imported.
    """

    def __init__(self) -> None:
        self.enabled = False

    @cached_property
    def recorder(self) -> Any:
        xray_recorder = _xray_sdk().xray_recorder
        # What powertools does for its own X-Ray provider: send each subsegment as it ends
        # (powertools-lambda-python issue 283).
        xray_recorder.configure(streaming_threshold=0)
        return xray_recorder

    @contextmanager
    def in_subsegment(self, name: str | None = None, **kwargs: Any) -> Iterator[Any]:
        if not self.enabled:
            yield _NoSegment()
            return
        with self.recorder.in_subsegment(name=name, **kwargs) as subsegment:
            yield subsegment

    def in_subsegment_async(
        self, name: str | None = None, **kwargs: Any
    ) -> AbstractAsyncContextManager[Any]:
        if not self.enabled:
            return nullcontext(_NoSegment())
        manager: AbstractAsyncContextManager[Any] = self.recorder.in_subsegment_async(
            name=name, **kwargs
        )
        return manager

    def put_annotation(self, key: str, value: str | numbers.Number | bool) -> None:
        if self.enabled:
            self.recorder.put_annotation(key=key, value=value)

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        if self.enabled:
            self.recorder.put_metadata(key=key, value=value, namespace=namespace)

    def patch(self, modules: Sequence[str]) -> None:
        # Powertools calls it from Tracer() when tracing is enabled (never when disabled).
        _ = self.recorder  # configured before it patches, as the SDK asks
        _xray_sdk().patch(modules)

    def patch_all(self) -> None:
        # ``tracer.patch()`` without modules: all that the functions use.
        self.patch(TRACED_MODULES)


def _build_tracer() -> Tracer:
    provider = XRayProvider()
    built = Tracer(provider=provider, patch_modules=TRACED_MODULES)
    # Powertools' decision: POWERTOOLS_TRACE_DISABLED, or not in Lambda (LAMBDA_TASK_ROOT).
    provider.enabled = not built.disabled
    return built


logger = Logger()
tracer = _build_tracer()
# The template sets POWERTOOLS_METRICS_NAMESPACE; the default keeps direct invocations valid.
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "S3IngestPipeline"))


def bind_object(obj: ObjectRef, execution_arn: str, attempt: int) -> None:
    """Every log line of this invocation carries the object and the execution."""
    logger.set_correlation_id(correlation_id(obj.bucket, obj.key, obj.version_id))
    logger.append_keys(
        bucket=obj.bucket,
        object_key=obj.key,
        version_id=obj.version_id,
        execution_arn=execution_arn,
        attempt=attempt,
    )
    tracer.put_annotation("object_key", obj.key)


def handler_imported(module: str) -> None:
    """Called last by each handler module (``__name__``). Where the runtime imports it as the
    function's handler (``_HANDLER`` names its ``handler``: a cold start, not a test or another
    handler importing it), every object the import made moves to the collector's permanent
    generation (``gc.freeze``): they live as long as the execution environment, and without this
    each older-generation pass after the import (the first invocation's clients, then every few
    hundred thousand allocations) goes over them all again: some 70 M instructions of each cold
    start (docs/performance.md, Cold start). The collector, off while the runtime imports a
    handler (ingest_pipeline/__init__.py), is on again after any. Frozen with them: the few
    hundred objects of cyclic garbage the import leaves (classes the standard library replaces
    as it loads), which a collection first would cost 15-20 ms to free
    (tests/unit/test_cold_start.py bounds them)."""
    if os.environ.get("_HANDLER", "").rpartition(".")[0] == module:
        gc.freeze()
    gc.enable()  # off while the runtime imports a handler (ingest_pipeline/__init__.py)
