"""The local cloud: the real template.yaml deployed into an embedded moto, whole event graph live.

One implementation, two ways in:

* in-process (tests, demo, bench)::

      with LocalCloud() as cloud:          # deploys template.yaml
          cloud.faults.fail_operation("dynamodb", "UpdateItem", "ThrottlingException")
          boto3.client("s3").put_object(Bucket=cloud.outputs["IngestBucketName"], ...)
          cloud.deliveries.drain()

* served over HTTP for the AWS CLI / boto3 (``ingestctl local up``)::

      cloud = LocalCloud().start()
      server = cloud.serve(port=4566)  # http://127.0.0.1:4566, + /_localcloud/ admin API

What runs (see each module): engine.py (in-process Lambda handlers with their timeout and a
LambdaContext, virtual retry/Wait clock, fault injection, ASL fixes), events.py (rule
delivery: InputTransformer, RetryPolicy, DLQ attributes, PutEvents source checks), esm.py
(SQS event source mappings with ReportBatchItemFailures), scheduler.py (schedules fired on
demand), stack.py (template -> SAM transform -> moto, refusing what it cannot run).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import botocore.loaders
import botocore.session
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID

from ingest_tools.localcloud import ddb, engine, esm, events, fidelity, scheduler, sqs, wire
from ingest_tools.localcloud.stack import DeployedStack, deploy, put_public_parameter

__all__ = ["LOCAL_ENV", "MOTO_CONFIG", "REGION", "TEMPLATE", "LocalCloud", "local_cloud"]

ROOT = Path(__file__).resolve().parents[3]
TEMPLATE = ROOT / "template.yaml"
REGION = "us-east-1"
MOTO_CONFIG: Any = {
    "stepfunctions": {"execute_state_machine": True},
    "lambda": {"use_docker": False},
}
LOCAL_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "POWERTOOLS_TRACE_DISABLED": "1",
    "POWERTOOLS_METRICS_NAMESPACE": "S3IngestPipelineLocal",
    "POWERTOOLS_SERVICE_NAME": "s3-ingest-pipeline",
}
# The public Powertools layer the template resolves through SSM (seeded into moto).
POWERTOOLS_LAYER_PARAMETER = "/aws/service/powertools/python/arm64/python3.13/3.37.0"
POWERTOOLS_LAYER = (
    "arn:aws:lambda:us-east-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python313-arm64:1"
)
_MOTO_EVAL_LOGGER = "moto.stepfunctions.parser.asl.component.eval_component"
_ACTIVE = threading.Lock()  # moto's backends are process-global: one cloud at a time


_LOADER = botocore.loaders.create_loader()  # service models, parsed once per process


def _default_session(region: str) -> None:
    """moto clears boto3's default session for each mock; the new one reuses one loader, so
    every client does not parse its service model (~50 ms each) again per LocalCloud."""
    core = botocore.session.get_session()
    core.register_component("data_loader", _LOADER)
    boto3.setup_default_session(botocore_session=core, region_name=region)


class LocalCloud:
    """Deploys ``template`` into an embedded moto with every hook; see the module docstring.

    ``event_delivery=False`` leaves EventBridge targets undelivered (moto's behaviour), for
    tests that start executions themselves. ``time_scale`` 0 runs retries, Wait states and
    delivery backoff on a virtual clock; 1.0 is real time.
    """

    def __init__(
        self,
        template: Path = TEMPLATE,
        *,
        region: str = REGION,
        stack_name: str = "ingest-local",
        parameters: dict[str, str] | None = None,
        event_delivery: bool = True,
        time_scale: float = 0.0,
    ) -> None:
        self.template = Path(template)
        self.region = region
        self.stack_name = stack_name
        self.parameters = dict(parameters or {})
        self.event_delivery = event_delivery
        self.time_scale = time_scale
        self.account_id = DEFAULT_ACCOUNT_ID
        self.faults = engine.FAULTS
        self.deliveries = events.DELIVERIES
        self.stack: DeployedStack | None = None
        self.mappings: esm.EventSourceMappings | None = None
        self.schedules: scheduler.Schedules | None = None
        self._mock: Any = None
        self._saved_env: dict[str, str | None] = {}
        self._servers: list[Any] = []

    # --- lifecycle --------------------------------------------------------------------
    def start(self) -> LocalCloud:
        if not _ACTIVE.acquire(blocking=False):
            raise RuntimeError("another LocalCloud is running in this process (moto is global)")
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        from ingest_pipeline.dal.aws import client as aws_client
        from ingest_pipeline.dal.s3 import s3_client

        self._saved_env = {name: os.environ.get(name) for name in LOCAL_ENV}
        os.environ.update(LOCAL_ENV)
        # moto logs an ERROR with the component's repr for every Fail state and caught error:
        # workflow outcomes, which the execution's status and history already report.
        logging.getLogger(_MOTO_EVAL_LOGGER).setLevel(logging.CRITICAL)
        engine.install()
        engine.SLEEP_SCALE = self.time_scale
        if self.event_delivery:
            events.install()
        esm.install()
        sqs.install()
        ddb.install()
        fidelity.install()
        wire.install()
        self._mock = mock_aws(config=MOTO_CONFIG)
        self._mock.start()
        _default_session(self.region)
        s3_client.cache_clear()  # clients bound to this mock
        aws_client.cache_clear()
        put_public_parameter(POWERTOOLS_LAYER_PARAMETER, POWERTOOLS_LAYER, region=self.region)
        self.stack = deploy(
            self.template,
            stack_name=self.stack_name,
            region=self.region,
            parameters=self.parameters,
        )
        self.mappings = esm.EventSourceMappings(self.account_id, self.region)
        self.schedules = scheduler.Schedules(self.account_id, self.region)
        if self.event_delivery:
            self.mappings.start()

    def stop(self) -> None:
        from ingest_pipeline.dal.aws import client as aws_client
        from ingest_pipeline.dal.s3 import s3_client

        for server in self._servers:
            server.shutdown()
        self._servers.clear()
        if self.mappings is not None:
            self.mappings.stop()
        if self.event_delivery:
            events.uninstall()
        if self.stack is not None:
            self.stack.restore_environment()
        if self._mock is not None:
            self._mock.stop()
            self._mock = None
        esm.uninstall()
        sqs.uninstall()
        ddb.uninstall()
        wire.uninstall()
        fidelity.uninstall()
        engine.uninstall()
        engine.reset()
        engine.SLEEP_SCALE = 0.0
        events.DELIVERIES.clear()
        s3_client.cache_clear()
        aws_client.cache_clear()
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_env = {}
        logging.getLogger(_MOTO_EVAL_LOGGER).setLevel(logging.NOTSET)
        if _ACTIVE.locked():
            _ACTIVE.release()

    def __enter__(self) -> LocalCloud:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- what was deployed ------------------------------------------------------------
    @property
    def outputs(self) -> dict[str, str]:
        assert self.stack is not None, "start() first"
        return dict(self.stack.outputs)

    @property
    def functions(self) -> dict[str, str]:
        assert self.stack is not None, "start() first"
        return dict(self.stack.functions)

    def describe(self) -> dict[str, Any]:
        """Stack outputs plus what a client needs to reach them (for --outputs FILE)."""
        assert self.stack is not None, "start() first"
        return {
            "stack": self.stack.stack_name,
            "region": self.region,
            "account": self.account_id,
            "outputs": self.outputs,
            "functions": self.functions,
            "endpoint": self._servers[0].url if self._servers else None,
        }

    # --- faults -----------------------------------------------------------------------
    def load_faults(self, spec: dict[str, Any] | str | Path) -> None:
        """Add faults from a dict or a JSON faults file (function names may be logical ids)."""
        if not isinstance(spec, dict):
            spec = json.loads(Path(spec).read_text())
        self.faults.load(spec, functions=self.functions if self.stack else {})

    def fail_next(self, function: str, error: BaseException, *, times: int = 1) -> None:
        """Make the next ``times`` invocations of ``function`` (logical id or name) raise."""
        name = self.functions.get(function, function)
        self.faults.fail(name, error, times=times, start=engine.invocation_count(name) + 1)

    # --- events -----------------------------------------------------------------------
    def redeliver(self, event: dict[str, Any], bus: str = "default") -> None:
        """Deliver ``event`` again to the matching rules of ``bus`` (an at-least-once
        duplicate, as S3 and EventBridge may produce)."""
        from moto.events.models import events_backends

        backend = events_backends[self.account_id][self.region]
        for rule in list(backend.event_buses[bus].rules.values()):
            events.deliver_event(rule, event)

    # --- waiting ----------------------------------------------------------------------
    def settle(self, timeout: float = 30.0) -> None:
        """Wait until deliveries, executions and event source mappings are all idle."""
        if self.event_delivery:
            self.deliveries.drain(timeout)
        running = engine.wait_until(lambda: not engine.running_executions(), timeout)
        if running is False:
            raise TimeoutError(f"executions still running after {timeout}s")
        if self.mappings is not None and self.event_delivery:
            self.mappings.drain(timeout)

    # --- HTTP -------------------------------------------------------------------------
    def serve(self, host: str = "127.0.0.1", port: int = 4566) -> Any:
        """Serve this cloud on http://host:port (moto's server app + /_localcloud/ admin)."""
        from ingest_tools.localcloud.server import LocalCloudServer

        server = LocalCloudServer(self, host, port)
        server.start()
        self._servers.append(server)
        return server


@contextmanager
def local_cloud(template: Path = TEMPLATE, **kwargs: Any) -> Iterator[LocalCloud]:
    """``with local_cloud() as cloud:`` - a started LocalCloud, stopped on exit."""
    cloud = LocalCloud(template, **kwargs)
    with cloud:
        yield cloud
