"""The local cloud: the real template.yaml deployed into an embedded moto, whole event graph live.

Two ways in:

* in-process (tests, demo, bench)::

      with LocalCloud() as cloud:          # deploys template.yaml
          cloud.faults.fail_operation("dynamodb", "UpdateItem", "ThrottlingException")
          boto3.client("s3").put_object(Bucket=cloud.outputs["BucketName"], ...)
          cloud.deliveries.drain()

* served over HTTP for the AWS CLI / boto3 (``localcloud up``)::

      cloud = LocalCloud().start()
      server = cloud.serve(port=4566)  # http://127.0.0.1:4566, + /_localcloud/ admin API

What runs: the patches of registry.py (patching.py: their kinds), each built for this cloud's
``Runtime`` (no module globals); scheduler.py fires Scheduler schedules and scheduled rules on
demand (``cloud.schedules.fire`` / ``fire_rule``); stack/ deploys the template (SAM transform
-> moto, refusing what it cannot run).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shlex
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import boto3.session
import botocore.handlers
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID

from localcloud import STACK_NAME, TEMPLATE, registry
from localcloud.console.extensions import ConsoleExtensions
from localcloud.environments import RuntimeMissing, default_runtime_python
from localcloud.faults import Faults
from localcloud.features import delivery, executions, lambda_async
from localcloud.features.event_source_mappings import EventSourceMappings
from localcloud.features.lambda_processes import processes_of
from localcloud.features.scheduler import Schedules
from localcloud.iam.enforcement import iam_enabled
from localcloud.runtime import Clock, DeliveryLog, Runtime
from localcloud.stack import DeployedStack, deploy, put_public_parameter
from localcloud.stack.api import StackOperations, prepare_local
from localcloud.stack.template import load_template

__all__ = [
    "LOCAL_ENV",
    "MOTO_CONFIG",
    "PARAMETER_OVERRIDES_VARIABLE",
    "REGION",
    "TEMPLATE",
    "LocalCloud",
    "parameter_overrides",
]

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
    "POWERTOOLS_TRACE_DISABLED": "1",  # no X-Ray daemon here
}
# The public Powertools layer the template resolves through SSM (seeded into moto).
POWERTOOLS_LAYER_PARAMETER = "/aws/service/powertools/python/arm64/python3.13/3.37.0"
POWERTOOLS_LAYER = (
    "arn:aws:lambda:us-east-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python313-arm64:1"
)
_MOTO_EVAL_LOGGER = "moto.stepfunctions.parser.asl.component.eval_component"
PARAMETER_OVERRIDES_VARIABLE = "LOCALCLOUD_PARAMETER_OVERRIDES"
_ACTIVE = threading.Lock()  # moto's backends are process-global: one cloud at a time
_SESSIONS: dict[tuple[Any, ...], boto3.session.Session] = {}


def _default_session(region: str) -> None:
    """moto clears boto3's default session for each mock. The one set here is made once per
    process for each region and list of botocore's builtin handlers (which a session copies
    when it is made: moto's stubber; the local cloud's IAM hooks, the same functions for every
    cloud): its service models are parsed, and its ~1,300 handlers registered, once instead of
    per LocalCloud (~13 ms of CPU, and ~50 ms per service model), and clients made from it
    answer any cloud of the process alike. It keeps nothing of a cloud: the credentials are
    the cloud's fixed environment's."""
    key = (region, *(entry[1] for entry in botocore.handlers.BUILTIN_HANDLERS))
    if key not in _SESSIONS:
        _SESSIONS[key] = boto3.session.Session(region_name=region)
    boto3.DEFAULT_SESSION = _SESSIONS[key]


def parameter_overrides(text: str) -> dict[str, str]:
    """``sam deploy --parameter-overrides`` syntax: ``Key=Value Key2='a b'`` (shell quoting),
    or ``ParameterKey=Key,ParameterValue=Value`` items."""
    overrides: dict[str, str] = {}
    for item in shlex.split(text):
        if item.startswith("ParameterKey="):
            fields = dict(part.split("=", 1) for part in item.split(",", 1) if "=" in part)
            if "ParameterKey" not in fields or "ParameterValue" not in fields:
                raise ValueError(f"{PARAMETER_OVERRIDES_VARIABLE}: cannot read {item!r}")
            overrides[fields["ParameterKey"]] = fields["ParameterValue"]
            continue
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{PARAMETER_OVERRIDES_VARIABLE}: {item!r} is not Key=Value")
        overrides[key] = value
    return overrides


def _environment_parameters(template: Path) -> dict[str, str]:
    text = os.environ.get(PARAMETER_OVERRIDES_VARIABLE, "").strip()
    if not text:
        return {}
    overrides = parameter_overrides(text)
    try:
        declared = (load_template(template).get("Parameters") or {}).keys()
    except FileNotFoundError:
        return {}  # the deploy reports the missing template
    return {key: value for key, value in overrides.items() if key in declared}


class LocalCloud:
    """Deploys ``template`` into an embedded moto with every hook.

    ``event_delivery=False`` leaves EventBridge targets undelivered (moto's behaviour), for
    tests that start executions themselves. ``time_scale`` is the clock's (features/clock.py;
    ``cloud.time_scale`` changes it while running). ``speedups`` None follows
    ``LOCALCLOUD_SPEEDUPS``; ``without`` leaves out patches by name (None: ``LOCALCLOUD_WITHOUT``),
    to see a patch's test fail without it. ``mock_config`` is a parsed Step Functions Local
    MockConfigFile for "<arn>#<TestCase>" executions. ``console``: the application's console
    hooks (console/extensions.py).

    ``iam`` (None: ``LOCALCLOUD_IAM``, on unless "off") authorizes every call a function,
    state machine, rule, schedule or mapping makes against the template's policies, as AWS
    does (iam/enforcement.py); tests and the operator run as an administrator.

    ``parameters`` override the template's parameters, as ``sam deploy
    --parameter-overrides`` does. Under them, ``LOCALCLOUD_PARAMETER_OVERRIDES`` (same syntax)
    overrides those of every LocalCloud the process starts (e.g. a whole pytest run with
    ``"WorkflowType=EXPRESS"``): only the keys the template declares (a standalone test
    template deploys unchanged). ``cloud.parameters`` holds what is deployed.

    ``environment`` overrides the functions' environment variables as ``sam local invoke
    --env-vars`` does (``{"Parameters": {...}, "<LogicalId>": {...}}``).
    """

    def __init__(
        self,
        template: Path = TEMPLATE,
        *,
        region: str = REGION,
        stack_name: str = STACK_NAME,
        parameters: dict[str, str] | None = None,
        event_delivery: bool = True,
        time_scale: float = 0.0,
        speedups: bool | None = None,
        without: frozenset[str] | None = None,
        mock_config: dict[str, Any] | None = None,
        iam: bool | None = None,
        console: ConsoleExtensions | None = None,
        environment: dict[str, Any] | None = None,
    ) -> None:
        self.template = Path(template)
        self.region = region
        self.stack_name = stack_name
        self.parameters = {**_environment_parameters(self.template), **(parameters or {})}
        self.event_delivery = event_delivery
        self.environment = environment
        self.account_id = DEFAULT_ACCOUNT_ID
        self.iam = iam_enabled() if iam is None else iam
        self.runtime = Runtime(
            time_scale=time_scale, mock_config=mock_config, account=self.account_id
        )
        self.runtime.authorizer.enabled = self.iam
        enabled = {"event_delivery"} if event_delivery else set()
        enabled |= {"iam"} if self.iam else set()
        self.patches = registry.patch_set(
            speedups=speedups, enabled=frozenset(enabled), without=without
        )
        self.stack: DeployedStack | None = None
        self.mappings: EventSourceMappings | None = None
        self.schedules: Schedules | None = None
        self._mock: Any = None
        self._saved_env: dict[str, str | None] = {}
        self._servers: list[Any] = []
        self.console = console or ConsoleExtensions()

    # --- lifecycle --------------------------------------------------------------------
    def start(self) -> LocalCloud:
        if not default_runtime_python().exists():
            raise RuntimeMissing(default_runtime_python())
        if not _ACTIVE.acquire(blocking=False):
            raise RuntimeError("another LocalCloud is running in this process (moto is global)")
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self._saved_env = {name: os.environ.get(name) for name in LOCAL_ENV}
        os.environ.update(LOCAL_ENV)
        # moto logs an ERROR with the component's repr for every Fail state and caught error:
        # workflow outcomes, which the execution's status and history already report.
        logging.getLogger(_MOTO_EVAL_LOGGER).setLevel(logging.CRITICAL)
        self.patches.install(self.runtime)
        self._mock = mock_aws(config=MOTO_CONFIG)
        self._mock.start()
        _default_session(self.region)
        put_public_parameter(POWERTOOLS_LAYER_PARAMETER, POWERTOOLS_LAYER, region=self.region)
        # the functions' environments call the cloud over HTTP (a custom resource's, meanwhile)
        processes_of(self.runtime).endpoint = self.serve(port=0, log_requests=False).url
        self.stack = deploy(
            self.template,
            stack_name=self.stack_name,
            region=self.region,
            parameters=self.parameters,
            runtime=self.runtime,
            snapshots=True,
            environment=self.environment,
        )
        self.runtime.stacks = StackOperations()
        self.runtime.stack_listeners.append(self._stack_updated)
        self.mappings = EventSourceMappings(self.account_id, self.region, self.clock)
        self.schedules = Schedules(self.account_id, self.region, self.clock, self.runtime)
        if self.event_delivery:
            self.mappings.start()

    def update(self, parameters: dict[str, str] | None = None, template: Path | None = None) -> str:
        """UpdateStack of this cloud's stack with ``template`` (default: the one deployed,
        read again) and ``parameters`` (merged over those deployed), as ``sam deploy`` of the
        working tree would make it; returns the stack's status (``UPDATE_COMPLETE``, or
        ``UPDATE_ROLLBACK_COMPLETE`` with the reason in its events)."""
        assert self.stack is not None, "the cloud is not started"
        self.template = Path(template or self.template)
        self.parameters = {**self.parameters, **(parameters or {})}
        body = prepare_local(self.template, self.stack_name, self.region, self.parameters)
        cfn = boto3.client("cloudformation", region_name=self.region)
        cfn.update_stack(
            StackName=self.stack_name,
            TemplateBody=body,
            Parameters=[
                {"ParameterKey": k, "ParameterValue": v} for k, v in self.parameters.items()
            ],
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
        )
        return str(cfn.describe_stacks(StackName=self.stack_name)["Stacks"][0]["StackStatus"])

    def _stack_updated(self, name: str) -> None:
        """After an UpdateStack of this cloud's stack: its outputs and resources now."""
        if self.stack is None or name != self.stack.stack_name:
            return
        cfn = boto3.client("cloudformation", region_name=self.region)
        described = cfn.describe_stacks(StackName=name)["Stacks"][0]
        rows = cfn.describe_stack_resources(StackName=name)["StackResources"]
        rows = [r for r in rows if r.get("LogicalResourceId")]
        physical = {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in rows}
        types = {r["LogicalResourceId"]: r["ResourceType"] for r in rows}
        self.stack = dataclasses.replace(
            self.stack,
            outputs={o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])},
            resources=physical,
            types=types,
            functions={k: v for k, v in physical.items() if types[k] == "AWS::Lambda::Function"},
        )

    def stop(self) -> None:
        if self.stack is not None:
            self.stack.stop()  # its custom resources' Delete, while their functions can run
        if self.runtime.processes is not None:
            self.runtime.processes.close()  # every environment process stopped
        for server in self._servers:
            server.shutdown()
        self._servers.clear()
        if self.mappings is not None:
            self.mappings.stop()
        self.runtime.deliveries.shutdown()
        self._end_executions()
        if self.stack is not None:
            self._write_iam_log()
        # no asynchronous invocation outlives the mock (it would call the real endpoints)
        lambda_async.async_invocations(self.runtime).shutdown()
        self.runtime.s3_replications.shutdown()
        if self._mock is not None:
            self._mock.stop()
            self._mock = None
        self.patches.uninstall()
        self.runtime.close()
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_env = {}
        logging.getLogger(_MOTO_EVAL_LOGGER).setLevel(logging.NOTSET)
        if _ACTIVE.locked():
            _ACTIVE.release()

    def _end_executions(self, grace: float = 2.0) -> None:
        """No execution outlives its cloud: those still running after ``grace`` seconds are
        aborted, so none calls into the next cloud of the process (whose stable resource
        names may be the same) with this one's role."""
        if self._mock is None:
            return
        if not self.runtime.wait_until(lambda: not executions.running_executions(), grace):
            for running in executions.running_executions():
                executions.abort(running.exec_arn, error="LocalCloud.Stopped")
            self.runtime.wait_until(lambda: not executions.running_executions(), grace)

    def _write_iam_log(self) -> None:
        """With ``LOCALCLOUD_IAM_LOG=DIR``: what each statement allowed, for the report."""
        from localcloud.iam import report

        if self.iam and self.stack is not None and os.environ.get(report.LOG_VARIABLE):
            report.write(self.runtime.authorizer, self.stack.resources, self.region, self.template)

    def __enter__(self) -> LocalCloud:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- what runs -----------------------------------------------------------------------
    @property
    def faults(self) -> Faults:
        return self.runtime.faults

    @property
    def deliveries(self) -> DeliveryLog:
        return self.runtime.deliveries

    @property
    def clock(self) -> Clock:
        return self.runtime.clock

    @property
    def time_scale(self) -> float:
        return self.runtime.clock.scale

    @time_scale.setter
    def time_scale(self, scale: float) -> None:
        self.runtime.clock.scale = scale

    def invocation_count(self, function: str) -> int:
        """How many times ``function`` (physical name) has been invoked."""
        return self.runtime.invocation_count(function)

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
            # the last served: serve(port) of the user, after the environments' own (process)
            "endpoint": self._servers[-1].url if self._servers else None,
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
        self.faults.fail(name, error, times=times, start=self.invocation_count(name) + 1)

    # --- events -----------------------------------------------------------------------
    def redeliver(self, event: dict[str, Any], bus: str = "default") -> None:
        """Deliver ``event`` again to the matching rules of ``bus`` (an at-least-once
        duplicate, as S3 and EventBridge may produce)."""
        from moto.events.models import events_backends

        backend = events_backends[self.account_id][self.region]
        for rule in list(backend.event_buses[bus].rules.values()):
            delivery.deliver_event(self.runtime, rule, event)

    def emit(
        self,
        source: str,
        detail_type: str,
        detail: dict[str, Any],
        resources: list[str] | tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """Put on the default bus the event an AWS service would send (``source`` ``aws.*``,
        which PutEvents refuses to anyone else), in EventBridge's envelope, and deliver it to
        the matching rules; returns the event. For the rules that match events of services
        the local cloud does not run: an EC2 instance's state change, an Inspector finding,
        a CloudTrail "AWS API Call via CloudTrail"."""
        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": detail_type,
            "source": source,
            "account": self.account_id,
            "time": datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": self.region,
            "resources": list(resources),
            "detail": detail,
        }
        self.redeliver(event)
        return event

    # --- waiting ----------------------------------------------------------------------
    def settle(self, timeout: float = 30.0) -> None:
        """Wait until deliveries, asynchronous invocations, executions and event source
        mappings are all idle."""
        if self.event_delivery:
            self.deliveries.drain(timeout)
        lambda_async.async_invocations(self.runtime).drain(timeout)
        self.runtime.s3_replications.drain(timeout)
        if not self.runtime.wait_until(lambda: not executions.running_executions(), timeout):
            raise TimeoutError(f"executions still running after {timeout}s")
        if self.mappings is not None and self.event_delivery:
            self.mappings.drain(timeout)

    # --- HTTP -------------------------------------------------------------------------
    def serve(self, host: str = "127.0.0.1", port: int = 4566, *, log_requests: bool = True) -> Any:
        """Serve this cloud on http://host:port (moto's server app + /_localcloud/ admin),
        each request logged (werkzeug's access lines) unless ``log_requests`` is False."""
        from localcloud.server import LocalCloudServer

        server = LocalCloudServer(self, host, port, log_requests=log_requests)
        server.start()
        self._servers.append(server)
        return server
