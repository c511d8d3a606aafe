"""The deploy's side of custom resources (the protocol is in
features/cloudformation_custom_resources.py).

* While ``create_stack`` runs, a custom resource's provider function is invoked before the
  deploy registers the functions' handlers (it does so once the stack is created, as
  CloudFormation would have created the function first). :func:`early_handlers` readies such a
  function's handler when it is first invoked: imported as the deploy will import it, run with
  the function's environment variables (put back after each invocation; the deploy puts every
  function's into ``os.environ`` afterwards), and with the managed policies of the roles
  created so far known to the local cloud's IAM.
* ``cfnresponse``, the module Lambda provides to the inline (``ZipFile``/``InlineCode``) code
  of a Python function, is importable: moto's copy of AWS's source (the one moto's
  CloudFormation puts next to ``index.py``), at the end of ``sys.path`` so that a function's own
  module of that name comes first. Here every function of the process can import it.
* Stopping the cloud deletes the stack's custom resources as deleting the stack would
  (:class:`StackWithCustomResources`): each provider gets its Delete, newest first, while the
  functions' environment is still set; one that fails is logged, and the cloud stops anyway.
* A deploy with custom resources is not recorded by the snapshot speedup: its providers' side
  effects are not all in moto.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moto.awslambda.models import LambdaFunction
from moto.awslambda.utils import get_backend as get_lambda_backend
from moto.cloudformation import cloudformation_backends
from moto.core import DEFAULT_ACCOUNT_ID
from moto.utilities.utils import load_resource_as_str

from localcloud.features.cloudformation_custom_resources import (
    CustomResourceError,
    delete_custom_resources,
    is_custom_resource_type,
)
from localcloud.runtime import Handler, Runtime
from localcloud.stack.base import LOG, DeployedStack

__all__ = ["StackWithCustomResources", "early_handlers", "present", "stack_type"]

_CFNRESPONSE = "awslambda/resources/cfnresponse.py.txt"


def present(types: Mapping[str, str]) -> bool:
    """Whether a stack (logical id -> type) has custom resources."""
    return any(is_custom_resource_type(t) for t in types.values())


def _has_inline_code(template: dict[str, Any]) -> bool:
    return any(
        isinstance(((r.get("Properties") or {}).get("Code") or {}).get("ZipFile"), str)
        for r in (template.get("Resources") or {}).values()
        if r.get("Type") == "AWS::Lambda::Function"
    )


def provide_cfnresponse() -> Path:
    """A directory holding ``cfnresponse.py``, appended to ``sys.path`` (once)."""
    where = Path(tempfile.gettempdir()) / "localcloud-cfnresponse"
    module = where / "cfnresponse.py"
    source = load_resource_as_str(_CFNRESPONSE) + "\n"
    if not module.exists() or module.read_text() != source:
        where.mkdir(parents=True, exist_ok=True)
        partial = where / f"cfnresponse.py.{os.getpid()}"
        partial.write_text(source)
        partial.replace(module)
    if str(where) not in sys.path:
        sys.path.append(str(where))
    return where


@contextmanager
def _environment(variables: Mapping[str, Any]) -> Iterator[None]:
    previous = {name: os.environ.get(name) for name in variables}
    os.environ.update({name: str(value) for name, value in variables.items()})
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def early_handlers(
    runtime: Runtime,
    region: str,
    stack_name: str,
    *,
    transformed: dict[str, Any],
    code_dirs: Mapping[str, Path],
    resolve_handler: Callable[[str, str, Path | None], Handler],
    managed_policies: Callable[[dict[str, str]], dict[str, tuple[str, ...]]],
) -> Iterator[None]:
    """Around ``create_stack``: a function of the stack invoked before the deploy registers the
    handlers (by a custom resource) runs its handler. ``resolve_handler(handler, logical id,
    code dir)`` imports it; ``managed_policies(logical id -> physical id)`` gives the roles'
    ManagedPolicyArns."""
    if _has_inline_code(transformed):
        provide_cfnresponse()
    backend = get_lambda_backend(DEFAULT_ACCOUNT_ID, region)
    if not hasattr(backend, "deploying"):  # moto's own Lambda (no in-process runtime)
        yield
        return
    ready: dict[str, Handler] = {}

    def created() -> dict[str, Any]:
        stacks = cloudformation_backends[DEFAULT_ACCOUNT_ID][region].stacks.values()
        stack = next((s for s in stacks if s.name == stack_name), None)
        return dict(stack.resource_map._parsed_resources) if stack is not None else {}

    def handler_of(function_name: str) -> Handler | None:
        if function_name in ready:
            return ready[function_name]
        resources = created()
        logical_id = next(
            (
                lid
                for lid, model in resources.items()
                if isinstance(model, LambdaFunction) and model.function_name == function_name
            ),
            None,
        )
        if logical_id is None:
            return None  # not this stack's function
        config = resources[logical_id].get_configuration()
        physical = {
            lid: model.physical_resource_id
            for lid, model in resources.items()
            if isinstance(getattr(model, "physical_resource_id", None), str)
        }
        runtime.authorizer.managed.update(managed_policies(physical))
        variables = (config.get("Environment") or {}).get("Variables") or {}
        code_dir = code_dirs.get(logical_id)
        if code_dir is not None and str(code_dir) not in sys.path:
            sys.path.insert(0, str(code_dir))  # as the deploy does: /var/task comes first
        with _environment(variables):  # a module may read its environment when imported
            handler = resolve_handler(str(config.get("Handler")), logical_id, code_dir)

        def run(event: Any, context: Any) -> Any:
            with _environment(variables):
                return handler(event, context)

        ready[function_name] = run
        return run

    backend.deploying = handler_of
    try:
        yield
    finally:
        backend.deploying = None


@dataclass(frozen=True)
class StackWithCustomResources(DeployedStack):
    """A deployed stack with custom resources: when the cloud stops, they are deleted first."""

    def restore_environment(self) -> None:
        """Send each custom resource its Delete (newest first), then put back os.environ."""
        try:
            self.delete_custom_resources()
        finally:
            super().restore_environment()

    def delete_custom_resources(self) -> None:
        backends = cloudformation_backends[DEFAULT_ACCOUNT_ID][self.region]
        stack = next((s for s in backends.stacks.values() if s.name == self.stack_name), None)
        if stack is None:  # deleted (DeleteStack sent the Deletes) or the mock is gone
            return
        try:
            delete_custom_resources(stack)
        except CustomResourceError as exc:
            LOG.warning("stack %s: Delete of a custom resource failed: %s", self.stack_name, exc)


def stack_type(types: Mapping[str, str]) -> type[DeployedStack]:
    """The DeployedStack class for a stack of these resource types."""
    return StackWithCustomResources if present(types) else DeployedStack
