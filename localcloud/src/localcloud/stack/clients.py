"""The AWS clients of one deploy: one per service, made when first asked for."""

from __future__ import annotations

from typing import Any

import boto3

__all__ = ["DeployClients"]


class DeployClients:
    """boto3 clients (of boto3's default session) for one deploy, one per service.

    A client costs ~10 ms of CPU (botocore copies its event emitter for each), and a deploy
    asks for the same few services in several steps (S3 for the artifacts and per bucket,
    Step Functions for two checks, ...). Never kept across deploys: moto resets per cloud.
    """

    def __init__(self, region: str) -> None:
        self.region = region
        self._made: dict[str, Any] = {}

    def __call__(self, service: str) -> Any:
        client = self._made.get(service)
        if client is None:
            client = self._made[service] = boto3.client(service, region_name=self.region)
        return client
