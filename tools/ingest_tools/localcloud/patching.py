"""One way to replace attributes of moto and botocore while a LocalCloud runs, and put them back.

A ``Patches`` is a table of (class or module, attribute name) -> replacement, built when it
is installed. Replacements reach what they replace with ``patches.original(owner, name)``.
Installing twice is a no-op; uninstalling restores exactly what was there (an attribute that
was only inherited is deleted again).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Patches"]

_MISSING = object()


class Patches:
    def __init__(self, table: Callable[[], dict[tuple[Any, str], Any]]) -> None:
        self._table = table
        self._originals: dict[tuple[Any, str], Any] = {}

    @property
    def installed(self) -> bool:
        return bool(self._originals)

    def original(self, owner: Any, name: str) -> Any:
        """What ``owner.name`` was before install: its own attribute, else the inherited one."""
        found = self._originals[(owner, name)]
        return getattr(super(owner, owner), name) if found is _MISSING else found

    def install(self) -> None:
        if self._originals:
            return
        for (owner, name), replacement in self._table().items():
            namespace = owner.__dict__ if isinstance(owner, type) else vars(owner)
            self._originals[(owner, name)] = namespace.get(name, _MISSING)
            setattr(owner, name, replacement)

    def uninstall(self) -> None:
        for (owner, name), original in self._originals.items():
            if original is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self._originals.clear()
