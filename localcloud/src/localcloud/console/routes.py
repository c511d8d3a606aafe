"""The console's JSON API, read-only, under ``/_localcloud/console/api/`` (server.py hands
every ``console/...`` admin route here), and its pages (``static``):

* ``GET state-machines``                    ``data.state_machines``;
* ``GET executions?stateMachineArn=&status=&limit=&nextToken=``  ``data.executions``;
* ``GET execution?arn=&pageSize=&pageToken=``                    ``data.execution``;
* ``GET features``                          what the menu offers (``ConsoleExtensions``);
* ``GET queues``                            ``queues.queues``;
* ``GET queue?url=&limit=``                 ``queues.queue`` (peeked, never received);
* ``GET objects?q=`` / ``GET object?key=``  the application's objects provider
  (``ConsoleExtensions.objects`` / ``.object``; 404 when it gives none).
"""

from __future__ import annotations

import mimetypes
import posixpath
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

from localcloud.console import data, extensions, queues

__all__ = ["PAGES", "PREFIX", "handle", "static"]

PREFIX = "console/api/"
PAGES = "console"  # the pages: /_localcloud/console/ (index.html), /_localcloud/console/<file>
_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".md": "text/markdown; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    "": "text/plain; charset=utf-8",  # LICENSE
}


def _required(query: Mapping[str, str], name: str) -> str:
    value = query.get(name)
    if not value:
        raise ValueError(f"the query parameter {name} is required")
    return value


def _executions(cloud: extensions.Cloud, query: Mapping[str, str]) -> Any:
    return data.executions(
        cloud,
        _required(query, "stateMachineArn"),
        status=query.get("status") or None,
        limit=int(query.get("limit") or 100),
        next_token=query.get("nextToken") or None,
    )


def _execution(cloud: extensions.Cloud, query: Mapping[str, str]) -> Any:
    return data.execution(
        cloud,
        _required(query, "arn"),
        page_size=int(query.get("pageSize") or 200),
        page_token=query.get("pageToken") or None,
    )


def _hooks(cloud: extensions.Cloud) -> extensions.ConsoleExtensions:
    hooks = getattr(cloud, "console", None)
    return hooks if isinstance(hooks, extensions.ConsoleExtensions) else _NO_HOOKS


_NO_HOOKS = extensions.ConsoleExtensions()


def _provider(cloud: extensions.Cloud, name: str) -> Any:
    provider = getattr(_hooks(cloud), name)
    if provider is None:
        raise data.NotFound("this cloud's application provides no objects page")
    return provider


ROUTES: dict[str, Callable[[extensions.Cloud, Mapping[str, str]], Any]] = {
    "state-machines": lambda cloud, query: data.state_machines(cloud),
    "executions": _executions,
    "execution": _execution,
    "features": lambda cloud, query: _hooks(cloud).features(),
    "queues": lambda cloud, query: queues.queues(cloud),
    "queue": lambda cloud, query: queues.queue(
        cloud, _required(query, "url"), limit=int(query.get("limit") or 50)
    ),
    "objects": lambda cloud, query: _provider(cloud, "objects")(cloud, query.get("q") or ""),
    "object": lambda cloud, query: _provider(cloud, "object")(cloud, _required(query, "key")),
}


def handle(
    cloud: extensions.Cloud, method: str, route: str, query: Mapping[str, str]
) -> tuple[int, Any]:
    """Answer ``route`` (the part after ``console/api/``) as ``(HTTP status, JSON body)``: 404
    for an unknown route or ARN (``data.NotFound``), 405 for a method other than GET, 400 for
    a missing or bad parameter."""
    endpoint = ROUTES.get(route)
    if endpoint is None:
        return 404, {"error": "NotFound", "message": f"no console route /{PREFIX}{route}"}
    if method != "GET":
        return 405, {"error": "MethodNotAllowed", "message": f"{method} /{PREFIX}{route}"}
    try:
        return 200, endpoint(cloud, query)
    except data.NotFound as exc:
        return 404, {"error": "NotFound", "message": str(exc)}
    except (KeyError, ValueError, TypeError) as exc:
        return 400, {"error": type(exc).__name__, "message": str(exc)}


def static(route: str) -> tuple[int, str, bytes]:
    """A file of ``console/static/`` (``index.html``, its script and style, the vendored
    layout library under ``vendor/``) for ``route`` (the part after ``console/``; empty for
    ``index.html``) as ``(HTTP status, content type, bytes)``; 404 for anything else, and
    for a path that would leave the directory."""
    parts = [part for part in route.split("/") if part] or ["index.html"]
    if any(part in (".", "..") or part.startswith(".") or "\\" in part for part in parts):
        return 404, "text/plain; charset=utf-8", b"not found"
    node = resources.files(__package__).joinpath("static", *parts)
    if not node.is_file():
        return 404, "text/plain; charset=utf-8", f"no console file /{route}".encode()
    content_type = _CONTENT_TYPES.get(posixpath.splitext(parts[-1])[1]) or (
        mimetypes.guess_type(parts[-1])[0] or "application/octet-stream"
    )
    return 200, content_type, node.read_bytes()
