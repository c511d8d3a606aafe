"""What an application adds to the console: ``LocalCloud(..., console=ConsoleExtensions(...))``
(or ``cloud.console = ConsoleExtensions(...)`` before it is served). Generic hooks, called with
the running cloud, in the server's thread, while the cloud's moto is active (so they may use
boto3 as any in-process client does):

* ``redrive(cloud, queue_arn) -> str | None``: the command that moves this queue's messages
  back where they failed to go, shown beside each message of the queue's page; None falls back
  to the console's default (for a dead-letter queue of SQS queues the AWS-native
  ``aws sqs start-message-move-task --source-arn <queue arn>``; else none).
* ``objects(cloud, query) -> list[dict]``: the rows of the "Objects" page for a search text
  (JSON-able dicts; a row's ``key`` links to its object page). The page and its menu link
  exist only when this is given.
* ``object(cloud, key) -> dict``: one object's page, any JSON: the page shows its ``records``
  (a list of dicts, as a table), ``links`` (``[{"text", "href"}]``, e.g. ``#/execution/<arn>``)
  and every other field as a labelled value. Raise ``NotFound`` for an unknown key (a 404).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "Cloud", "ConsoleExtensions", "NotFound", "ObjectProvider", "ObjectsProvider", "RedriveCommand",
]  # fmt: skip

# A hook's first argument is the running LocalCloud (Any: the console does not import cloud.py)
RedriveCommand = Callable[[Any, str], "str | None"]
ObjectsProvider = Callable[[Any, str], "list[dict[str, Any]]"]
ObjectProvider = Callable[[Any, str], "dict[str, Any]"]


class NotFound(KeyError):
    """Nothing by this name or ARN (404 over HTTP)."""

    def __str__(self) -> str:  # KeyError's quotes the message
        return str(self.args[0]) if self.args else "not found"


@dataclass
class ConsoleExtensions:
    """The application's hooks (module docstring); every one optional."""

    redrive: RedriveCommand | None = None
    objects: ObjectsProvider | None = None
    object: ObjectProvider | None = None
    objects_title: str = "Objects"

    def features(self) -> dict[str, Any]:
        """What the page's menu offers."""
        provided = self.objects is not None and self.object is not None
        return {"objects": provided, "objectsTitle": self.objects_title if provided else None}


class Cloud(Protocol):
    """What the console reads of a running :class:`~localcloud.cloud.LocalCloud`."""

    region: str
    account_id: str
    console: ConsoleExtensions
