"""How an environment's process starts: forked from a fork server (:class:`ForkServer`: one per
runtime Python or function configuration, started on first use; its protocol: _forkserver.py)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import signal
import socket
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["ForkServer", "LogPipe", "Process", "fork_server"]

_SERVER_SCRIPT = Path(__file__).with_name("_forkserver.py")


class LogPipe:
    """An environment's stdout and stderr (its runtime's, its extensions'): read as it comes
    (so no process blocks on a full pipe), and drained to the end when an invocation
    finishes (the runtime writes its lines before it posts its response)."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        flags = fcntl.fcntl(self.read_fd, fcntl.F_GETFL)
        fcntl.fcntl(self.read_fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        self._lock = threading.Lock()
        self._buffer = bytearray()
        self.closed = threading.Event()  # EOF: the process (and its children) ended
        self.thread = threading.Thread(target=self._run, name="environment-logs", daemon=True)

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.read_fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.closed.set()
                return
            self._buffer += chunk

    def _run(self) -> None:
        readable = select.poll()  # (not select.select: descriptors past 1024)
        readable.register(self.read_fd, select.POLLIN)
        while not self.closed.is_set():
            try:
                readable.poll()
            except OSError:
                self.closed.set()
                return
            with self._lock:
                self._read()
        with contextlib.suppress(OSError):
            os.close(self.read_fd)

    def take(self) -> list[str]:
        """Every line written so far (a last partial line too)."""
        with self._lock:
            if not self.closed.is_set():
                self._read()
            text = self._buffer.decode("utf-8", "replace")
            self._buffer.clear()
        return [line.rstrip("\r") for line in text.splitlines()]


class Process:
    """An environment's process (forked, and reaped, by a fork server): its pid, and how to
    end it (its whole process group)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._lock = threading.Lock()  # one caller of kill closes the handle
        try:  # a handle on this process, whichever process has its pid later (pids are reused)
            self._pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:  # it ended already
            self._pidfd = None

    @classmethod
    def never(cls) -> Process:
        """No process: an environment whose init failed before its runtime was started."""
        process = cls.__new__(cls)
        process.pid, process._lock, process._pidfd = 0, threading.Lock(), None
        return process

    def kill(self) -> None:
        with self._lock:
            pidfd, self._pidfd = self._pidfd, None
        if pidfd is None:
            return
        ended = select.poll()  # (not select.select: descriptors past 1024)
        ended.register(pidfd, select.POLLIN)  # readable once the process has ended
        if not ended.poll(0):  # not ended: this process has the pid
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            ended.poll(5000)
        os.close(pidfd)


def _runtime_env(python: Path) -> dict[str, str]:
    # The fork server starts with nothing of the local cloud's environment (-I: no PYTHON*
    # variables, no user site, not its own directory on sys.path). It forks, so it must stay
    # one thread: pyarrow's jemalloc would start its background purging thread when a server
    # preloads pyarrow (Python: "This process is multi-threaded, use of fork() may lead to
    # deadlocks in the child"). Its environments' variables are their own (_forkserver.py).
    return {"PATH": f"{python.parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
            "JE_ARROW_MALLOC_CONF": "background_thread:false"}  # fmt: skip


class ForkServer:
    """The fork server of one runtime Python (``_forkserver.py``), or of one function
    configuration (``function``: the path, variables and library modules it preloads)."""

    def __init__(self, python: Path, function: str = "", origin: ForkServer | None = None) -> None:
        """A new Python, or forked from ``origin`` (a server whose imports it shares)."""
        self.python = python
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        with theirs:
            if origin is not None:
                self._pid = origin._request({"server": json.loads(function)}, theirs.fileno())
            else:
                self._proc = subprocess.Popen(  # noqa: S603 - the runtime's Python, our script
                    [str(python), "-I", str(_SERVER_SCRIPT), str(theirs.fileno()), function],
                    pass_fds=(theirs.fileno(),),
                    env=_runtime_env(python),
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
                self._pid = self._proc.pid
        ready = self._sock.recv(1 << 16)
        if not ready:
            raise RuntimeError(f"the fork server of {python} did not start")
        #: the variables its preload read, with their values (None: all of them)
        self.read: dict[str, str | None] | None = json.loads(ready).get("read")
        self.libraries = _libraries(json.loads(function)) if function else ""

    def serves(self, variables: Mapping[str, str]) -> bool:
        """Whether a configuration of these variables may use this server: its preload read
        none of them with another value (then only the function's own code differs)."""
        if self.read is None:
            return False
        env = {**_runtime_env(self.python), **variables}
        proxies = " ".join(sorted(n for n in env if n.lower().endswith("_proxy")))
        return all((proxies if name == "*_proxy" else env.get(name)) == value
                   for name, value in self.read.items())  # fmt: skip

    def _request(self, request: dict[str, object], fd: int) -> int:
        with self._lock:
            socket.send_fds(self._sock, [json.dumps(request).encode()], [fd])
            answer = self._sock.recv(4096)
        if not answer:
            raise RuntimeError("the fork server ended")
        return int(json.loads(answer)["pid"])

    def launch(  # noqa: PLR0917 - the environment's parts
        self, handler: str, env: Mapping[str, str], cwd: Path, path: Sequence[str], log_fd: int,
        report: Path | None = None,
    ) -> Process:  # fmt: skip
        """An environment's process; ``report``: where it writes the library modules its init
        imported (see _forkserver.py)."""
        request = {"handler": handler, "env": dict(env), "cwd": str(cwd), "path": list(path),
                   "report": str(report or "")}  # fmt: skip
        return Process(self._request(request, log_fd))

    def alive(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        with contextlib.suppress(OSError):
            os.kill(self._pid, 0)  # a forked server is reaped by its origin when it ends
            return True
        return False

    def close(self) -> None:
        self._sock.close()
        if self._proc is not None:
            self._proc.wait(timeout=5)


_servers: dict[tuple[Path, str], ForkServer] = {}
_servers_lock = threading.Lock()
#: what each function configuration's first environment imported (``modules``) and the
#: services whose SDK data its default boto3 session loaded (``services``), by its first result
LEARNED: dict[str, dict[str, list[str]]] = {}
_FAILED: set[str] = set()
#: function fork servers kept (the least recently used is ended past it)
MAX_FUNCTION_SERVERS = 24


def _libraries(config: dict[str, object]) -> str:
    """A configuration's path, modules and services: all but its variables."""
    return json.dumps({k: v for k, v in config.items() if k != "env"}, sort_keys=True)


def fork_server(python: Path, function: str = "", origin: str | None = None) -> ForkServer:
    """The fork server of this runtime Python, or of a function configuration (a JSON
    object: see _forkserver.py), started once and restarted if it ended (forked from the
    ``origin`` configuration's server when given), or the server of another configuration of
    the same libraries whose preload read none of this one's variables with another value; a
    function's that cannot start (a preloaded module started a thread) falls back to the
    runtime's."""
    with _servers_lock:
        if function and function not in _FAILED and (python, function) not in _servers:
            config = json.loads(function)
            libraries, variables = _libraries(config), config.get("env", {})
            for key, shared in reversed(_servers.items()):
                if (key[0] == python and shared.libraries == libraries and shared.alive()
                        and shared.serves(variables)):  # fmt: skip
                    _servers[key] = _servers.pop(key)  # the most recently used
                    return shared
    source = fork_server(python, origin) if origin is not None and function else None
    with _servers_lock:
        key = (python, "" if function in _FAILED else function)
        server = _servers.pop(key, None)  # re-inserted last: the most recently used
        if server is None or not server.alive():
            try:
                server = ForkServer(*key, origin=source if key[1] else None)
            except RuntimeError:
                if not key[1]:
                    raise
                _FAILED.add(function)
                key = (python, "")
                server = _servers.pop(key, None) or ForkServer(python)
        _servers[key] = server
        functions = [k for k in _servers if k[1]]
        for old in functions[: max(0, len(functions) - MAX_FUNCTION_SERVERS)]:
            _servers.pop(old).close()
        return server
