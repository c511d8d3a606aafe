"""Lambda's sandbox host names in a local cloud extension's Python: ``sandbox`` and
``sandbox.localdomain`` are its environment's loopback address (LOCALCLOUD_SANDBOX_ADDRESS,
set by localcloud/environments/extensions.py), to bind, connect to and resolve."""

import os
import socket
from typing import Any

_ADDRESS = os.environ.get("LOCALCLOUD_SANDBOX_ADDRESS", "")
_NAMES: frozenset[object] = frozenset(
    {"sandbox", "sandbox.localdomain", b"sandbox", b"sandbox.localdomain"}
)
_getaddrinfo, _gethostbyname, _getfqdn = socket.getaddrinfo, socket.gethostbyname, socket.getfqdn
_bind, _connect, _connect_ex = socket.socket.bind, socket.socket.connect, socket.socket.connect_ex


def _host(host: Any) -> Any:
    return _ADDRESS if host in _NAMES else host


def _address(address: Any) -> Any:
    if isinstance(address, tuple) and address and address[0] in _NAMES:
        return (_ADDRESS, *address[1:])
    return address


def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    return _getaddrinfo(_host(host), *args, **kwargs)


def gethostbyname(host: str) -> str:
    return _gethostbyname(_host(host))


def getfqdn(name: str = "") -> str:
    return "sandbox" if name == _ADDRESS or name in _NAMES else _getfqdn(name)


def bind(self: socket.socket, address: Any) -> None:
    _bind(self, _address(address))


def connect(self: socket.socket, address: Any) -> None:
    _connect(self, _address(address))


def connect_ex(self: socket.socket, address: Any) -> int:
    return _connect_ex(self, _address(address))


if _ADDRESS:
    socket.getaddrinfo, socket.gethostbyname, socket.getfqdn = getaddrinfo, gethostbyname, getfqdn
    socket.socket.bind = bind  # type: ignore[method-assign,assignment]
    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
