"""Speedup: parsed JSONPaths and SDK clients of the Step Functions interpreter are reused.

Per task, moto builds a jsonpath_ng parser (a PLY yacc table) for every path it evaluates
(asl/utils/json_path.py ``extract_json``, common/path/result_path.py) and a new boto3 client
per service call (asl/utils/boto_client.py ``boto_client_for``): together about a third of
an execution's CPU. Parsed paths are immutable; boto3 clients are thread-safe once built
(they are built under a lock here: boto3's default session is not). moto's
``boto_client_for`` ignores ``state_credentials`` (fixed test keys), so one client per default
session (cloud.py: one per process and list of botocore handlers), region and service is
equivalent.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any

import boto3
from jsonpath_ng import parse as jp_parse
from jsonpath_ng.ext import parse as jp_ext_parse
from moto.stepfunctions.parser.asl.component.common.path import result_path
from moto.stepfunctions.parser.asl.utils import boto_client, json_path

from localcloud.fixes.sfn_failure_passthrough import service_classes
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_cached_ext_parse = functools.lru_cache(maxsize=4096)(jp_ext_parse)
_cached_jp_parse = functools.lru_cache(maxsize=4096)(jp_parse)
_LOCK = threading.Lock()
#: a client keeps nothing of a cloud: the next cloud of the process reuses it
_CLIENTS: dict[tuple[Any, str, str], Any] = {}


def _build(rt: Runtime) -> Targets:
    boto_client_for = boto_client.boto_client_for

    def cached_boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        key = (boto3.DEFAULT_SESSION, region, service)
        with _LOCK:
            client = _CLIENTS.get(key)
            if client is None:
                client = _CLIENTS[key] = boto_client_for(region, service)
            return client

    service_classes()  # every integration module imported, so each is found below
    table: Targets = {
        (json_path, "parse"): _cached_ext_parse,
        (result_path, "parse"): _cached_jp_parse,
    }
    for name, module in list(sys.modules.items()):
        if (
            name.startswith("moto.stepfunctions.parser")
            and getattr(module, "boto_client_for", None) is boto_client_for
        ):
            table[(module, "boto_client_for")] = cached_boto_client_for
    return table


PATCHES = [
    Patch(
        name="sfn-paths-and-clients",
        kind=Kind.SPEEDUP,
        reason="JSONPath parsers and SDK clients of the interpreter are built once, not per "
        "task: about a third of an execution's CPU.",
        test="tests/e2e/test_event_graph.py::test_ten_concurrent_copies_process_exactly_once",
        build=_build,
    )
]
