"""Shared names of the local stack deploy: errors, the deployed stack, local constants."""

from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LOG = logging.getLogger(__name__)
CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]
# Account that publishes the official Powertools for AWS Lambda layers.
PUBLIC_LAYER_ACCOUNTS = frozenset({"017000801446"})
_UNRESOLVED = re.compile(r"\$\{[A-Za-z0-9_.:]+\}")
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
    environment: dict[str, str] = field(default_factory=dict)  # put into os.environ
    _previous_environment: dict[str, str | None] = field(default_factory=dict, repr=False)
    code_dirs: tuple[Path, ...] = ()  # the functions' local CodeUri directories
    restored: bool = False  # copied back from this process's first deploy (stack/snapshot.py)

    def restore_environment(self) -> None:
        """Put back the os.environ values ``deploy`` replaced."""
        for name, value in self._previous_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        cold_start(self.code_dirs)
        forget_unpacked_code(self.code_dirs)


def forget_unpacked_code(code_dirs: Iterable[Path]) -> None:
    """The modules of code the deploy unpacked (inline code, zips: stack/template.py's
    ``localcloud-code`` directories) leave ``sys.modules`` with their stack: the next stack
    of the process with the same code imports it again, cold, instead of finding the module
    (and what it read from the environment at import) of this one."""
    unpacked = Path(tempfile.gettempdir()) / "localcloud-code"
    roots = tuple(
        f"{Path(d).resolve()}{os.sep}" for d in code_dirs if Path(d).is_relative_to(unpacked)
    )
    for name, module in list(sys.modules.items()):
        if roots and (getattr(module, "__file__", None) or "").startswith(roots):
            del sys.modules[name]


def cold_start(code_dirs: Iterable[Path]) -> None:
    """Every deploy starts the functions cold, as on AWS: what their code cached across
    invocations in a module-level ``functools.cache``/``lru_cache`` (an SDK client, a config
    read) is dropped, so nothing made under one local cloud outlives it. A handler importing
    the same modules shares one process here, so they are cleared on deploy and on stop."""
    roots = tuple(f"{Path(d).resolve()}{os.sep}" for d in code_dirs)
    if not roots:
        return
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if not path.startswith(roots):
            continue
        for value in list(vars(module).values()):
            if (
                not isinstance(value, type)  # a class's cache_clear is its instances'
                and callable(getattr(value, "cache_clear", None))
                and getattr(value, "__module__", None) == module.__name__
            ):
                value.cache_clear()


def remember_code(runtime: Any, functions: dict[str, str], configs: dict[str, Any]) -> None:
    """Record each function's handler as the handler of its current code (its CodeSha256):
    a version published from it runs it later (``Runtime.code_handlers``)."""
    for logical_id, name in functions.items():
        sha = str(configs[logical_id].get("CodeSha256", ""))
        if name in runtime.handlers:
            runtime.code_handlers[(name, sha)] = runtime.handlers[name]
