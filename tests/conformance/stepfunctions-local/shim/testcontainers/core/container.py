"""``DockerContainer`` for the suites: the local cloud in a subprocess (see the package doc)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from typing import Any


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DockerContainer:
    def __init__(self, image: str) -> None:
        self.image = image
        self.env: dict[str, str] = {}
        self.volumes: dict[str, str] = {}  # container path -> host path
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def with_bind_ports(self, *_: Any) -> DockerContainer:
        return self

    def with_exposed_ports(self, *_: Any) -> DockerContainer:
        return self

    def with_env(self, key: str, value: str) -> DockerContainer:
        self.env[key] = value
        return self

    def with_volume_mapping(self, host: str, container: str, *_: Any) -> DockerContainer:
        self.volumes[container] = host
        return self

    def start(self) -> DockerContainer:
        env = dict(os.environ)
        for key, value in self.env.items():
            env[key] = self.volumes.get(value, value)
        command = [*json.loads(os.environ["LOCALCLOUD_UP"]), "--port", str(self.port)]
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{command} exited with {self.process.returncode}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_localcloud/outputs")
                return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{command} did not serve within 120 s")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def get_container_host_ip(self) -> str:
        return "127.0.0.1"

    def get_exposed_port(self, _port: int) -> str:
        return str(self.port)
