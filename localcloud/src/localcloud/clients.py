"""boto3 clients of the local cloud's own machinery (deploys, deliveries, pollers, schedules,
the console) and of test drivers: one per default session, service, region and config.

A client costs ~10 ms of CPU (botocore copies its session's event handlers for each) and keeps
nothing of a cloud: moto's backends hold the state. cloud.py gives every cloud of a process
with the same botocore handlers the same default session, so a client made while one cloud
ran serves the next one alike (its IAM hooks act for whichever cloud runs).
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
from botocore.config import Config

__all__ = ["ONE_ATTEMPT", "client"]

#: deliveries, Lambda's and Scheduler's sends, pollers: one attempt, the emulated service
#: retries as AWS does
ONE_ATTEMPT = Config(retries={"mode": "standard", "total_max_attempts": 1})

_LOCK = threading.Lock()  # boto3's default session is not thread-safe
_MADE: dict[tuple[Any, ...], Any] = {}


def client(service: str, region: str, config: Any = None) -> Any:
    """The client of ``service`` in ``region`` (``config``: a botocore Config, compared by
    identity: pass a module constant) from boto3's default session."""
    with _LOCK:
        session = boto3.DEFAULT_SESSION
        if session is None:  # outside a cloud: not kept
            return boto3.client(service, region_name=region, config=config)
        key = (session, service, region, id(config))
        if key not in _MADE:
            _MADE[key] = session.client(service, region_name=region, config=config)
        return _MADE[key]
