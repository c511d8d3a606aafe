"""Packages built for another machine, run on this one: the host build.

``sam build`` installs a function's wheels for the function's architecture and runtime
(arm64, cp313): an aarch64 ``.so`` cannot load on an x86_64 machine. :func:`host_builds`
finds, in a code or layer directory, each distribution whose wheel tags name another machine
or Python (its ``*.dist-info/WHEEL``), and installs the same name and version for the
runtime's Python on this machine into a directory of its own, made once and cached
(``$LOCALCLOUD_CACHE`` or ``~/.cache/localcloud/host-builds``), that goes before the code on
the environment's path. It says so on stderr, naming the package and both platforms.

:func:`powertools_layer`: the content of the public Powertools layer (which the local cloud
resolves but cannot download): the aws-lambda-powertools version this machine has (else
the latest 3.x) with every extra, as that layer ships it, built the same way.

:func:`requirements_build`: a function's code or a layer from a template that was not built
(``sam build`` not run: CodeUri / ContentUri as they are) whose ``requirements.txt`` names
packages the directory does not hold: those requirements installed for this machine, once, as
sam build's Python builder would install them beside the code (``python/`` for a layer).

The installer is ``uv`` (beside this Python or on PATH), else the runtime Python's pip; it
needs the package index or its cache.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
from importlib import metadata
from pathlib import Path

__all__ = [
    "POWERTOOLS_LAYER",
    "HostBuildError",
    "cache_dir",
    "foreign_distributions",
    "host_builds",
    "made_once",
    "powertools_layer",
    "python_tag",
    "requirements_build",
    "uv_command",
]

#: the public Powertools for AWS Lambda (Python) layers, published by account 017000801446
POWERTOOLS_LAYER = re.compile(
    r"arn:aws[a-z-]*:lambda:[^:]+:017000801446:layer:AWSLambdaPowertoolsPy"
)
LOG = logging.getLogger(__name__)
_LOCK = threading.Lock()
_BUILDING: dict[Path, threading.Lock] = {}


class HostBuildError(subprocess.SubprocessError):
    """The installer could not build a package for this machine (its output says why)."""


def _machine() -> str:
    machine = platform.machine().lower()
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(machine, machine)


def _foreign(tag: str, python_tag: str) -> bool:
    """A wheel tag (``cp313-cp313-manylinux_2_17_aarch64``) this machine's ``python_tag``
    (``cp313``) cannot load: another machine, or another CPython's ABI."""
    interpreter, abi, plat = [*tag.split("-"), "", "", ""][:3]
    if plat == "any":
        return False
    if _machine() not in plat.replace("arm64", "aarch64"):
        return True
    return abi not in ("abi3", "none") and interpreter != python_tag


def foreign_distributions(directory: Path, python_tag: str) -> list[tuple[str, str, str]]:
    """(name, version, first tag) of each distribution in ``directory`` (a task root, or a
    layer's python/ and python/lib/pythonX.Y/site-packages) that this machine cannot load."""
    found = []
    for info in _dist_infos(directory):
        wheel = _lines(info / "WHEEL")
        tags = [line.split(":", 1)[1].strip() for line in wheel if line.startswith("Tag:")]
        if tags and all(_foreign(tag, python_tag) for tag in tags):
            header = (line.partition(":") for line in _lines(info / "METADATA")[:20])
            meta = {k.strip(): v.strip() for k, _, v in header}
            found.append((meta.get("Name", info.name), meta.get("Version", ""), tags[0]))
    return found


def _dist_infos(directory: Path) -> list[Path]:
    roots = [directory, directory / "python", *directory.glob("python/lib/python*/site-packages")]
    return [info for root in roots if root.is_dir() for info in sorted(root.glob("*.dist-info"))]


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


@functools.cache
def python_tag(python: Path) -> str:
    """``cp313`` for a Python 3.13 (asked once per Python)."""
    return subprocess.run(  # noqa: S603 - the runtime's Python
        [str(python), "-c", "import sys; print('cp%d%d' % sys.version_info[:2])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def uv_command() -> str | None:
    """``uv``, beside this Python or on PATH (None: there is none)."""
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return shutil.which("uv", path=search)


def cache_dir(name: str) -> Path:
    """``name`` in the local cloud's cache: ``$LOCALCLOUD_CACHE`` or ``~/.cache/localcloud``."""
    base = os.environ.get("LOCALCLOUD_CACHE") or Path.home() / ".cache" / "localcloud"
    return Path(base) / name


def made_once(target: Path, steps: list[list[str]], partial: Path, record: str) -> Path:
    """``target``, made by ``steps`` (commands that make ``partial``) unless a previous run
    did: ``partial`` is renamed into place whole, with ``record`` in its ``.complete``."""
    if (target / ".complete").exists():
        return target
    shutil.rmtree(partial, ignore_errors=True)
    try:
        for step in steps:
            subprocess.run(step, capture_output=True, text=True, check=True)  # noqa: S603
    except subprocess.CalledProcessError as e:
        shutil.rmtree(partial, ignore_errors=True)
        raise HostBuildError(f"{' '.join(e.cmd)} failed: {e.stderr.strip()[-800:]}") from e
    (partial / ".complete").write_text(record, encoding="utf-8")
    if not (target / ".complete").exists():  # else another process made it meanwhile
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    shutil.rmtree(partial, ignore_errors=True)
    return target


def _install(python: Path, requirements: list[str], *, deps: bool, why: str) -> Path:
    """``requirements`` installed for ``python`` on this machine, once: the directory."""
    key = hashlib.sha256(
        "\n".join([str(python.resolve()), _machine(), str(deps), *sorted(requirements)]).encode()
    ).hexdigest()[:16]
    target = cache_dir("host-builds") / key
    with _LOCK:
        building = _BUILDING.setdefault(target, threading.Lock())
    with building:  # one build of each requirements set at a time, others beside it
        if not (target / ".complete").exists():
            LOG.warning("%s; installing %s for %s (%s) into %s", why, " ".join(requirements),
                        _machine(), python, target)  # fmt: skip
        partial = target.with_name(f"{key}.{os.getpid()}")
        uv = uv_command()
        command = [uv, "pip", "install", "--python", str(python)] if uv else [
            str(python), "-m", "pip", "install", "--disable-pip-version-check"]  # fmt: skip
        command += ["--target", str(partial), "--only-binary", ":all:", *requirements]
        command += [] if deps else ["--no-deps"]
        return made_once(target, [command], partial, "\n".join(requirements))


def host_builds(directories: list[Path], python: Path) -> list[Path]:
    """For each of ``directories`` with foreign packages, their host build."""
    tag = python_tag(python)
    builds = []
    for directory in directories:
        foreign = foreign_distributions(directory, tag)
        if foreign:
            names = ", ".join(f"{n} {v} ({t})" for n, v, t in foreign)
            why = f"{directory} has {names}, not for {tag} on {_machine()}"
            pins = [f"{n}=={v}" for n, v, _ in foreign]
            builds.append(_install(python, pins, deps=False, why=why))
    return builds


def _as_layer(build: Path) -> Path:
    """A layer's content (a directory with python/) for the packages in ``build``."""
    layer = build.with_name(f"{build.name}-layer")
    layer.mkdir(exist_ok=True)
    with contextlib.suppress(FileExistsError):  # another environment made it meanwhile
        (layer / "python").symlink_to(build)
    return layer


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def requirements_build(directory: Path, python: Path, *, layer: bool = False) -> Path | None:
    """The requirements build of ``directory`` (a layer's content when ``layer``); None when
    there is nothing to install (no requirements.txt, or a build that holds them)."""
    try:
        text = (directory / "requirements.txt").read_text(encoding="utf-8")
    except OSError:
        return None
    wanted = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    wanted = [line for line in wanted if line and not line.startswith("-")]
    held = {_normalized(info.name.split("-", 1)[0]) for info in _dist_infos(directory)}
    names = {_normalized(re.split(r"[\s<>=!~;\[@]", line, maxsplit=1)[0]) for line in wanted}
    if not wanted or names <= held:
        return None
    why = f"{directory} is not built (no sam build): its requirements.txt"
    build = _install(python, wanted, deps=True, why=why)
    return _as_layer(build) if layer else build


def powertools_layer(python: Path) -> Path:
    """The public Powertools layer's content for ``python``: a directory with python/."""
    try:
        version = f"=={metadata.version('aws-lambda-powertools')}"
    except metadata.PackageNotFoundError:
        version = ">=3,<4"
    why = "the public Powertools layer (not downloadable here) is built from its package"
    return _as_layer(_install(python, [f"aws-lambda-powertools[all]{version}"], deps=True, why=why))
