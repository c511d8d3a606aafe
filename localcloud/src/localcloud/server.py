"""HTTP front of a LocalCloud: moto's server app for the AWS APIs, plus a small admin API.

The AWS APIs are moto's own WSGI app (``DomainDispatcherApplication``), serving the same
in-memory backends the in-process cloud uses, so ``aws --endpoint-url http://127.0.0.1:4566
s3 cp file s3://bucket/incoming/...`` drives the whole pipeline.

Admin API (JSON), under ``/_localcloud/``:

* ``GET  outputs``     the stack outputs and function names;
* ``GET  faults``      the faults still armed;  ``POST faults`` adds faults (faults-file
  format, see the README);  ``DELETE faults`` clears them;
* ``GET  deliveries``  EventBridge deliveries (status, attempts, error code, execution);
* ``POST schedules/<name>/fire``  fires a Scheduler schedule once (``{"deliveries": 2}``);
* ``POST events``      ``{"source": "aws.ec2", "detail-type": ..., "detail": {...}}``: an
  event as the AWS service sends it, to the default bus's rules (``LocalCloud.emit``);
* ``POST clock``       ``{"scale": 0}`` virtual time, ``{"scale": 1}`` real time;
* ``GET  console/api/...``  the console's read-only JSON (state machines, executions, one
  execution's history and path): console/routes.py.

The console's pages (not JSON): ``GET /_localcloud/console/`` and the files next to it
(console/static/), with a Content-Security-Policy that admits only their own files.

Who may reach it: ``Front`` and ``FrontPolicy`` below.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import logging
import os
import re
import socket
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, cast
from urllib.parse import urlsplit

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Request, Response

from localcloud import bucket_cors
from localcloud.console import routes as console_routes
from localcloud.console.extensions import Cloud
from localcloud.features.role_sessions import ADMIN_PREFIX, SignedRequests

if TYPE_CHECKING:
    from localcloud.faults import Faults
    from localcloud.features.scheduler import Schedules
    from localcloud.runtime import DeliveryLog, Runtime


class ServedCloud(Cloud, Protocol):
    """What the front serves of a running :class:`~localcloud.cloud.LocalCloud`."""

    runtime: Runtime
    schedules: Schedules | None
    time_scale: float

    @property
    def faults(self) -> Faults: ...
    @property
    def deliveries(self) -> DeliveryLog: ...
    def describe(self) -> dict[str, Any]: ...
    def load_faults(self, spec: dict[str, Any]) -> None: ...
    def emit(
        self, source: str, detail_type: str, detail: dict[str, Any],
        resources: list[str] | tuple[str, ...] = (),
    ) -> dict[str, Any]: ...  # fmt: skip


LOG = logging.getLogger("localcloud.server")

# --- who may reach the local cloud -----------------------------------------------------------
ORIGINS_VARIABLE = "LOCALCLOUD_ALLOWED_ORIGINS"  # like LocalStack's EXTRA_CORS_ALLOWED_ORIGINS
HOSTS_VARIABLE = "LOCALCLOUD_ALLOWED_HOSTS"
ANY_ORIGIN_VARIABLE = "LOCALCLOUD_ALLOW_ANY_ORIGIN"  # like LocalStack's DISABLE_CORS_CHECKS
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
_LOCALHOST_ORIGIN = re.compile(r"https?://(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?")
_HOST_NAME = re.compile(r"\.?[a-z0-9_-]+(\.[a-z0-9_-]+)*|\[[0-9a-f:.]+\]")
_STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# the console's pages: their own files only (the favicon is the empty "data:," of index.html)
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
}
JSON_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def normalize_origin(value: str) -> str:
    """``scheme://host[:port]`` as a browser sends it in ``Origin`` (lower case, no default
    port, no path); ValueError for anything else."""
    parts = urlsplit(value.strip())
    host = parts.hostname
    more = parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc
    if parts.scheme not in ("http", "https") or not host or more:
        raise ValueError(
            f"{value!r} is not an origin: expected http(s)://host[:port], e.g. "
            "http://localhost:3000"
        )
    port = parts.port  # ValueError for a bad one
    default = 80 if parts.scheme == "http" else 443
    name = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{name}" + (f":{port}" if port and port != default else "")


def normalize_host(value: str) -> str:
    """A name of ``--allow-host``: lower case, without a port; ``*.example`` (or ``.example``)
    admits every name under example, ``*`` every name; ValueError for anything else."""
    name = value.strip().lower()
    if name == "*":
        return name
    if name.startswith("*."):
        name = name[1:]
    name = host_name(f"[{name}]" if name.count(":") > 1 and "[" not in name else name)
    if not _HOST_NAME.fullmatch(name):
        raise ValueError(f"{value!r} is not a host name (e.g. myhost.lan, *.localhost, [::1])")
    return name


def host_name(header: str) -> str:
    """The name of a ``Host`` header: lower case, without the port or a final dot."""
    value = header.strip().lower()
    if value.startswith("[") and "]" in value:
        name, _, port = value[1:].partition("]")
        name, port = f"[{name}]", port.removeprefix(":")
    else:
        name, _, port = value.partition(":")
    # a port that is not one (localhost:80@evil.example) leaves a name no rule admits
    return name.rstrip(".") if port.isdigit() or not port else value


def is_loopback(address: str) -> bool:
    """Whether listening on ``address`` keeps the server to this machine."""
    name = address.strip("[]").lower()
    try:
        return name == "localhost" or ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _words(value: str | None) -> list[str]:
    return [word for word in re.split(r"[\s,]+", value or "") if word]


@dataclass(frozen=True)
class FrontPolicy:
    """Who the HTTP front answers, besides the AWS CLI and SDKs (which send no ``Origin``):

    * ``hosts``: names accepted in ``Host`` besides 127.0.0.1, localhost and [::1];
    * ``origins``: browser origins answered besides this server's own and localhost's
      (http(s)://localhost|127.0.0.1|[::1], any port);
    * ``any_origin``: no origin check at all (moto's CORS answer, to every page);
    * ``beyond_loopback``: the server may listen on an address other than loopback.
    """

    origins: frozenset[str] = frozenset()
    hosts: frozenset[str] = frozenset()
    any_origin: bool = False
    beyond_loopback: bool = False

    @classmethod
    def build(
        cls,
        origins: Sequence[str] = (),
        hosts: Sequence[str] = (),
        *,
        any_origin: bool = False,
        beyond_loopback: bool = False,
        environ: Mapping[str, str] | None = None,
    ) -> FrontPolicy:
        """The flags' values plus the environment's (``LOCALCLOUD_ALLOWED_ORIGINS``,
        ``LOCALCLOUD_ALLOWED_HOSTS``: comma or space separated; ``LOCALCLOUD_ALLOW_ANY_ORIGIN``);
        ValueError naming a malformed origin or host."""
        env = os.environ if environ is None else environ
        return cls(
            origins=frozenset(
                normalize_origin(o) for o in [*origins, *_words(env.get(ORIGINS_VARIABLE))]
            ),
            hosts=frozenset(normalize_host(h) for h in [*hosts, *_words(env.get(HOSTS_VARIABLE))]),
            any_origin=any_origin
            or env.get(ANY_ORIGIN_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on"),
            beyond_loopback=beyond_loopback,
        )

    def host_allowed(self, name: str) -> bool:
        if name in LOOPBACK_NAMES or name in self.hosts or "*" in self.hosts:
            return True
        return any(h.startswith(".") and name.endswith(h) for h in self.hosts)

    def origin_allowed(self, origin: str, host: str | None) -> bool:
        """``origin`` (normalized) may call: the server's own (``http://<Host>``), a localhost
        one or a named one."""
        if self.any_origin or _LOCALHOST_ORIGIN.fullmatch(origin) or origin in self.origins:
            return True
        return host is not None and origin == f"http://{host.strip().lower()}"

    def check_bind(self, address: str) -> None:
        """ValueError when ``address`` is beyond loopback and that was not asked for."""
        if not is_loopback(address) and not self.beyond_loopback:
            raise ValueError(
                f"--host {address} would serve this local cloud beyond this machine: anyone "
                "who reaches the port drives it as administrator (no authentication). Add "
                "--listen-beyond-loopback if that is what you want."
            )

    def for_bind(self, address: str) -> FrontPolicy:
        """This policy, also admitting the listening address itself as ``Host`` (not a
        wildcard address: clients name it with --allow-host)."""
        if is_loopback(address) or address.strip("[]") in ("0.0.0.0", "::", ""):  # noqa: S104
            return self
        return replace(self, hosts=self.hosts | {normalize_host(address)})

    def summary(self) -> str:
        """One line for the start's banner: who is answered."""
        named = sorted(f"*{h}" if h.startswith(".") else h for h in self.hosts)
        who = ", ".join(["its own origin", "localhost origins", *sorted(self.origins)])
        if self.any_origin:
            who = "any origin (checks off)"
        hosts = ", ".join(["127.0.0.1", "localhost", "[::1]", *named])
        return f"  browsers: answered from {who}; Host: {hosts}"

    def warnings(self, address: str) -> list[str]:
        """The start's warnings for what this policy lets through."""
        lines = []
        if not is_loopback(address):
            wildcard = address.strip("[]") in ("0.0.0.0", "::")  # noqa: S104
            lines.append(
                f"WARNING: listening on {address}, beyond loopback: anyone who can reach this "
                "port drives this local cloud as administrator (no authentication)."
                + (" Clients must use a Host named with --allow-host." if wildcard else "")
            )
        if self.any_origin:
            lines.append(
                "WARNING: origin checks are off (--allow-any-origin / "
                f"{ANY_ORIGIN_VARIABLE}): any web page you open can call this local cloud."
            )
        if "*" in self.hosts:
            lines.append(
                "WARNING: every Host is accepted (--allow-host '*'): a web page can reach this "
                "local cloud under a name of its own (DNS rebinding)."
            )
        return lines


_default_policy: FrontPolicy | None = None


def set_default_policy(policy: FrontPolicy | None) -> None:
    """The policy of the servers started from now on without one (``localcloud up`` sets its
    flags' here, as ``LocalCloud.serve`` takes none); None: ``FrontPolicy.build()``."""
    global _default_policy  # noqa: PLW0603
    _default_policy = policy


class AdminApp:
    """WSGI middleware: /_localcloud/* here, everything else to moto."""

    def __init__(self, cloud: ServedCloud, aws_app: Any) -> None:
        self.cloud, self.aws_app = cloud, aws_app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if not path.startswith(ADMIN_PREFIX):
            return self.aws_app(environ, start_response)
        route = path[len(ADMIN_PREFIX) :]
        if route == console_routes.PAGES or (
            route.startswith(console_routes.PAGES + "/")
            and not route.startswith(console_routes.PREFIX)
        ):
            return self.page(route, environ, start_response)
        request = Request(environ)
        try:
            status, body = self.handle(request.method, route.strip("/"), request)
        except (KeyError, ValueError, TypeError) as exc:
            status, body = 400, {"error": type(exc).__name__, "message": str(exc)}
        response = Response(
            json.dumps(body, default=str, indent=2),
            status=status,
            mimetype="application/json",
            headers=JSON_HEADERS,
        )
        return response(environ, start_response)

    def page(self, route: str, environ: dict[str, Any], start_response: Any) -> Any:
        """A console page or one of its files; ``/_localcloud/console`` redirects to the
        directory, so the page's relative URLs resolve under it."""
        if route == console_routes.PAGES:
            response = Response(status=308, headers={"Location": f"{ADMIN_PREFIX}{route}/"})
        elif environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            response = Response("GET only", status=405, mimetype="text/plain")
        else:
            status, content_type, body = console_routes.static(route[len(console_routes.PAGES) :])
            response = Response(body, status=status, content_type=content_type)
            response.headers["Cache-Control"] = "no-cache"
        response.headers.update(PAGE_HEADERS)
        return response(environ, start_response)

    def handle(self, method: str, route: str, request: Request) -> tuple[int, Any]:  # noqa: PLR0911
        cloud = self.cloud
        if route.startswith(console_routes.PREFIX):
            sub_route = route[len(console_routes.PREFIX) :]
            return console_routes.handle(cloud, method, sub_route, request.args)
        if route == "outputs" and method == "GET":
            return 200, cloud.describe()
        if route == "faults" and method in ("GET", "POST", "DELETE"):
            if method == "POST":
                cloud.load_faults(_json_body(request))
            elif method == "DELETE":
                cloud.faults.clear()
            return 200, cloud.faults.snapshot()
        if route == "deliveries" and method == "GET":
            return 200, [
                {
                    "event_id": d.event_id,
                    "rule": d.rule_arn,
                    "target": d.target_arn,
                    "status": d.status,
                    "attempts": d.attempts,
                    "error_code": d.error_code,
                    "execution_arn": d.execution_arn,
                }
                for d in cloud.deliveries.all()
            ]
        if route.startswith("schedules/") and route.endswith("/fire") and method == "POST":
            deliveries = int(_json_body(request).get("deliveries", 1))
            assert cloud.schedules is not None
            fired = cloud.schedules.fire(route.split("/")[1], deliveries=deliveries)
            return 200, [vars(f) for f in fired]
        if route == "events" and method == "POST":
            body = _json_body(request)
            detail = body["source"], body["detail-type"], body["detail"]
            return 200, cloud.emit(*detail, body.get("resources", ()))
        if route == "clock" and method == "POST":
            cloud.time_scale = float(_json_body(request)["scale"])
            return 200, {"scale": cloud.time_scale}
        return 404, {"error": "NotFound", "message": f"no admin route {method} /{route}"}


def _json_body(request: Request) -> Any:
    return json.loads(request.get_data() or b"{}")


class Front:
    """WSGI middleware before everything: refuses (403, a plain-text reason, no CORS header)
    a ``Host`` that is not a loopback name or one named with ``--allow-host`` (DNS rebinding),
    a browser request from an origin the policy does not admit (unless a CORS rule of the
    bucket it addresses does, as S3 does: bucket_cors.py), and an admin request that changes
    state with a body that is not JSON (415). The AWS CLI and SDKs send no ``Origin``."""

    def __init__(self, app: Any, dispatcher: Any, policy: FrontPolicy) -> None:
        self.app, self.dispatcher, self.policy = app, dispatcher, policy
        self._logged: set[tuple[str, str]] = set()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        host = environ.get("HTTP_HOST")
        if host and not self.policy.host_allowed(host_name(host)):
            return self.refuse("host", host, _host_message(host))(environ, start_response)
        origin, source = browser_origin(environ)
        admin = environ.get("PATH_INFO", "").startswith(ADMIN_PREFIX)
        if origin is not None and not self.policy.origin_allowed(origin, host):
            note = ""
            if not admin and source == "Origin":
                answer, note = bucket_cors.answer(self.app, self.dispatcher, environ, origin)
                if answer is not None:
                    return answer(environ, start_response)
            refusal = self.refuse("origin", origin, _origin_message(origin, source, host, note))
            return refusal(environ, start_response)
        if admin and environ.get("REQUEST_METHOD") in _STATE_CHANGING and not _json(environ):
            kind = environ.get("CONTENT_TYPE") or "(none)"
            return self.refuse("content-type", kind, _JSON_MESSAGE, 415)(environ, start_response)
        return self.app(environ, start_response)

    def refuse(self, kind: str, value: str, message: str, status: int = 403) -> Response:
        if (kind, value) not in self._logged and len(self._logged) < 1000:  # the SDKs show no body
            self._logged.add((kind, value))
            lines = message.splitlines()
            LOG.warning("%s %s", lines[0], lines[-1] if len(lines) > 1 else "")
        headers = {"X-LocalCloud-Refused": kind, "Cache-Control": "no-store"}
        headers["X-Content-Type-Options"] = "nosniff"
        return Response(message, status=status, mimetype="text/plain", headers=headers)


def browser_origin(environ: Mapping[str, Any]) -> tuple[str | None, str]:
    """The origin of the page behind a request, and the header it was read from: ``Origin``;
    else the ``Referer``'s (an image or script of another page, as LocalStack checks it) except
    for a link followed to a page (it reads nothing back); else, for a cross-site request
    (``Sec-Fetch-Site``) that names neither, a page that cannot be admitted. (None, "") for a
    request of no page: the AWS CLI and SDKs, curl, a URL typed in the address bar."""
    origin = environ.get("HTTP_ORIGIN")
    if origin:
        return _normalized(origin), "Origin"
    method = environ.get("REQUEST_METHOD", "GET")
    if environ.get("HTTP_SEC_FETCH_MODE") == "navigate" and method in ("GET", "HEAD"):
        return None, ""
    referer = urlsplit(environ.get("HTTP_REFERER") or "")
    if referer.scheme and referer.netloc:
        return _normalized(f"{referer.scheme}://{referer.netloc}"), "Referer"
    if environ.get("HTTP_SEC_FETCH_SITE") == "cross-site":
        return "a page of another site", "Sec-Fetch-Site"
    return None, ""


def _normalized(origin: str) -> str:
    try:
        return normalize_origin(origin)
    except ValueError:
        return origin.strip()  # "null" (a sandboxed frame, a file), never admitted


def _json(environ: Mapping[str, Any]) -> bool:
    """An ``application/json`` body, or none at all (``DELETE faults``, a bare ``fire``)."""
    mime = str(environ.get("CONTENT_TYPE") or "").split(";", 1)[0].strip().lower()
    if mime:
        return mime == "application/json"
    chunked = "chunked" in str(environ.get("HTTP_TRANSFER_ENCODING") or "").lower()
    return not chunked and str(environ.get("CONTENT_LENGTH") or "0").strip() in ("", "0")


def _host_message(host: str) -> str:
    name = host_name(host)
    return (
        f"localcloud refused this request: Host {host} is not a name of this local cloud.\n"
        "It answers to 127.0.0.1, localhost and [::1] (any port) and to the names started "
        "with --allow-host; a web page can reach a local server under a name of its own "
        "(DNS rebinding), so other names are refused.\n"
        f"If you reach it as {name}, start it with --allow-host {name} (or {HOSTS_VARIABLE}="
        f"{name}); --allow-host '*.localhost' admits S3 virtual-hosted style "
        "(<bucket>.localhost).\n"
    )


def _origin_message(origin: str, source: str, host: str | None, note: str) -> str:
    page = (
        "a page of another site that names no origin (Sec-Fetch-Site: cross-site)"
        if source == "Sec-Fetch-Site"
        else f"a page of {origin} ({source} header)"
    )
    own = f" (http://{host})" if host else ""
    return (
        f"localcloud refused this request: it comes from {page}, and this local cloud "
        f"answers browsers only from its own origin{own}, localhost origins "
        "(http(s)://localhost, 127.0.0.1 or [::1], any port) and the origins started with "
        f"--allow-origin.{note}\n"
        f"To let that page in, start it with --allow-origin {origin} (or {ORIGINS_VARIABLE}"
        f"={origin}). The AWS CLI and SDKs send no Origin and are not affected.\n"
    )


_JSON_MESSAGE = (
    "localcloud refused this request: the admin API takes JSON only. Send it with "
    "Content-Type: application/json (curl --json '{...}' URL, or curl -H 'Content-Type: "
    "application/json' -d '{...}' URL); a request without a body needs none.\n"
)


class KeepAliveRequestHandler(MotoRequestHandler):
    """moto's request handler with HTTP/1.1 keep-alive. werkzeug's server closes every
    connection, since it cannot drain a body the application left unread; here a request body
    of known length is read before the application runs, so the connection stays open for the
    next request: an SDK's calls reuse one connection instead of a new TCP connection and
    server thread each (a function environment makes most of its calls this way). The server's
    ``connections`` are the open ones: its shutdown closes them (a stopped cloud answers none)."""

    keep = False
    disable_nagle_algorithm = True  # a response's head and body are sent apart

    def setup(self) -> None:
        super().setup()
        cast(Any, self).server.connections.add(self.connection)

    def finish(self) -> None:
        cast(Any, self).server.connections.discard(self.connection)
        super().finish()

    def run_wsgi(self) -> None:
        length = self.headers.get("Content-Length") or "0"
        self.keep = "Transfer-Encoding" not in self.headers and length.isdigit()
        if not self.keep:
            super().run_wsgi()
            return
        if self.headers.get("Expect", "").lower().strip(" \t") == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            del self.headers["Expect"]
        connection = cast(Any, self).rfile
        self.rfile = io.BytesIO(connection.read(int(length)))
        try:
            super().run_wsgi()
        finally:
            self.rfile = connection

    def send_header(self, keyword: str, value: str) -> None:
        if not (self.keep and keyword.lower() == "connection"):  # werkzeug's "close"
            super().send_header(keyword, value)


class QuietRequestHandler(KeepAliveRequestHandler):
    """Without werkzeug's access line for each request."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class LocalCloudServer:
    """``cloud`` served on http://host:port behind a ``Front`` of ``policy`` (default: the one
    of ``set_default_policy``, else ``FrontPolicy.build()``); ``start`` raises ValueError for
    an address beyond loopback that the policy does not allow. ``log_requests``: False for the
    endpoint only the functions' environments call (no access line for each of their calls)."""

    def __init__(
        self, cloud: ServedCloud, host: str, port: int, policy: FrontPolicy | None = None,
        *, log_requests: bool = True,
    ) -> None:  # fmt: skip
        self.cloud, self.host, self.port = cloud, host, port
        self.log_requests = log_requests
        self.policy = policy or _default_policy or FrontPolicy.build()
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        self.policy.check_bind(self.host)
        dispatcher = DomainDispatcherApplication(create_backend_app)
        # a request signed with a role session's credentials acts as it (features/role_sessions)
        signed = SignedRequests(AdminApp(self.cloud, dispatcher), self.cloud.runtime.authorizer)
        app = Front(signed, dispatcher, self.policy.for_bind(self.host))
        handler = KeepAliveRequestHandler if self.log_requests else QuietRequestHandler
        self._server = make_server(
            self.host, self.port, app, threaded=True, request_handler=handler
        )
        self._server.connections = set()  # type: ignore[attr-defined]
        self.port = int(self._server.server_address[1])
        # serve_forever's poll: shutdown() waits for it (the default 0.5 s, at every stop)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="localcloud-http", daemon=True
        )
        self._thread.start()

    def shutdown(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            for connection in list(cast(Any, self._server).connections):  # kept-alive ones
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
