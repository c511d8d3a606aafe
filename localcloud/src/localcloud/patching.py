"""Every replacement the local cloud makes in moto or botocore, as a registered, checked patch.

A :class:`Patch` records what it replaces (its targets, built for one runtime.py ``Runtime``), its
kind, why it exists, the moto versions it was written against and the test that fails without it.
:class:`PatchSet` installs a list of patches and refuses (``PatchError``, naming every problem)
when the installed moto is outside a patch's range, when a target attribute no longer exists (a
renamed method would otherwise become a replacement nothing calls), or when two patches replace the
same attribute. ``uninstall`` restores exactly what was there (an attribute that was only inherited
is deleted again). ``localcloud patches`` prints the inventory.
"""

from __future__ import annotations

import enum
import itertools
import operator
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from localcloud.runtime import Runtime

__all__ = [
    "MOTO_TESTED",
    "SPEEDUPS_VARIABLE",
    "WITHOUT_VARIABLE",
    "Kind",
    "Patch",
    "PatchError",
    "PatchSet",
    "Targets",
    "moto_version",
    "speedups_enabled",
    "version_in_range",
    "without_from_environment",
]

#: Replacements by (owner, attribute name); owner is a class or a module.
Targets = dict[tuple[Any, str], Any]
#: The moto releases every patch here was written and tested against (pyproject.toml pins one).
MOTO_TESTED = (">=5.2.5", "<5.3")
_MISSING = object()
SPEEDUPS_VARIABLE = "LOCALCLOUD_SPEEDUPS"
# Patch names to leave out, comma-separated: run a patch's test without it to see it fail
# (scripts/check_patches.py does that for every patch).
WITHOUT_VARIABLE = "LOCALCLOUD_WITHOUT"


def speedups_enabled() -> bool:
    return os.environ.get(SPEEDUPS_VARIABLE, "").strip().lower() in {"1", "true", "yes", "on"}


def without_from_environment() -> frozenset[str]:
    raw = os.environ.get(WITHOUT_VARIABLE, "")
    return frozenset(name.strip() for name in raw.split(",") if name.strip())


class Kind(enum.StrEnum):
    FIX = "fix"  # moto answers differently from AWS (fixes/: one file per difference)
    FEATURE = "feature"  # what moto does not do nor offers an extension point for (features/)
    SPEEDUP = "speedup"  # same answers, less CPU (speedups/): all passes without, slower


class PatchError(RuntimeError):
    """The patches cannot be installed as registered."""


@dataclass(frozen=True)
class Patch:
    """One reason to replace attributes of moto/botocore, and everything a reviewer needs."""

    name: str
    kind: Kind
    reason: str
    test: str  # pytest node id of the test that fails without this patch
    build: Callable[[Runtime], Targets] = field(repr=False)
    moto: tuple[str, ...] = MOTO_TESTED
    upstream: str = ""  # fixes: the moto issue / pull request it corresponds to
    # Installed only when the cloud enables this feature (e.g. "event_delivery").
    when: str = ""
    # Attributes this patch adds (moto has no such operation): they must NOT exist yet, so
    # the day moto implements one, installing says so instead of hiding moto's version.
    adds: tuple[str, ...] = ()

    @property
    def module(self) -> str:
        return str(self.build.__module__)


def moto_version() -> str:
    return metadata.version("moto")


def _parse(version: str) -> tuple[int, ...]:
    digits = ("".join(ch for ch in piece if ch.isdigit()) for piece in version.split("."))
    return tuple(int(part) for part in itertools.takewhile(bool, digits))


_OPERATORS = {">=": operator.ge, "<=": operator.le, "==": operator.eq}
_OPERATORS |= {">": operator.gt, "<": operator.lt}  # tried after ">=" and "<="


def version_in_range(version: str, specifiers: Iterable[str]) -> bool:
    """``version`` against specifiers like ``">=5.2.5"``, ``"<5.3"`` (>=, >, <=, <, ==)."""
    for spec in specifiers:
        op = next(o for o in _OPERATORS if spec.startswith(o))
        have, want = _parse(version), _parse(spec[len(op) :])
        width = max(len(have), len(want))
        if not _OPERATORS[op](have + (0,) * (width - len(have)), want + (0,) * (width - len(want))):
            return False
    return True


def _qualname(owner: Any) -> str:
    return str(getattr(owner, "__qualname__", getattr(owner, "__name__", owner)))


class PatchSet:
    """Installs registered patches for one runtime, and puts everything back."""

    def __init__(self, patches: Iterable[Patch]) -> None:
        self.patches = list(patches)
        names = [p.name for p in self.patches]
        clashes = sorted({n for n in names if names.count(n) > 1})
        if clashes:
            raise PatchError(f"patch names registered twice: {clashes}")
        self._originals: dict[tuple[Any, str], Any] = {}

    def __iter__(self) -> Iterator[Patch]:
        return iter(self.patches)

    def targets(self, runtime: Runtime) -> tuple[Targets, list[str]]:
        """Every replacement these patches make for ``runtime``, and the problems found."""
        version = moto_version()
        problems: list[str] = []
        table: Targets = {}
        owners: dict[tuple[Any, str], str] = {}
        for patch in self.patches:
            if not version_in_range(version, patch.moto):
                problems.append(
                    f"{patch.name}: written for moto {','.join(patch.moto)}, installed {version}"
                )
                continue
            for (owner, name), replacement in patch.build(runtime).items():
                where = _qualname(owner)
                if name in patch.adds:
                    if hasattr(owner, name):
                        problems.append(
                            f"{patch.name}: moto {version} now has {where}.{name}; "
                            "use it and drop this patch"
                        )
                        continue
                elif not hasattr(owner, name):
                    problems.append(
                        f"{patch.name}: {where}.{name} does not exist in moto {version}"
                    )
                    continue
                if (owner, name) in owners:
                    problems.append(
                        f"{patch.name}: {where}.{name} is also replaced by {owners[(owner, name)]}"
                    )
                    continue
                owners[(owner, name)] = patch.name
                table[(owner, name)] = replacement
        return table, problems

    def install(self, runtime: Runtime) -> None:
        if self._originals:
            return
        table, problems = self.targets(runtime)
        if problems:
            raise PatchError(
                "the local cloud's patches do not fit the installed moto:\n  "
                + "\n  ".join(problems)
            )
        for (owner, name), replacement in table.items():
            namespace = owner.__dict__ if isinstance(owner, type) else vars(owner)
            self._originals[(owner, name)] = namespace.get(name, _MISSING)
            setattr(owner, name, replacement)

    def uninstall(self) -> None:
        for (owner, name), original in reversed(self._originals.items()):
            if original is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self._originals.clear()

    def inventory(self, runtime: Runtime) -> list[dict[str, Any]]:
        """One row per patch: name, kind, targets, reason, moto range, test, upstream."""
        rows = []
        for patch in self.patches:
            targets = sorted(
                f"{o.__module__ + '.' if isinstance(o, type) else ''}{_qualname(o)}.{n}"
                for o, n in patch.build(runtime)
            )
            rows.append(
                {
                    "name": patch.name,
                    "kind": str(patch.kind),
                    "module": patch.module,
                    "targets": targets,
                    "reason": patch.reason,
                    "moto": ",".join(patch.moto),
                    "test": patch.test,
                    "upstream": patch.upstream,
                    "when": patch.when,
                }
            )
        return rows
