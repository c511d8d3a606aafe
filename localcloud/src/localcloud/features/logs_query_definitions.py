"""CloudWatch Logs saved queries (query definitions), which moto does not have.

PutQueryDefinition / DescribeQueryDefinitions / DeleteQueryDefinition are added, with the
answers the CloudWatch Logs API Reference gives: PutQueryDefinition creates a definition (a
new ``queryDefinitionId``) or, given an existing id, replaces it, and refuses an unknown id
(ResourceNotFoundException) or a name or query string outside its length limits
(InvalidParameterException); DescribeQueryDefinitions lists them by name, optionally those
whose name starts with ``queryDefinitionNamePrefix``; DeleteQueryDefinition answers
``{"success": true}`` or ResourceNotFoundException. ``AWS::Logs::QueryDefinition`` resources
are created through this API (stack/shims.py). Running the queries is out of scope: the
local cloud keeps no Lambda log events.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from moto.logs.exceptions import InvalidParameterException, ResourceNotFoundException
from moto.logs.models import LogsBackend
from moto.logs.responses import LogsResponse

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "delete_query_definition", "put_query_definition"]

_STORE = "_localcloud_query_definitions"  # kept on moto's backend: reset with it
_NAME_LIMITS = (1, 255)
_QUERY_LIMITS = (1, 10000)


def _definitions(backend: LogsBackend) -> dict[str, dict[str, Any]]:
    store: dict[str, dict[str, Any]] = backend.__dict__.setdefault(_STORE, {})
    return store


def _check_length(name: str, value: str, limits: tuple[int, int]) -> None:
    if not limits[0] <= len(value) <= limits[1]:
        raise InvalidParameterException(
            f"1 validation error detected: Value at '{name}' failed to satisfy constraint: "
            f"Member must have length between {limits[0]} and {limits[1]}"
        )


def put_query_definition(
    backend: LogsBackend,
    name: str,
    query_string: str,
    log_group_names: list[str] | None = None,
    *,
    query_definition_id: str | None = None,
    query_language: str = "CWLI",
) -> str:
    _check_length("name", name, _NAME_LIMITS)
    _check_length("queryString", query_string, _QUERY_LIMITS)
    definitions = _definitions(backend)
    if query_definition_id and query_definition_id not in definitions:
        raise ResourceNotFoundException("The query definition does not exist.")
    definition_id = query_definition_id or str(uuid.uuid4())
    definitions[definition_id] = {
        "queryLanguage": query_language,
        "queryDefinitionId": definition_id,
        "name": name,
        "queryString": query_string,
        "lastModified": int(time.time() * 1000),
        "logGroupNames": list(log_group_names or []),
    }
    return definition_id


def delete_query_definition(backend: LogsBackend, query_definition_id: str) -> None:
    if _definitions(backend).pop(query_definition_id, None) is None:
        raise ResourceNotFoundException("The query definition does not exist.")


def _put(self: LogsResponse) -> str:
    definition_id = put_query_definition(
        self.logs_backend,
        str(self._get_param("name") or ""),
        str(self._get_param("queryString") or ""),
        self._get_param("logGroupNames"),
        query_definition_id=self._get_param("queryDefinitionId"),
        query_language=str(self._get_param("queryLanguage") or "CWLI"),
    )
    return json.dumps({"queryDefinitionId": definition_id})


def _describe(self: LogsResponse) -> str:
    prefix = str(self._get_param("queryDefinitionNamePrefix") or "")
    found = sorted(
        (d for d in _definitions(self.logs_backend).values() if d["name"].startswith(prefix)),
        key=lambda d: d["name"],
    )
    return json.dumps({"queryDefinitions": found})


def _delete(self: LogsResponse) -> str:
    delete_query_definition(self.logs_backend, str(self._get_param("queryDefinitionId") or ""))
    return json.dumps({"success": True})


def _build(rt: Runtime) -> Targets:
    return {
        (LogsResponse, "put_query_definition"): _put,
        (LogsResponse, "describe_query_definitions"): _describe,
        (LogsResponse, "delete_query_definition"): _delete,
    }


PATCHES = [
    Patch(
        name="logs-query-definitions",
        kind=Kind.FEATURE,
        reason="PutQueryDefinition / DescribeQueryDefinitions / DeleteQueryDefinition (moto "
        "has none), so AWS::Logs::QueryDefinition resources exist and can be listed.",
        test="tests/e2e/test_operations.py::test_saved_queries_are_deployed_for_the_stack",
        build=_build,
        adds=("put_query_definition", "describe_query_definitions", "delete_query_definition"),
    ),
]
