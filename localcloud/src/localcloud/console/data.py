"""What the console shows, read from a running LocalCloud: state machines, their executions,
and one execution's history, path and highlighted nodes, as JSON-ready dicts.

Read through the AWS APIs, with the cloud's own (in-process) clients, as the Step Functions
console reads AWS: ListStateMachines/DescribeStateMachine, ListExecutions/DescribeExecution,
DescribeStateMachineForExecution (the definition the execution ran) and GetExecutionHistory,
paginated. So what the page shows is what a client of the cloud sees (IAM, the fixes of
fixes/), not moto's internals. The backend (features/executions.py) is read only where AWS has
no API: an EXPRESS execution has no ListExecutions, DescribeExecution nor
GetExecutionHistory (fixes/sfn_express_executions.py); its list and description come from
the backend, and its history from the state machine's CloudWatch Logs group, as the console
reads it there (execution_history.py) - nothing when the machine logs nothing.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from localcloud import clients
from localcloud.console import extensions
from localcloud.console.graph import TOP, graph
from localcloud.execution_history import log_group_name, logged_history
from localcloud.features import executions as backend_executions

__all__ = [
    "MAX_PATH",
    "STATUSES",
    "NotFound",
    "execution",
    "executions",
    "path_of",
    "state_machines",
    "subject",
]

STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE")
MAX_PAGE = 1000  # ListExecutions' and GetExecutionHistory's own maximum maxResults
MAX_PATH = 1000  # states entered: a Map over many items is summarized, not sent whole
_NOT_FOUND = {"ExecutionDoesNotExist", "StateMachineDoesNotExist", "ResourceNotFound"}


NotFound = extensions.NotFound  # no state machine or execution with this ARN (404 over HTTP)


def _client(cloud: extensions.Cloud, service: str) -> Any:
    return clients.client(service, cloud.region)


def _call(arn: str, call: Any, **kwargs: Any) -> Any:
    """``call(**kwargs)``, its "does not exist" errors as NotFound and a malformed ARN as
    ValueError (400), so callers need not know botocore."""
    try:
        return call(**kwargs)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in _NOT_FOUND:
            raise NotFound(f"no {_kind(arn)} {arn}") from exc
        if code in ("InvalidArn", "ValidationException"):
            raise ValueError(f"{arn!r}: {exc.response['Error'].get('Message', code)}") from exc
        raise


def _kind(arn: str) -> str:
    return "state machine" if ":stateMachine:" in arn else "execution"


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, dt.datetime) else None


def _duration_ms(start: Any, stop: Any) -> int | None:
    if isinstance(start, dt.datetime) and isinstance(stop, dt.datetime):
        return int((stop - start).total_seconds() * 1000)
    return None


def subject(input_text: Any) -> str | None:
    """An execution's "subject", a generic guess at what it worked on, for the list: the
    input's ``object.key``, else ``detail.object.key`` (an S3 event as EventBridge delivers
    it), if a string."""
    try:
        document = json.loads(input_text) if isinstance(input_text, str) else input_text
    except ValueError:
        return None
    for holder in (document, document.get("detail") if isinstance(document, dict) else None):
        found = holder.get("object") if isinstance(holder, dict) else None
        key = found.get("key") if isinstance(found, dict) else None
        if isinstance(key, str):
            return key
    return None


def _graph_of(definition: Any) -> dict[str, Any]:
    """``{"graph"}``; ``graph`` None and a ``graphError`` for a definition not drawable."""
    try:
        return {"graph": graph(definition)}
    except ValueError as exc:
        return {"graph": None, "graphError": str(exc)}


def _positive(name: str, value: Any, maximum: int) -> int:
    number = int(value)  # ValueError for text that is not a number: a 400
    if not 1 <= number <= maximum:
        raise ValueError(f"{name} must be 1..{maximum}, not {number}")
    return number


# --- state machines ------------------------------------------------------------------------
def state_machines(cloud: extensions.Cloud) -> list[dict[str, Any]]:
    """Every state machine: name, arn, type, creation date and graph (None, with
    ``graphError``, for a definition that cannot be drawn)."""
    sfn = _client(cloud, "stepfunctions")
    out = []
    for page in sfn.get_paginator("list_state_machines").paginate():
        for item in page.get("stateMachines", []):
            arn = item["stateMachineArn"]
            described = _call(arn, sfn.describe_state_machine, stateMachineArn=arn)
            out.append(
                {
                    "name": described.get("name", item.get("name")),
                    "arn": arn,
                    "type": described.get("type", item.get("type")),
                    "created": _iso(described.get("creationDate")),
                    **_graph_of(described.get("definition")),
                }
            )
    return out


# --- executions ----------------------------------------------------------------------------
def _row(described: Mapping[str, Any]) -> dict[str, Any]:
    start, stop = described.get("startDate"), described.get("stopDate")
    return {
        "arn": described.get("executionArn"),
        "name": described.get("name"),
        "status": str(described.get("status")),  # text (_backend_described's too)
        "start": _iso(start),
        "stop": _iso(stop),
        "durationMs": _duration_ms(start, stop),
        "subject": subject(described.get("input")),
    }


def _backend_described(arn: str) -> dict[str, Any]:
    """An EXPRESS execution as DescribeExecution would answer, from the backend (no API)."""
    found = backend_executions.execution(arn)
    if found is None:
        raise NotFound(f"no execution {arn}")
    described = dict(found.to_describe_output())
    status = described.get("status")
    described["status"] = str(getattr(status, "value", status))
    return described


def _offset(token: str | None) -> int:
    if token is None:
        return 0
    if not token.isdigit():
        raise ValueError(f"invalid page token {token!r}")
    return int(token)


def executions(
    cloud: extensions.Cloud,
    machine_arn: str,
    status: str | None = None,
    limit: int = 100,
    next_token: str | None = None,
) -> dict[str, Any]:
    """One page of a state machine's executions, newest first: ``{"stateMachineArn",
    "type", "executions": [rows], "nextToken"}``. STANDARD: ListExecutions (its own token)
    and a DescribeExecution per row for the subject; EXPRESS: the backend (token: an
    offset)."""
    if status is not None and status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
    limit = _positive("limit", limit, MAX_PAGE)
    sfn = _client(cloud, "stepfunctions")
    machine = _call(machine_arn, sfn.describe_state_machine, stateMachineArn=machine_arn)
    rows: list[dict[str, Any]]
    if machine.get("type") == "EXPRESS":
        found = [
            _backend_described(e.exec_arn)
            for e in backend_executions.executions()
            if getattr(e, "state_machine_arn", None) == machine_arn
        ]
        found = [d for d in found if status is None or d["status"] == status]
        found.sort(key=lambda d: d["startDate"], reverse=True)
        start = _offset(next_token)
        rows = [_row(d) for d in found[start : start + limit]]
        token = str(start + limit) if start + limit < len(found) else None
    else:
        optional = {"statusFilter": status, "nextToken": next_token}
        request = {"stateMachineArn": machine_arn, "maxResults": limit}
        request.update({k: v for k, v in optional.items() if v})
        page = _call(machine_arn, sfn.list_executions, **request)
        arns = [item["executionArn"] for item in page.get("executions", [])]
        rows = [_row(_call(arn, sfn.describe_execution, executionArn=arn)) for arn in arns]
        token = page.get("nextToken")
    return {
        "stateMachineArn": machine_arn,
        "type": machine.get("type"),
        "executions": rows,
        "nextToken": token,
    }


# --- one execution -------------------------------------------------------------------------
def _details(event: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in event.items():
        if key.endswith("EventDetails") and isinstance(value, dict):
            return dict(value)
    return {}


_FAILURES = ("Failed", "TimedOut")  # TaskFailed, LambdaFunctionTimedOut, TaskSubmitFailed, ...


class _Walk:
    """The visits of one history, event by event (see ``path_of``)."""

    def __init__(self) -> None:
        self.visits: list[dict[str, Any]] = []
        self.visit_of: dict[int, int] = {}  # event id -> index in visits
        self.exits: set[int] = set()  # ids of ...StateExited events: nothing inherits from them
        self.open: dict[str, list[int]] = {}  # state name -> indexes of its open visits
        self.pending: set[int] = set()  # visits whose last attempt failed
        self.execution_error: dict[str, Any] = {}

    def event(self, event: Mapping[str, Any]) -> None:
        kind, event_id = str(event.get("type", "")), int(event.get("id", 0))
        details = _details(event)
        if kind.endswith("StateEntered"):
            self.entered(event_id, kind, details, event.get("timestamp"))
        elif kind.endswith("StateExited"):
            self.exited(event_id, details, event.get("timestamp"))
        elif kind.startswith("Execution"):
            if kind.endswith(_FAILURES) or kind == "ExecutionAborted":
                self.execution_error = {key: details.get(key) for key in ("error", "cause")}
        else:
            self.inside(event_id, kind, details, int(event.get("previousEventId") or 0))

    def entered(self, event_id: int, kind: str, details: dict[str, Any], at: Any) -> None:
        self.visit_of[event_id] = len(self.visits)
        self.open.setdefault(str(details.get("name")), []).append(len(self.visits))
        self.visits.append(
            {
                "name": details.get("name"),
                "type": kind.removesuffix("StateEntered"),
                "enteredEventId": event_id,
                "entered": _iso(at),
                "exited": None,
                "input": details.get("input"),
                "output": None,
                "retries": 0,
                "retriedErrors": [],
                "error": None,
                "cause": None,
                "status": "running",
            }
        )

    def exited(self, event_id: int, details: dict[str, Any], at: Any) -> None:
        self.exits.add(event_id)
        stack = self.open.get(str(details.get("name")), [])
        if stack:
            index = stack.pop()
            visit = self.visits[index]
            visit.update(exited=_iso(at), output=details.get("output"))
            visit["status"] = "caught" if visit["error"] else "succeeded"
            self.visit_of[event_id] = index

    def inside(self, event_id: int, kind: str, details: dict[str, Any], previous: int) -> None:
        if previous in self.visit_of and previous not in self.exits:
            index = self.visit_of[previous]
        else:  # no chain (moto starts a state's chain at 0): the latest visit still open
            still_open = [i for stack in self.open.values() for i in stack]
            if not still_open:
                return
            index = max(still_open)
        self.visit_of[event_id] = index
        visit = self.visits[index]
        if kind.endswith(_FAILURES):
            visit.update(error=details.get("error"), cause=details.get("cause"))
            self.pending.add(index)
        elif kind.endswith("Scheduled") and index in self.pending:
            visit["retries"] += 1
            visit["retriedErrors"].append(visit["error"])
            visit.update(error=None, cause=None)
            self.pending.discard(index)

    def finish(self, status: str) -> int | None:
        """Each visit's final status; the index of the visit the execution failed in."""
        failed: int | None = None
        if status in ("FAILED", "TIMED_OUT", "ABORTED"):
            unexited = [i for i, v in enumerate(self.visits) if v["exited"] is None]
            erred = [
                i for i in unexited if self.visits[i]["error"] or self.visits[i]["type"] == "Fail"
            ]
            failed = next(reversed(erred or unexited), None)
        for index, visit in enumerate(self.visits):
            if index == failed:
                visit["status"] = "failed"
                if not visit["error"]:
                    visit.update(self.execution_error)  # a Fail state's error: the execution's
            elif visit["exited"] is None and visit["error"]:
                visit["status"] = "caught"
            elif visit["exited"] is None and status != "RUNNING":
                visit["status"] = "incomplete"  # aborted, timed out, or a branch cut short
        return failed


def path_of(events: Sequence[Mapping[str, Any]], status: str = "SUCCEEDED") -> dict[str, Any]:
    """The states an execution entered, in order, from its history (GetExecutionHistory's
    events, ids ascending), with the state each event belongs to.

    An event belongs to the state its ``previousEventId`` chain leads to (a state's events
    follow its ``...StateEntered``; an event after a ``...StateExited`` is the next
    state's or the execution's), a ``...StateExited`` to the latest open visit of its name.
    A retry is a failure (``...Failed``/``...TimedOut``) followed by a new ``...Scheduled``
    in the same visit; the error of a retried attempt moves to ``retriedErrors``. A visit
    that ends with an error is ``failed`` if the execution failed there (its last such
    visit, or a Fail state), else ``caught``. Returns ``{"visits", "stateNames" (event id ->
    state name), "failedVisit" (index or None)}``."""
    walk = _Walk()
    for event in events:
        walk.event(event)
    failed = walk.finish(status)
    names = {event_id: walk.visits[index]["name"] for event_id, index in walk.visit_of.items()}
    return {"visits": walk.visits, "stateNames": names, "failedVisit": failed}


def _node_ids(drawn: Mapping[str, Any] | None) -> dict[str, str]:
    """State name -> node id (the first, should a malformed definition repeat a name: AWS
    keeps state names unique in a whole state machine, which histories rely on too)."""
    ids: dict[str, str] = {}
    for node in (drawn or {}).get("nodes", []):
        if node["type"] not in ("Start", "End", "Missing"):
            ids.setdefault(node["label"], node["id"])
    return ids


def _history(
    cloud: extensions.Cloud, arn: str, machine: Mapping[str, Any]
) -> tuple[list[Any], Any]:
    """The whole history and where it came from (None: nowhere, an unlogged EXPRESS run)."""
    if ":express:" in arn:
        group = log_group_name(machine.get("loggingConfiguration"))
        if group is None:
            return [], None
        try:
            return logged_history(_client(cloud, "logs"), group, arn), "CloudWatch Logs"
        except ClientError:  # the log group is gone: logs are best effort, as on AWS
            return [], "CloudWatch Logs"
    sfn = _client(cloud, "stepfunctions")
    pages = sfn.get_paginator("get_execution_history").paginate(
        executionArn=arn, PaginationConfig={"PageSize": MAX_PAGE}
    )
    try:
        return [event for page in pages for event in page.get("events", [])], "GetExecutionHistory"
    except ClientError:
        _call(arn, sfn.describe_execution, executionArn=arn)  # NotFound / ValueError
        raise


def execution(
    cloud: extensions.Cloud, arn: str, *, page_size: int = 200, page_token: str | None = None
) -> dict[str, Any]:
    """One execution: its description, one page of its history as rows (``events``,
    ``nextPageToken`` while more follow, ``eventCount``), and on the first page (no
    ``page_token``) its ``graph``, ``path`` (visits, see ``path_of``; the first ``MAX_PATH``,
    ``pathTruncated`` when more), ``failedNodeId`` and ``visitedNodeIds`` (the graph's start
    node, each visited state's node in first-visit order, and the end node once
    SUCCEEDED) to highlight. Later pages carry only the events."""
    page_size = _positive("page_size", page_size, MAX_PAGE)
    start = _offset(page_token)
    sfn = _client(cloud, "stepfunctions")
    if ":express:" in arn:
        described = _backend_described(arn)
        machine = _call(
            arn, sfn.describe_state_machine, stateMachineArn=described["stateMachineArn"]
        )
    else:
        described = _call(arn, sfn.describe_execution, executionArn=arn)
        machine = _call(arn, sfn.describe_state_machine_for_execution, executionArn=arn)
    events, source = _history(cloud, arn, machine)
    status = str(described.get("status"))
    walked = path_of(events, status)
    rows = [
        {
            "id": event.get("id"),
            "previousEventId": event.get("previousEventId"),
            "type": event.get("type"),
            "timestamp": _iso(event.get("timestamp")),
            "stateName": walked["stateNames"].get(int(event.get("id", 0))),
            "details": _details(event),
        }
        for event in events[start : start + page_size]
    ]
    out: dict[str, Any] = {
        **_row(described),
        "stateMachineArn": described.get("stateMachineArn"),
        "type": machine.get("type", "EXPRESS" if ":express:" in arn else "STANDARD"),
        "input": described.get("input"),
        "output": described.get("output"),
        "error": described.get("error"),
        "cause": described.get("cause"),
        "historySource": source,
        "eventCount": len(events),
        "events": rows,
        "nextPageToken": str(start + page_size) if start + page_size < len(events) else None,
    }
    if page_token is None:
        drawn = _graph_of(machine.get("definition"))
        ids = _node_ids(drawn["graph"])
        visits = walked["visits"]
        for visit in visits:
            visit["nodeId"] = ids.get(str(visit["name"]))
        nodes = [f"{TOP}#start", *(v["nodeId"] for v in visits if v["nodeId"])] if visits else []
        visited = list(dict.fromkeys(nodes))
        if status == "SUCCEEDED":
            visited.append(f"{TOP}#end")
        failed = walked["failedVisit"]
        out.update(
            **drawn,
            path=visits[:MAX_PATH],
            pathTruncated=len(visits) > MAX_PATH,
            failedNodeId=visits[failed]["nodeId"] if failed is not None else None,
            visitedNodeIds=visited,
        )
    return out
