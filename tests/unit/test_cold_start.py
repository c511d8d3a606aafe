"""Cold start (issue 12): what importing a handler loads, and that tracing still works.

Each check runs in a fresh interpreter with a deployed function's environment: LAMBDA_TASK_ROOT
is set, so powertools traces unless POWERTOOLS_TRACE_DISABLED is. ``scripts/bench_cold_start.py``
measures the times; these tests keep the causes away:

* the Tracer patches botocore only (powertools' default, ``patch_all``, imports every library
  the X-Ray SDK can patch: requests, sqlite3, ...);
* where tracing is disabled (the local cloud, tests, ``POWERTOOLS_TRACE_DISABLED``), the X-Ray
  SDK is not imported at all (powertools' own provider imports it for any Tracer; outside
  Lambda it then builds a client for centralized sampling);
* no handler reads a dataset contract before an object of that dataset is processed;
* no handler imports pydantic, or powertools' batch utilities and event data classes;
* no handler imports the Parquet module (or pyarrow) before a Parquet file is written;
* where tracing is enabled, asyncio (which the X-Ray SDK's wrapt imports) is not run: not at
  import, not by a traced invocation (``observability.defer_import``);
* ReconcileFunction imports what only a run that starts or escalates needs on first use;
* no handler defines a dataclass of ours at import (each compiles its methods at every
  import; Structs or plain classes instead);
* where the runtime imports a module as the function's handler (``_HANDLER``), what the
  import made is frozen for the garbage collector (``observability.handler_imported``), and
  only there;
* where tracing is enabled, an invocation still records its handler subsegment (with the
  annotations) and a subsegment per AWS call.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"
HANDLERS = (
    "process",
    "resolve",
    "classify_error",
    "quarantine",
    "reconcile",
    "split",
    "chunk",
    "assemble",
)

# Libraries the X-Ray SDK's patch_all would import when installed; none is used by the functions.
NOT_PATCHED = (
    "aiobotocore",
    "httpx",
    "mysql",
    "pg8000",
    "psycopg",
    "psycopg2",
    "pymongo",
    "pymysql",
    "pynamodb",
    "requests",
    "sqlalchemy",
    "sqlite3",
)
# pydantic (the powertools parser's engine): ~90 ms to import and build models. The inputs,
# settings and contracts are msgspec Structs (ingest_pipeline.parsing). Without it, powertools'
# batch utilities do not import every parser model of every AWS event either.
PYDANTIC = ("pydantic", "pydantic_core")
PARSER_MODELS = "aws_lambda_powertools.utilities.parser.models"
# Powertools' batch utilities import every event data class and asyncio (18 ms of
# ReconcileFunction's cold start); ingest_pipeline.sqs_batch does its SQS part.
POWERTOOLS_UNUSED = (
    "aws_lambda_powertools.utilities.batch",
    "aws_lambda_powertools.utilities.data_classes",
)
# What a handler imports only when an invocation needs it (ReconcileFunction: the Step
# Functions / SNS adapter and the failure report, for a run that starts or escalates).
DEFERRED = {"reconcile": ("ingest_pipeline.dal.workflow", "ingest_pipeline.logic.failure")}
# Only an object of a Parquet dataset needs these (ProcessFunction's PyarrowLayer).
PARQUET = ("ingest_pipeline.logic.parquet", "pyarrow")
# What the X-Ray SDK's wrapt 2.x imports and the functions never use: asyncio's package stays
# unexecuted (observability.DEFERRED_BY_XRAY), so none of its ~30 submodules is loaded.
ASYNCIO_SUBMODULES = "asyncio."
# The X-Ray SDK's recorder and patchers (not its package root: powertools turns the SDK off
# through aws_xray_sdk.global_sdk_config, a few lines).
XRAY_SDK = ("aws_xray_sdk.core", "aws_xray_sdk.ext")

# Records every contract file opened, from before the handler is imported.
_CONTRACT_AUDIT = """
import json, os, sys

contracts_opened = []


def _audit(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0]).replace(os.sep, "/")
        if "/ingest_pipeline/contracts/" in path and path.endswith(".json"):
            contracts_opened.append(path)


sys.addaudithook(_audit)
"""


def run_python(
    code: str, *, lambda_env: bool = True, tracing: bool = True, handler: str | None = None
) -> Any:
    """Run ``code`` in a fresh interpreter; the JSON its last output line holds. ``handler``:
    the function's handler (``_HANDLER``), as the Lambda runtime sets it."""
    drop = ("AWS_", "POWERTOOLS_", "LAMBDA_", "_X_AMZN_", "_HANDLER")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(FUNCTIONS), env.get("PYTHONPATH")])),
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "POWERTOOLS_SERVICE_NAME": "cold-start-test",
            "POWERTOOLS_METRICS_NAMESPACE": "Test",
        }
    )
    if lambda_env:
        env["LAMBDA_TASK_ROOT"] = str(FUNCTIONS)
    if not tracing:
        env["POWERTOOLS_TRACE_DISABLED"] = "1"
    if handler is not None:
        env["_HANDLER"] = handler
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_traced_handler_imports_only_what_it_uses(handler: str) -> None:
    loaded = run_python(
        _CONTRACT_AUDIT
        + f"""
import ingest_pipeline.handlers.{handler}

after_import = list(contracts_opened)
unwanted = sorted(
    name for name in sys.modules
    if name.split(".")[0] in {NOT_PATCHED + PYDANTIC!r}
    or name.startswith({(PARSER_MODELS, *POWERTOOLS_UNUSED, ASYNCIO_SUBMODULES)!r})
    or name in {DEFERRED.get(handler, ()) + PARQUET!r}
)
dataclasses = sorted(
    f"{{module.__name__}}.{{name}}"
    for module in list(sys.modules.values())
    if module.__name__.startswith("ingest_pipeline")
    for name, value in vars(module).items()
    if isinstance(value, type) and "__dataclass_fields__" in vars(value)
)
from aws_xray_sdk.core import patcher
from ingest_pipeline.logic import contracts

cached = contracts.load_contract.cache_info().currsize
contracts.load_contract("orders")  # the audit sees a contract being read
print(json.dumps({{
    "patched": sorted(patcher._PATCHED_MODULES),
    "unwanted": unwanted,
    "dataclasses": dataclasses,
    "contracts_opened": after_import,
    "contracts_cached": cached,
    "audit_works": len(contracts_opened) > len(after_import),
}}))
"""
    )
    assert loaded["patched"] == ["botocore"]
    assert loaded["unwanted"] == []
    assert loaded["dataclasses"] == []
    assert loaded["contracts_opened"] == [] and loaded["contracts_cached"] == 0
    assert loaded["audit_works"]


@pytest.mark.parametrize(
    "environment",
    [
        pytest.param({"tracing": False}, id="POWERTOOLS_TRACE_DISABLED"),
        pytest.param({"lambda_env": False}, id="outside-lambda"),
    ],
)
def test_without_tracing_no_handler_imports_the_xray_sdk(environment: dict[str, bool]) -> None:
    imports = "\n".join(f"import ingest_pipeline.handlers.{name}" for name in HANDLERS)
    loaded = run_python(
        f"""
import json, sys
{imports}
from ingest_pipeline.observability import tracer

print(json.dumps({{
    "disabled": tracer.disabled,
    "xray": sorted(name for name in sys.modules if name.startswith({XRAY_SDK!r})),
}}))
""",
        **environment,
    )
    assert loaded["disabled"] is True
    assert loaded["xray"] == []


def test_a_traced_invocation_records_the_handler_and_its_aws_calls() -> None:
    """ResolveObjectVersion with tracing on: its HeadObject (stubbed) is traced by the botocore
    patch, inside the handler's subsegment; the X-Ray SDK's emitter is replaced by a list."""
    result = run_python(
        """
import datetime, json, os
from botocore.stub import Stubber

os.environ["_X_AMZN_TRACE_ID"] = (
    "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
)
from ingest_pipeline.dal import s3
from ingest_pipeline.handlers import resolve
from aws_xray_sdk.core import xray_recorder


class Emitter:
    def __init__(self):
        self.sent = []

    def send_entity(self, entity):
        self.sent.append(json.loads(entity.serialize()))

    def set_daemon_address(self, address):
        pass


emitter = Emitter()
xray_recorder.configure(emitter=emitter)
stubber = Stubber(s3.s3_client())
stubber.add_response(
    "head_object",
    {
        "VersionId": "v1",
        "ETag": '"etag"',
        "LastModified": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
        "ContentLength": 3,
    },
    {"Bucket": "example-bucket", "Key": "incoming/orders/a.csv"},
)
stubber.activate()


class Context:
    function_name = "resolve"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:resolve"
    aws_request_id = "request-1"


resolve.handler({"object": {"bucket": "example-bucket", "key": "incoming/orders/a.csv"}}, Context())
stubber.assert_no_pending_responses()
import sys

asyncio_run = sorted(name for name in sys.modules if name.startswith("asyncio."))
print(json.dumps({"sent": emitter.sent, "asyncio": asyncio_run}))
"""
    )
    assert result["asyncio"] == []  # the deferred asyncio was not run by the invocation either
    entities = result["sent"]
    by_name = {entity["name"]: entity for entity in entities}
    handler, call = by_name["## handler"], by_name["s3"]
    assert handler["parent_id"] == "53995c3f42cd8ad8"  # the function's segment (Lambda's)
    assert handler["annotations"] == {
        "object_key": "incoming/orders/a.csv",
        "ColdStart": True,
        "Service": "cold-start-test",
    }
    assert call["namespace"] == "aws" and call["aws"]["operation"] == "HeadObject"
    assert call["parent_id"] == handler["id"]


def test_the_disabled_provider_records_nothing_and_loads_no_sdk() -> None:
    from ingest_pipeline.observability import XRayProvider

    provider = XRayProvider()
    with provider.in_subsegment(name="## sync") as segment:
        segment.put_annotation(key="k", value="v")
        segment.put_metadata(key="k", value={"v": 1})
        segment.add_exception(ValueError("x"), [])

    async def traced() -> None:
        async with provider.in_subsegment_async(name="## async") as segment:
            segment.put_annotation(key="k", value=1)

    asyncio.run(traced())
    provider.put_annotation(key="k", value=True)
    provider.put_metadata(key="k", value="v")
    assert "recorder" not in vars(provider)  # the X-Ray SDK's recorder was never asked for


def test_a_deferred_module_runs_on_first_use(tmp_path: Path) -> None:
    """``defer_import``: ``import`` binds the module without running it; the first attribute
    used runs it (as an import would have), once; a deferred module that fails to run is
    left out of sys.modules, as a failed import is."""
    (tmp_path / "deferred_boom.py").write_text("raise RuntimeError('boom')\n")
    loaded = run_python(
        f"""
import json, sys
from ingest_pipeline.observability import defer_import

sys.path.insert(0, {str(tmp_path)!r})
defer_import("deferred_boom")
import deferred_boom

try:
    deferred_boom.anything
    boom = None
except RuntimeError as exc:
    boom = str(exc)
defer_import("asyncio")
import asyncio

before = sorted(name for name in sys.modules if name.startswith("asyncio."))


async def answer():
    await asyncio.sleep(0)
    return 42


result = asyncio.run(answer())
from asyncio import Lock

defer_import("ingest_pipeline.handlers._no_such_module")
defer_import("json")  # already imported: left as it is
print(json.dumps({{
    "boom": [boom, "deferred_boom" in sys.modules],
    "before": before,
    "result": result,
    "loaded": type(sys.modules["asyncio"]).__name__,
    "lock": Lock.__module__,
    "missing": "ingest_pipeline.handlers._no_such_module" in sys.modules,
    "json": type(sys.modules["json"]).__name__,
}}))
""",
        tracing=False,
    )
    assert loaded == {
        "boom": ["boom", False],
        "before": [],
        "result": 42,
        "loaded": "module",
        "lock": "asyncio.locks",
        "missing": False,
        "json": "module",
    }


@pytest.mark.parametrize("handler", ["reconcile", "quarantine", "assemble"])
def test_a_handler_imported_by_the_runtime_freezes_what_its_import_made(handler: str) -> None:
    """The runtime's import of the function's handler ends with ``gc.freeze`` (the collector's
    passes no longer go over the modules); importing it otherwise (tests, tools) freezes
    nothing. No collection runs during the runtime's import (at most one, before the package's
    own code turns the collector off; some 85 with it on), and the collector is on after it;
    the cyclic garbage frozen with it is the few hundred objects the standard library's modules
    leave as they load. No handler imports another: the other's end would turn the collector
    on in the middle of the import, and its first pass would go over all of it."""
    code = f"""
import gc, json, sys
passes = []
gc.callbacks.append(lambda phase, info: passes.append(phase) if phase == "start" else None)
import ingest_pipeline.handlers.{handler}

frozen, enabled, during = gc.get_freeze_count(), gc.isenabled(), len(passes)
gc.unfreeze()
handlers = [m for m in sys.modules if m.startswith("ingest_pipeline.handlers.")]
print(json.dumps({{"frozen": frozen, "enabled": enabled, "passes": during,
                   "garbage": gc.collect(), "handlers": handlers}}))
"""
    as_handler = run_python(code, handler=f"ingest_pipeline.handlers.{handler}.handler")
    assert as_handler["frozen"] > 10_000 and as_handler["enabled"]
    assert as_handler["passes"] <= 1 and as_handler["garbage"] < 1_000
    assert as_handler["handlers"] == [f"ingest_pipeline.handlers.{handler}"]
    elsewhere = "ingest_pipeline.handlers.resolve.handler"
    assert run_python(code, handler=elsewhere)["frozen"] == 0
    imported = run_python(code)  # not by the runtime: as any module, collected as it goes
    assert imported["frozen"] == 0 and imported["enabled"] and imported["passes"] > 50
