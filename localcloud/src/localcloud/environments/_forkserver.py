"""The fork server of the function environments: run by the Lambda runtime's Python
(``.venv-lambda/bin/python -I _forkserver.py FD CONFIG``), never imported by the local cloud.

It imports, once, what the Python runtime imports before it loads a handler (the standard
library modules of awslambdaric's bootstrap, simplejson, awslambdaric's own modules), then
forks one child per environment on request. It does not import ``runtime_client`` (the C
extension reads ``AWS_LAMBDA_RUNTIME_API`` when it is loaded), ``awslambdaric.bootstrap``
(it reads ``AWS_LAMBDA_LOG_FORMAT``/``AWS_LAMBDA_LOG_LEVEL`` when imported), nor boto3 or
anything a function could bring in a version of its own: each child imports those itself,
after it has taken its environment's variables and Python path.

Protocol, on the Unix socket whose descriptor is ``FD``: the client sends one JSON object
(``env``, ``cwd``, ``path``, ``handler``) with one descriptor attached (SCM_RIGHTS: the write
end of the environment's log pipe, which becomes the child's stdout and stderr); the server
answers ``{"pid": N}`` on one line. The child is the leader of a session of its own (the
client kills its process group). Children are reaped by the kernel (SIGCHLD ignored). The
server exits when the socket closes.

A function's own fork server (``CONFIG``, a JSON object: ``path``, ``env``, ``modules``,
``services``; empty for the runtime's) also imports, once and with that function's variables,
the library modules (the runtime's, its layers', its requirements') its first environment
imported by the end of its first invocation, and loads the SDK data of the services whose
clients that environment made from the default boto3 session, as reported by it (a request's
``report``: a file the child writes before it posts its first result). Its children then
import only the function's own code (and what was not reported), and their clients are made
from data already loaded. When ready, a server says which variables its preload read, with
their values (``read``: os.environ's reads recorded; urllib's proxy lookup reads the names of
the ``*_proxy`` ones, any other listing reads them all: None). Another configuration of the
same libraries whose variables have those values is forked from it too (launcher.fork_server).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import signal
import socket
import sys
from typing import Any, ClassVar

PRELOADED = (
    # awslambdaric's bootstrap and what it imports at start (importlib and json: imported above;
    # http and awslambdaric: with their modules)
    "logging",
    "traceback",
    "decimal",
    "math",
    "enum",
    "http.client",
    "concurrent.futures",
    "simplejson",
    "awslambdaric.lambda_context",
    "awslambdaric.lambda_runtime_exception",
    "awslambdaric.lambda_runtime_log_utils",
    "awslambdaric.lambda_runtime_marshaller",
    "awslambdaric.lambda_config",
)
MAX_REQUEST = 1 << 20
# the runtime's own modules, which read the environment's Runtime API address when loaded
_RUNTIME_OWN = ("awslambdaric", "runtime_client", "snapshot_restore_py")


#: the modules of the runtime's start (PRELOADED's closure): a first environment reports what
#: it imported beyond them, whatever its server preloaded
BASE: frozenset[str] = frozenset()


def _preload(modules: list[str], services: list[str], region: str | None) -> None:
    for name in modules:  # a function's libraries: one that fails is imported by the child
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    if services and "boto3" in sys.modules:
        # the SDK's service data, loaded into the default session the children inherit: a
        # client made once per service with throwaway credentials and endpoint (the session's
        # own credentials are never resolved here; the children resolve them from their own
        # variables)
        boto3 = sys.modules["boto3"]
        boto3.setup_default_session()
        for service in services:
            with contextlib.suppress(Exception):
                boto3.DEFAULT_SESSION.client(
                    service, region_name=region, endpoint_url="http://localhost",
                    aws_access_key_id="preload", aws_secret_access_key="preload",  # noqa: S106
                )  # fmt: skip


def _report_libraries(path: str, code_dir: str) -> None:
    """When the first invocation's result is posted (the init's and that invocation's
    imports done), write to ``path`` the modules imported beyond the runtime's start (``BASE``,
    those its server preloaded included) from outside the function's own code, in import
    order, and the services whose SDK data the default boto3 session loaded."""
    from pathlib import Path

    from awslambdaric.lambda_runtime_client import (  # type: ignore[import-not-found]
        BaseLambdaRuntimeClient as Client,
    )

    posts = {name: getattr(Client, name) for name in ("post_invocation_result",
                                                      "post_invocation_error")}  # fmt: skip

    def report() -> None:
        for name, post in posts.items():
            setattr(Client, name, post)
        libraries = [name for name, module in list(sys.modules.items()) if name not in BASE
                     and not name.startswith(_RUNTIME_OWN)
                     and not str(getattr(module, "__file__", None) or code_dir).startswith(
                         code_dir)]  # fmt: skip
        session = getattr(sys.modules.get("boto3"), "DEFAULT_SESSION", None)
        cache = getattr(getattr(session, "_loader", None), "_cache", {})
        services = sorted({key[1] for key in cache if key[0] == "load_service_model"})
        with contextlib.suppress(OSError):
            Path(path).write_text(json.dumps({"modules": libraries, "services": services}),
                                  encoding="utf-8")  # fmt: skip

    def reporting(name: str) -> object:
        def post(*args: object, **kwargs: object) -> object:
            report()
            return posts[name](*args, **kwargs)

        return post

    for name in posts:
        setattr(Client, name, reporting(name))


def _child(request: dict[str, Any], log_fd: int, base_path: list[str]) -> None:
    """Become the environment, then run the runtime interface client."""
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in request["env"].items()})
    os.chdir(str(request["cwd"]))
    sys.path[:] = [str(p) for p in [*request["path"], *base_path]]
    sys.argv[:] = ["awslambdaric", str(request["handler"])]
    if request.get("report"):
        _report_libraries(str(request["report"]), str(request["cwd"]))
    # (not importlib.invalidate_caches(): it imports importlib.metadata, 40 ms of CPU; the
    # function's directories were never on the server's path, so nothing of them is cached)
    from awslambdaric.__main__ import main  # type: ignore[import-not-found]

    main(sys.argv)


def _forked(request: dict[str, Any], fd: int, parent: socket.socket, base_path: list[str]) -> None:
    """In a forked child, which never returns: an environment (``fd``: its log pipe), or the
    fork server of a configuration (a request's ``server``, as ``CONFIG``) on the socket
    ``fd``, made from this server's imports."""
    server = "server" in request
    code = 1
    try:
        parent.close()
        if server:
            _become(socket.socket(fileno=fd), request["server"], base_path)
        else:
            _child(request, fd, base_path)
        code = 0
    except SystemExit as exit_:  # a server's: a preloaded module started a thread (falls back)
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        if not server:
            import traceback

            traceback.print_exc()
    finally:
        for stream in () if server else (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the process is ending either way
                stream.flush()
        os._exit(code)


def serve(sock: socket.socket, base_path: list[str]) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        data, fds, _flags, _addr = socket.recv_fds(sock, MAX_REQUEST, 1)
        if not data:
            return
        pid = os.fork()
        if pid == 0:
            _forked(json.loads(data), fds[0], sock, base_path)
        for fd in fds:
            os.close(fd)
        sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")


class _Reads(type(os.environ)):  # type: ignore[misc,valid-type]  # os._Environ, recording reads
    read: ClassVar[dict[str, str | None] | None] = {}

    def __getitem__(self, key: str) -> str:  # get, in, getenv too (Mapping's)
        try:
            value: str | None = super().__getitem__(key)
        except KeyError:
            value = None
        if _Reads.read is not None:
            _Reads.read[key] = value
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Any:
        names = list(super().__iter__())
        caller = sys._getframe(1).f_code.co_name
        if _Reads.read is not None and caller == "getproxies_environment":
            # urllib (botocore's proxies) reads the *_proxy variables: their names are read too
            proxies = sorted(n for n in names if n.lower().endswith("_proxy"))
            _Reads.read["*_proxy"] = " ".join(proxies)
        else:
            _Reads.read = None  # every variable read: the server is this configuration's only
        return iter(names)


def _become(sock: socket.socket, function: dict[str, Any], base_path: list[str]) -> None:
    """Be the fork server of a function configuration (or of the runtime: ``{}``) on ``sock``:
    ready, with the variables its preload read and their values (None: it read them all)."""
    os.environ.update({str(k): str(v) for k, v in function.get("env", {}).items()})
    sys.path[:0] = function.get("path", [])
    _Reads.read = {}
    environ_class, os.environ.__class__ = os.environ.__class__, _Reads
    try:
        _preload(function.get("modules", []), function.get("services", []),
                 function.get("env", {}).get("AWS_REGION"))  # fmt: skip
    finally:
        os.environ.__class__ = environ_class
    if _threads() > 1:  # a library's own (C) threads too: a fork would lose them
        sys.exit("a preloaded module started a thread: a fork would lose it")
    gc.freeze()  # what every child shares: never gone over by a child's collections
    sock.sendall(json.dumps({"ready": True, "read": _Reads.read}).encode() + b"\n")
    serve(sock, base_path)


def _threads() -> int:
    """The process's threads, the system's count (Python's, where there is no /proc)."""
    try:
        return len(os.listdir("/proc/self/task"))  # noqa: PTH208 - no pathlib in the server
    except OSError:
        threading = sys.modules.get("threading")
        return 1 if threading is None else threading.active_count()


def main() -> None:
    global BASE  # noqa: PLW0603 - set once, before the first fork
    base_path = list(sys.path)
    for name in PRELOADED:
        importlib.import_module(name)
    BASE = frozenset(sys.modules)
    _become(socket.socket(fileno=int(sys.argv[1])), json.loads(sys.argv[2] or "{}"), base_path)


if __name__ == "__main__":
    main()
