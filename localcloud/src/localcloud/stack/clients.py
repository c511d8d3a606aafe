"""boto3 clients of boto3's default session for one deploy's region, one per service (kept by
localcloud.clients)."""

from __future__ import annotations

from typing import Any

from localcloud import clients

__all__ = ["DeployClients"]


class DeployClients:
    def __init__(self, region: str) -> None:
        self.region = region

    def __call__(self, service: str) -> Any:
        return clients.client(service, self.region)
