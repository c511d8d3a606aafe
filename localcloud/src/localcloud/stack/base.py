"""Shared names of the local stack deploy: errors, the deployed stack, local constants."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

LOG = logging.getLogger(__name__)
# Account that publishes the official Powertools for AWS Lambda layers.
PUBLIC_LAYER_ACCOUNTS = frozenset({"017000801446"})
_PARTITION = "aws"


class StackDeployError(RuntimeError):
    """The template could not be deployed into moto; the message says which resource and why."""


class UnsupportedResourceError(StackDeployError):
    """Resources of a type the local cloud cannot create (moto's CloudFormation would skip
    them without a word)."""

    def __init__(self, resources: dict[str, str]) -> None:
        self.resources = dict(resources)  # logical id -> type
        listed = ", ".join(f"{lid} ({rtype})" for lid, rtype in sorted(resources.items()))
        super().__init__(
            f"the local cloud cannot create {len(resources)} resource(s) of this template: "
            f"{listed}. Their types are outside its scope (localcloud/README.md lists it): "
            "deploy this template to AWS, or test a template without them (a Condition "
            "can leave them out locally)."
        )


class UnsupportedPropertyError(StackDeployError):
    """Properties the local cloud cannot run (moto would ignore them without a word)."""

    def __init__(self, properties: dict[str, list[str]]) -> None:
        self.properties = {lid: sorted(props) for lid, props in properties.items()}
        listed = "; ".join(f"{lid}: {', '.join(p)}" for lid, p in sorted(self.properties.items()))
        super().__init__(
            f"the local cloud cannot run these properties, so it does not deploy them: "
            f"{listed}. It would otherwise ignore them, and behave unlike AWS: deploy this "
            "template to AWS, or test one without them (a Condition can leave them out)."
        )


@dataclass(frozen=True)
class DeployedStack:
    stack_name: str
    region: str
    outputs: dict[str, str]  # template Outputs, resolved
    resources: dict[str, str]  # logical id -> physical id (DescribeStackResources)
    functions: dict[str, str]  # logical id of each function -> physical function name
    types: dict[str, str] = field(default_factory=dict)  # logical id -> resource type
    restored: bool = False  # copied back from this process's first deploy (stack/snapshot.py)

    def stop(self) -> None:
        """Nothing (custom_resources.StackWithCustomResources deletes its custom resources)."""
