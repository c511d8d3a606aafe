"""The deploy's side of custom resources (the protocol is in
features/cloudformation_custom_resources.py; ``cfnresponse``, the module Lambda provides to
inline code, is in its zip beside ``index.py``: moto's CloudFormation puts it there). A deploy
with custom resources is not recorded by the snapshot speedup: its providers' side effects are
not all in moto.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from moto.awslambda.utils import get_backend as get_lambda_backend
from moto.cloudformation import cloudformation_backends
from moto.core import DEFAULT_ACCOUNT_ID

from localcloud.features.cloudformation_custom_resources import (
    CustomResourceError,
    delete_custom_resources,
    is_custom_resource_type,
)
from localcloud.runtime import Runtime
from localcloud.stack.base import LOG, DeployedStack

__all__ = ["StackWithCustomResources", "managed_policies_meanwhile", "present", "stack_type"]


def present(types: Mapping[str, str]) -> bool:
    """Whether a stack (logical id -> type) has custom resources."""
    return any(is_custom_resource_type(t) for t in types.values())


def _moto_stack(region: str, name: str) -> Any:
    stacks = cloudformation_backends[DEFAULT_ACCOUNT_ID][region].stacks.values()
    return next((s for s in stacks if s.name == name), None)


@contextmanager
def managed_policies_meanwhile(
    runtime: Runtime,
    region: str,
    stack_name: str,
    managed_policies: Callable[[dict[str, str]], dict[str, tuple[str, ...]]],
) -> Iterator[None]:
    """Around ``create_stack``: a function of the stack invoked meanwhile (by a custom
    resource) has the managed policies of the roles created so far known to the local cloud's
    IAM. ``managed_policies(logical id -> physical id)`` gives the roles' ManagedPolicyArns."""
    backend = get_lambda_backend(DEFAULT_ACCOUNT_ID, region)
    if not hasattr(backend, "deploying"):  # moto's own Lambda (no local runtime)
        yield
        return

    def before_invoking(function_name: str) -> None:
        stack = _moto_stack(region, stack_name)
        resources = dict(stack.resource_map._parsed_resources) if stack is not None else {}
        physical = {
            lid: model.physical_resource_id
            for lid, model in resources.items()
            if isinstance(getattr(model, "physical_resource_id", None), str)
        }
        runtime.authorizer.managed.update(managed_policies(physical))

    backend.deploying = before_invoking
    try:
        yield
    finally:
        backend.deploying = None


@dataclass(frozen=True)
class StackWithCustomResources(DeployedStack):
    """A deployed stack with custom resources: stopping the cloud deletes them as deleting the
    stack would (each provider gets its Delete, newest first; one that fails is logged, and the
    cloud stops anyway)."""

    def stop(self) -> None:
        stack = _moto_stack(self.region, self.stack_name)
        if stack is None:  # deleted (DeleteStack sent the Deletes) or the mock is gone
            return
        try:
            delete_custom_resources(stack)
        except CustomResourceError as exc:
            LOG.warning("stack %s: Delete of a custom resource failed: %s", self.stack_name, exc)


def stack_type(types: Mapping[str, str]) -> type[DeployedStack]:
    """The DeployedStack class for a stack of these resource types."""
    return StackWithCustomResources if present(types) else DeployedStack
