"""Speedup: a stack deployed again in the same process is copied back, not created again.

What moto holds after a deploy depends only on what the deploy was given: the transformed
template, its parameters, the stack name and region, the patches installed around
``create_stack``, and whether IAM is enforced. So the first deploy of one such key records
moto's backends as they stand right after it (one deep copy, ~20 ms of CPU) with what the
deploy learnt (outputs, resources, managed policies, the deploy report); a later deploy of the
same key, in a fresh mock, copies the recorded backends back (~15 ms) instead of running
``create_stack`` and its checks again (~0.5 s). Everything a deploy does for the cloud that
runs it (the managed policies known, its functions' environments) happens as before, so
each cloud still starts with new resources of its own, in the state the deploy left them.

Only successful deploys are recorded; a template, a file it inlines or a parameter that
changes makes a new key. ``LOCALCLOUD_SPEEDUPS=0``, or ``stack_snapshot`` in
``LOCALCLOUD_WITHOUT``, deploys every time.

Tests: localcloud/tests/test_stack_snapshot.py.
"""

from __future__ import annotations

import _thread
import copy
import copyreg
import hashlib
import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moto.core.base_backend import BackendDict
from moto.ssm.models import ParameterDict

from localcloud.patching import speedups_enabled, without_from_environment
from localcloud.stack.template import parse_yaml

__all__ = ["NAME", "Recorded", "enabled", "key", "record", "restore", "sources"]

NAME = "stack_snapshot"
# BackendDict's own attributes; any other (S3's bucket_accounts) is state and is recorded.
_STRUCTURE = frozenset(
    {"backend", "service_name", "_use_boto3_regions", "_additional_regions", "_id"}
)
_RECORDED: dict[str, tuple[Recorded, list[tuple[BackendDict[Any], Any]]]] = {}
_LOCK = threading.Lock()
_KEEP = 16  # recorded deploys kept (the oldest goes first)


@dataclass(frozen=True)
class Recorded:
    """What the first deploy of a key learnt besides moto's state."""

    outputs: dict[str, str]
    resources: dict[str, str]
    types: dict[str, str]
    managed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    created: list[Any] = field(default_factory=list)


def enabled() -> bool:
    return speedups_enabled() and NAME not in without_from_environment()


def sources(template: Path) -> list[str]:
    """What a deploy reads of ``template``: its text and each local definition it inlines
    (stack/template.py ``localize``; code directories become placeholder archives)."""
    text = template.read_text()
    found = [text]
    for resource in (parse_yaml(text).get("Resources") or {}).values():
        uri = ((resource or {}).get("Properties") or {}).get("DefinitionUri")
        if isinstance(uri, str) and not uri.startswith("s3://"):
            try:
                found.append((template.parent / uri).read_text())
            except OSError as exc:
                found.append(repr(exc))  # the deploy reports it
    return found


def key(*parts: Any) -> str:
    """A digest of everything the deploy depends on."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _parameter_dict(value: ParameterDict) -> tuple[Any, ...]:
    # A defaultdict whose __init__ takes (account, region): copied as such, with its state.
    args = (value.account_id, value.region_name)
    return ParameterDict, args, dict(vars(value)), None, iter(dict(value).items())


_REDUCERS: dict[type, Any] = {
    type(threading.RLock()): lambda _: (threading.RLock, ()),
    _thread.LockType: lambda _: (threading.Lock, ()),
    # a Condition keeps its lock's bound methods: a copy must be a new Condition
    threading.Condition: lambda _: (threading.Condition, ()),
    ParameterDict: _parameter_dict,
}


@contextmanager
def _copyable() -> Iterator[None]:
    """Locks are copied as new locks (moto's queues and stacks hold some), for this copy only."""
    with _LOCK:
        for kind, reducer in _REDUCERS.items():
            copyreg.pickle(kind, reducer)
        try:
            yield
        finally:
            for kind in _REDUCERS:
                copyreg.dispatch_table.pop(kind, None)


def _state(backend_dict: BackendDict[Any]) -> dict[str, Any]:
    return {
        "accounts": {account: dict(regions) for account, regions in backend_dict.items()},
        "attributes": {k: v for k, v in vars(backend_dict).items() if k not in _STRUCTURE},
    }


def _copy(states: list[tuple[BackendDict[Any], Any]]) -> list[tuple[BackendDict[Any], Any]]:
    """One deep copy of every service's state (references between services kept)."""
    memo: dict[int, Any] = {id(bd): bd for bd, _ in states}
    with _copyable():
        return [(bd, copy.deepcopy(state, memo)) for bd, state in states]


def _homes() -> dict[int, tuple[str, str]]:
    """Where each of moto's BackendDicts lives (module, attribute). A patch may put a new one
    there for each cloud (the local Lambda backend does): the copy goes where it lives."""
    found: dict[int, tuple[str, str]] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("moto.") and name.endswith(".models"):
            for attribute, value in list(vars(module).items()):
                if isinstance(value, BackendDict):
                    found.setdefault(id(value), (name, attribute))
    return found


def record(digest: str, recorded: Recorded) -> None:
    """moto's backends as they are now, right after the deploy of ``digest``."""
    homes = _homes()
    states = [
        (bd, {**_state(bd), "home": homes.get(id(bd))})
        for bd in list(BackendDict._instances)  # type: ignore[misc]
    ]
    _RECORDED[digest] = (recorded, _copy(states))
    while len(_RECORDED) > _KEEP:
        del _RECORDED[next(iter(_RECORDED))]


def restore(digest: str) -> Recorded | None:
    """moto's backends as the recorded deploy of ``digest`` left them (a new copy), or None."""
    found = _RECORDED.get(digest)
    if found is None:
        return None
    recorded, states = found
    for recorded_dict, state in _copy(states):
        home = state["home"]
        live = getattr(sys.modules[home[0]], home[1], None) if home else None
        backend_dict = live if isinstance(live, BackendDict) else recorded_dict
        vars(backend_dict).update(state["attributes"])
        for account, regions in state["accounts"].items():
            per_account = backend_dict[account]  # registers it among moto's backends in use
            for region, backend in regions.items():
                if type(backend) is recorded_dict.backend:  # the live dict's class, if per cloud
                    backend.__class__ = backend_dict.backend
                dict.__setitem__(per_account, region, backend)
    return recorded
