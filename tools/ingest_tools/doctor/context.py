"""What every ``ingestctl doctor`` check is a function of: the clients, the stack's outputs,
the time (``checks.run`` passes one ``Context`` to each check in turn)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

__all__ = ["Clients", "Context"]


@dataclass(frozen=True)
class Clients:
    s3: Any
    events: Any
    sqs: Any
    stepfunctions: Any
    scheduler: Any
    cloudwatch: Any
    cloudformation: Any
    lambda_: Any
    dynamodb: Any

    @classmethod
    def create(cls, make: Callable[[str], Any]) -> Clients:
        """``make(service)`` builds one client (e.g. ``session.client``)."""
        return cls(
            s3=make("s3"),
            events=make("events"),
            sqs=make("sqs"),
            stepfunctions=make("stepfunctions"),
            scheduler=make("scheduler"),
            cloudwatch=make("cloudwatch"),
            cloudformation=make("cloudformation"),
            lambda_=make("lambda"),
            dynamodb=make("dynamodb"),
        )


@dataclass(frozen=True)
class Context:
    clients: Clients
    outputs: Mapping[str, str]
    stack: str | None
    now: datetime
    since: timedelta = timedelta(hours=24)
    #: appended to the ingestctl commands the actions name (e.g. ``--stack prod``)
    connection: str = ""

    def output(self, key: str) -> str:
        return self.outputs[key]

    def ingestctl(self, command: str) -> str:
        """An ingestctl command line to suggest, with doctor's own connection options."""
        return f"ingestctl {command}{' ' + self.connection if self.connection else ''}"
