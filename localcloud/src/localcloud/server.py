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
* ``POST clock``       ``{"scale": 0}`` virtual time, ``{"scale": 1}`` real time;
* ``GET  console/api/...``  the console's read-only JSON (state machines, executions, one
  execution's history and path): console/routes.py.

The console's pages (not JSON): ``GET /_localcloud/console/`` and the files next to it
(console/static/, served by ``console_routes.static``).
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Request, Response

from localcloud.console import routes as console_routes

if TYPE_CHECKING:
    from localcloud.cloud import LocalCloud

ADMIN_PREFIX = "/_localcloud/"


class AdminApp:
    """WSGI middleware: /_localcloud/* here, everything else to moto."""

    def __init__(self, cloud: LocalCloud, aws_app: Any) -> None:
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
            status, body = self.handle(
                request.method, path[len(ADMIN_PREFIX) :].strip("/"), request
            )
        except (KeyError, ValueError, TypeError) as exc:
            status, body = 400, {"error": type(exc).__name__, "message": str(exc)}
        response = Response(
            json.dumps(body, default=str, indent=2), status=status, mimetype="application/json"
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
            response.headers["X-Content-Type-Options"] = "nosniff"
        return response(environ, start_response)

    def handle(self, method: str, route: str, request: Request) -> tuple[int, Any]:  # noqa: PLR0911
        cloud = self.cloud
        if route.startswith(console_routes.PREFIX):
            sub_route = route[len(console_routes.PREFIX) :]
            return console_routes.handle(cloud, method, sub_route, request.args)
        if route == "outputs" and method == "GET":
            return 200, cloud.describe()
        if route == "faults":
            if method == "GET":
                return 200, cloud.faults.snapshot()
            if method == "POST":
                cloud.load_faults(json.loads(request.get_data() or b"{}"))
                return 200, cloud.faults.snapshot()
            if method == "DELETE":
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
            name = route.split("/")[1]
            options = json.loads(request.get_data() or b"{}")
            assert cloud.schedules is not None
            fired = cloud.schedules.fire(name, deliveries=int(options.get("deliveries", 1)))
            return 200, [vars(f) for f in fired]
        if route == "clock" and method == "POST":
            self.cloud.time_scale = float(json.loads(request.get_data() or b"{}")["scale"])
            return 200, {"scale": self.cloud.time_scale}
        return 404, {"error": "NotFound", "message": f"no admin route {method} /{route}"}


class LocalCloudServer:
    def __init__(self, cloud: LocalCloud, host: str, port: int) -> None:
        self.cloud, self.host, self.port = cloud, host, port
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> None:
        app = AdminApp(self.cloud, DomainDispatcherApplication(create_backend_app))
        self._server = make_server(
            self.host, self.port, app, threaded=True, request_handler=MotoRequestHandler
        )
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="localcloud-http", daemon=True
        )
        self._thread.start()

    def shutdown(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
