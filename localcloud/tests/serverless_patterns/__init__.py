"""The serverless-patterns corpus: published SAM templates of aws-samples/serverless-patterns
whose resources are all in the local cloud's scope (published/serverless-patterns/SOURCE.md
says which, from which commit, and how they were chosen), each with what its README says to
do after ``sam deploy``, as code (``steps_*.py``: one function per pattern).

``corpus.json`` gives each pattern's expected outcome on the local cloud:

* ``deploys``: deploys; it *runs* when its README's test steps are written here (``STEPS`` of
  a steps module) and end as the README says. ``PENDING`` of a steps module holds the steps
  of a pattern that do not end so yet, with the reason (run by nothing, counted as not running);
* ``refused``: the deploy refuses a construct the local cloud cannot run, by name (``refusal``
  is a part of the message);
* ``aside``: needs what another issue builds (a process per function: its own environment
  variables, its own packages); ``reason`` says what;
* ``upstream``: does not deploy on AWS either (``reason``): not in the denominator.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import boto3

from localcloud.cloud import LocalCloud

CORPUS = Path(__file__).parents[1] / "published" / "serverless-patterns"
T = TypeVar("T")


@dataclass(frozen=True)
class Pattern:
    name: str
    status: str
    reason: str = ""
    refusal: str = ""
    parameters: dict[str, str] = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return CORPUS / self.name

    @property
    def template(self) -> Path:
        return next(p for p in sorted(self.dir.glob("template.y*ml")))

    def cloud(self, **kwargs: Any) -> LocalCloud:
        """The pattern's template on a new local cloud (use as a context manager)."""
        stack = self.name.lower().replace("_", "-")[:40].strip("-")
        return LocalCloud(self.template, stack_name=stack, parameters=self.parameters, **kwargs)


def patterns() -> dict[str, Pattern]:
    manifest = json.loads((CORPUS / "corpus.json").read_text())
    return {name: Pattern(name, **entry) for name, entry in sorted(manifest.items())}


Steps = Callable[[LocalCloud, Pattern], None]


def steps(which: str = "STEPS") -> dict[str, Steps]:
    """Every pattern's README steps (``which="PENDING"``: those that do not pass yet, each
    with its reason), from the steps_*.py modules of this package."""
    import importlib
    import pkgutil

    found: dict[str, Any] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("steps_"):
            module = importlib.import_module(f"{__name__}.{info.name}")
            table = getattr(module, which, {})
            clash = found.keys() & table.keys()
            if clash:
                raise ValueError(f"{info.name}: steps defined twice: {sorted(clash)}")
            found.update(table)
    return found


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 30) -> T:
    """``probe()``'s first truthy value, polled until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


#: Lambda's own lines around each invocation's output in a function's log
_PLATFORM_LINES = ("START RequestId: ", "END RequestId: ", "REPORT RequestId: ", "INIT_START ")


def function_log(function: str) -> list[str]:
    """What ``function`` (physical name) has written to its log so far, as ``sam logs`` or
    ``aws logs filter-log-events --log-group-name /aws/lambda/<function>`` show it, without
    Lambda's own START / END / REPORT lines (wherever the cloud runs its functions:
    features/lambda_logs.py)."""
    logs = boto3.client("logs")
    pages = logs.get_paginator("filter_log_events").paginate(logGroupName=f"/aws/lambda/{function}")
    try:
        events = [event for page in pages for event in page["events"]]
    except logs.exceptions.ResourceNotFoundException:  # not invoked yet
        return []
    return [e["message"] for e in events if not e["message"].startswith(_PLATFORM_LINES)]
