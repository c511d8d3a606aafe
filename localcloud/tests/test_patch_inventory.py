"""The local cloud's patch registry: every patch fits the installed moto, names a test that
exists, lives in the folder of its kind, and installing refuses what no longer fits."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcloud import registry
from localcloud.patching import (
    Kind,
    Patch,
    PatchError,
    PatchSet,
    moto_version,
    version_in_range,
)
from localcloud.runtime import Runtime

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
FOLDER = {Kind.FIX: "fixes", Kind.FEATURE: "features", Kind.SPEEDUP: "speedups"}


@pytest.fixture
def runtime() -> Iterator[Runtime]:
    rt = Runtime()
    yield rt
    rt.close()


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }


@pytest.mark.parametrize("patch", registry.ALL, ids=lambda p: p.name)
def test_each_patch_names_a_test_that_exists(patch: Patch) -> None:
    path, _, name = patch.test.partition("::")
    assert (ROOT / path).is_file(), f"{patch.name}: no test file {path}"
    assert name in _test_names(ROOT / path), f"{patch.name}: no test {name} in {path}"


@pytest.mark.parametrize("patch", registry.ALL, ids=lambda p: p.name)
def test_each_patch_lives_in_the_folder_of_its_kind(patch: Patch) -> None:
    # what only the stack deploy installs (around create_stack) lives with it, in stack/
    folder = "stack" if patch.when == "deploy" else FOLDER[patch.kind]
    assert patch.module.split(".")[-2] == folder, patch.module
    assert patch.reason and patch.test
    if patch.kind is Kind.FIX:
        assert patch.upstream, f"{patch.name}: a fix names the moto issue it corresponds to"


def test_every_patch_fits_the_installed_moto(runtime: Runtime) -> None:
    _, problems = PatchSet(registry.ALL).targets(runtime)
    assert problems == []
    assert all(version_in_range(moto_version(), p.moto) for p in registry.ALL)


def test_install_refuses_a_target_moto_no_longer_has(runtime: Runtime) -> None:
    owner: Any = type("Owner", (), {"present": 1})
    renamed = Patch(
        "renamed",
        Kind.FIX,
        "r",
        "t",
        lambda rt: {(owner, "present"): 2, (owner, "renamed_in_moto"): 3},
        upstream="u",
    )
    with pytest.raises(PatchError, match="renamed_in_moto does not exist"):
        PatchSet([renamed]).install(runtime)
    assert owner.present == 1  # nothing half-installed


def test_install_refuses_another_moto_version(runtime: Runtime) -> None:
    owner: Any = type("Owner", (), {"present": 1})
    old = Patch("old", Kind.FIX, "r", "t", lambda rt: {(owner, "present"): 2}, moto=("<5.0",))
    with pytest.raises(PatchError, match=r"written for moto <5\.0, installed"):
        PatchSet([old]).install(runtime)


def test_install_refuses_to_add_what_moto_now_has(runtime: Runtime) -> None:
    owner: Any = type("Owner", (), {"present": 1})
    adds = Patch(
        "adds", Kind.FEATURE, "r", "t", lambda rt: {(owner, "present"): 2}, adds=("present",)
    )
    with pytest.raises(PatchError, match="now has"):
        PatchSet([adds]).install(runtime)


def test_install_refuses_two_patches_of_one_attribute(runtime: Runtime) -> None:
    owner: Any = type("Owner", (), {"present": 1})
    first = Patch("first", Kind.SPEEDUP, "r", "t", lambda rt: {(owner, "present"): 2})
    second = Patch("second", Kind.SPEEDUP, "r", "t", lambda rt: {(owner, "present"): 3})
    with pytest.raises(PatchError, match="also replaced by first"):
        PatchSet([first, second]).install(runtime)


def test_uninstall_restores_exactly_what_was_there(runtime: Runtime) -> None:
    patches = PatchSet(registry.ALL)
    table, _ = patches.targets(runtime)

    def snapshot() -> dict[tuple[Any, str], Any]:
        return {
            (owner, name): (owner.__dict__ if isinstance(owner, type) else vars(owner)).get(name)
            for owner, name in table
        }

    before = snapshot()
    patches.install(runtime)
    try:
        assert snapshot() != before
    finally:
        patches.uninstall()
    assert snapshot() == before


def test_speedups_and_conditional_patches_are_chosen_as_asked() -> None:
    names = {p.name for p in registry.patch_set(speedups=False, enabled=frozenset())}
    assert not names & {p.name for p in registry.SPEEDUPS}
    assert "eventbridge-target-delivery" not in names
    assert {p.name for p in registry.FIXES if not p.when} <= names
    everything = {p.name for p in registry.patch_set(speedups=True)}
    assert everything == {p.name for p in registry.ALL if p.when != "deploy"}
    deploy = {p.name for p in registry.deploy_patch_set(speedups=True)}
    assert deploy == {p.name for p in registry.ALL if p.when == "deploy"}
    with pytest.raises(ValueError, match="no such patches"):
        registry.patch_set(without=frozenset({"nope"}))
