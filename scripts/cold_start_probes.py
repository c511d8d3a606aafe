"""The probes of ``bench_cold_start.py``: what each handler's measurement runs in a fresh
interpreter (its import, then what its first invocation creates before its first AWS call),
each function's own environment (template.yaml), and the floor (bare boto3 + one client)."""

from __future__ import annotations

import textwrap

REGION = "us-east-1"

_EVENT_PROCESS = {
    "object": {
        "bucket": "example-ingest-bucket",
        "key": "incoming/orders/2026-11-21.csv",
        "versionId": "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e",
    },
    "attempt": 1,
    "executionArn": "arn:aws:states:us-east-1:123456789012:execution:Pipeline:example",
}
_EVENT_FAILURE = {
    "state": {
        "object": _EVENT_PROCESS["object"],
        "claim": {"attempt": 1},
        "error": {"Error": "States.Timeout", "Cause": "timed out"},
    },
    "executionArn": _EVENT_PROCESS["executionArn"],
}
_EVENT_RECONCILE = {
    "run": {
        "scheduleArn": "arn:aws:scheduler:us-east-1:123456789012:schedule/default/reconcile",
        "scheduledTime": "2026-11-21T00:00:00Z",
        "executionId": "bench",
        "attempt": "1",
    },
    "task": "reconcile",
}

_PLAN = {
    "bucket": "example-ingest-bucket",
    "key": "work/example/plan-1.json",
    "headerEnd": 64,
    "headerLines": 1,
    "size": 512 * 1024 * 1024,
    "chunkCount": 8,
    "round": 1,
    "maxConcurrency": 200,
    "ingestDate": "2026-11-21",
}
_EVENT_CHUNK = {
    "object": _EVENT_PROCESS["object"],
    "chunk": {"index": 3, "start": 201326592, "stop": 268435456},
    "plan": _PLAN,
    "executionArn": _EVENT_PROCESS["executionArn"],
}
_EVENT_ASSEMBLE = {
    "object": _EVENT_PROCESS["object"],
    "plan": _PLAN,
    "chunks": {
        "ResultWriterDetails": {"Bucket": "example-ingest-bucket", "Key": "work/example/map"},
        "MapRunArn": "arn:aws:states:us-east-1:123456789012:mapRun:Large/example:run",
    },
    "attempt": 1,
    "executionArn": _EVENT_PROCESS["executionArn"],
}

# name: (function's own environment (template.yaml Properties), code run after the import:
# what the first invocation creates before its first AWS call).
HANDLERS: dict[str, tuple[dict[str, str], str]] = {
    "process": (
        {"RETRY_BASE_SECONDS": "60", "RETRY_MAX_SECONDS": "3600"},
        f"""
        from ingest_pipeline.config import Settings
        from ingest_pipeline.dal import s3
        from ingest_pipeline.logic import keys
        from ingest_pipeline.logic.contracts import load_contract
        from ingest_pipeline.models import ProcessRequest, parse_event
        request = parse_event({_EVENT_PROCESS!r}, ProcessRequest)
        Settings.from_env()
        load_contract(keys.dataset_of(request.object.key))
        s3.s3_client()
        """,
    ),
    "resolve": (
        {},
        f"""
        from ingest_pipeline.dal import s3
        from ingest_pipeline.models import ResolveRequest, parse_event
        parse_event({_EVENT_PROCESS!r}, ResolveRequest)
        s3.s3_client()
        """,
    ),
    "classify_error": (
        {"RETRY_BASE_SECONDS": "60", "RETRY_MAX_SECONDS": "3600"},
        f"""
        from ingest_pipeline.config import Settings
        from ingest_pipeline.models import FailureRequest, parse_event
        parse_event({_EVENT_FAILURE!r}, FailureRequest)
        Settings.from_env()
        """,
    ),
    "quarantine": (
        {},
        f"""
        from ingest_pipeline.config import Settings
        from ingest_pipeline.dal import s3
        from ingest_pipeline.models import FailureRequest, parse_event
        parse_event({_EVENT_FAILURE!r}, FailureRequest)
        Settings.from_env()
        s3.s3_client()
        """,
    ),
    "reconcile": (
        {
            "OBJECT_STATE_TABLE": "bench-state",
            "PIPELINE_STATE_MACHINE_ARN": (
                "arn:aws:states:us-east-1:123456789012:stateMachine:Pipeline"
            ),
            "INGEST_BUCKET": "example-ingest-bucket",
            "OPERATIONS_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:operations",
            "RECONCILE_MAX_ATTEMPTS": "5",
            "MISSED_EVENT_GRACE_SECONDS": "900",
            "MISSED_EVENT_LOOKBACK_HOURS": "24",
            "RECONCILE_MAX_STARTS_PER_RUN": "200",
            "RUN_LEASE_SECONDS": "120",
        },
        f"""
        from ingest_pipeline.config import ReconcileSettings
        from ingest_pipeline.dal import aws, s3
        from ingest_pipeline.models import ReconcileRequest, parse_event
        parse_event({_EVENT_RECONCILE!r}, ReconcileRequest)
        ReconcileSettings.from_env()
        aws.client("dynamodb")
        s3.s3_client()
        """,
    ),
    # The large-object workflow: like ProcessObject, the dataset's packaged contract (the
    # fallback of dal/contracts.py when no version is registered) is part of the figure.
    "split": (
        {"CHUNK_MIB": "64", "CHUNK_CONCURRENCY": "200"},
        f"""
        from ingest_pipeline.config import LargeObjectSettings
        from ingest_pipeline.dal import s3
        from ingest_pipeline.logic import keys
        from ingest_pipeline.logic.contracts import load_contract
        from ingest_pipeline.models import ProcessRequest, parse_event
        request = parse_event({_EVENT_PROCESS!r}, ProcessRequest)
        LargeObjectSettings.from_env()
        load_contract(keys.dataset_of(request.object.key))
        s3.s3_client()
        """,
    ),
    "chunk": (
        {},
        f"""
        from ingest_pipeline.dal import s3
        from ingest_pipeline.large_models import ChunkRequest
        from ingest_pipeline.logic import keys
        from ingest_pipeline.logic.contracts import load_contract
        from ingest_pipeline.models import parse_event
        request = parse_event({_EVENT_CHUNK!r}, ChunkRequest)
        load_contract(keys.dataset_of(request.object.key))
        s3.s3_client()
        """,
    ),
    "assemble": (
        {"RETRY_BASE_SECONDS": "60", "RETRY_MAX_SECONDS": "3600"},
        f"""
        from ingest_pipeline.config import Settings
        from ingest_pipeline.dal import s3
        from ingest_pipeline.large_models import AssembleRequest
        from ingest_pipeline.logic import keys
        from ingest_pipeline.logic.contracts import load_contract
        from ingest_pipeline.models import parse_event
        request = parse_event({_EVENT_ASSEMBLE!r}, AssembleRequest)
        Settings.from_env()
        load_contract(keys.dataset_of(request.object.key))
        s3.s3_client()
        """,
    ),
}

FLOOR = "floor"
_FLOOR_CODE = f"""
import boto3
boto3.client("s3", region_name={REGION!r})
"""

_PROBE = """
import json, time
_c0, _t0 = time.process_time(), time.perf_counter()
{imports}
_t1 = time.perf_counter()
{init}
_c2, _t2 = time.process_time(), time.perf_counter()
print(json.dumps({{
    "import_ms": (_t1 - _t0) * 1000, "total_ms": (_t2 - _t0) * 1000, "cpu_ms": (_c2 - _c0) * 1000
}}))
"""


def probe_code(name: str) -> str:
    if name == FLOOR:
        return _PROBE.format(imports=_FLOOR_CODE, init="")
    _, init = HANDLERS[name]
    return _PROBE.format(
        imports=f"import ingest_pipeline.handlers.{name}", init=textwrap.dedent(init)
    )
