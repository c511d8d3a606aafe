"""The local cloud's IAM (iam/: enforcement.py says who calls and how a call is judged) in the
path of every call; installed when the cloud's IAM is on (``LOCALCLOUD_IAM``,
``LocalCloud(iam=...)``). Each patch's ``reason`` says what it does.
"""

from __future__ import annotations

import sys
import threading
from contextvars import ContextVar, copy_context
from typing import Any

from botocore import handlers as botocore_handlers

from localcloud.iam.enforcement import CALLER, acting_as, role
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "StoppedCloudError"]

#: the authorizer of the cloud whose execution this thread runs (set by execution_logic)
_OWNER: ContextVar[object | None] = ContextVar("localcloud_execution_owner", default=None)


class StoppedCloudError(RuntimeError):
    """An SDK call from an execution of a local cloud that has been stopped: a worker thread
    that outlives its cloud (stopped while a task was under way) gets this error from the
    next cloud of the process instead of acting in it."""


#: the running cloud's authorizer, while its "authorize-sdk-calls" patch is installed
_AUTHORIZER: Any = None


def _stash_parameters(params: Any, context: Any, **_: Any) -> None:
    context["localcloud_api_params"] = params


def _access_key(request_signer: Any) -> str | None:
    """The access key id a client signs with (None: unsigned, or no credentials)."""
    return getattr(getattr(request_signer, "_credentials", None), "access_key", None)


def _before_call(model: Any, params: Any, context: Any, **kwargs: Any) -> Any:
    authorizer, owner = _AUTHORIZER, _OWNER.get()
    if owner is not None and owner is not authorizer:
        raise StoppedCloudError(
            f"{model.name}: this execution's local cloud was stopped; it cannot call the next"
        )
    if authorizer is None or not authorizer.enabled:
        return None
    # a role session's credentials (STS's, a function environment's) name the caller, as on
    # AWS; other keys: whoever acts in this thread (a workflow, a rule target: features/ ...)
    signed_as = authorizer.caller_of(_access_key(kwargs.get("request_signer")))
    return authorizer.authorize(
        signed_as or CALLER.get() or authorizer.administrator,
        model.service_model.signing_name,
        model.name,
        context.get("localcloud_api_params") or {},
        region=str(context.get("client_region") or "us-east-1"),
        secure=secure_transport(str(params.get("url", "https://"))),
    )


def secure_transport(url: str) -> bool:
    """aws:SecureTransport of a request to ``url``: https (every SDK client in the process),
    or the local cloud's own endpoint on this machine (served, or named by AWS_ENDPOINT_URL:
    its http:// stands in for AWS's https://, and its clients have no TLS to choose); not a
    plain-http AWS endpoint (``use_ssl=False``). A TLS-only policy then refuses what it
    refuses on AWS, and nothing a client of the local endpoint could have sent over TLS."""
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].rsplit(":", 1)[0].strip("[]")
    return scheme == "https" or host in ("127.0.0.1", "localhost", "::1")


def _build_sdk_authorization(rt: Runtime) -> Targets:
    """botocore's handlers of every session made from now on, plus two of module level
    (appended to the built-in ones, as moto registers its own ``before-send``) that act for
    whichever cloud runs (the same functions for every cloud: a session, and its clients,
    made under one cloud authorize the next one's calls by the next one's rules)."""
    handlers = [
        *botocore_handlers.BUILTIN_HANDLERS,
        ("before-parameter-build", _stash_parameters),
        ("before-call", _before_call),
    ]
    return {
        (botocore_handlers, "BUILTIN_HANDLERS"): handlers,
        (sys.modules[__name__], "_AUTHORIZER"): rt.authorizer,
    }


def _build_thread_inheritance(rt: Runtime) -> Targets:
    start = threading.Thread.start

    def start_with_caller(self: threading.Thread) -> None:
        if CALLER.get() is not None:
            context, run = copy_context(), self.run
            self.run = lambda: context.run(run)  # type: ignore[method-assign]
        start(self)

    return {(threading.Thread, "start"): start_with_caller}


def _build_execution_role(rt: Runtime) -> Targets:
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    logic = ExecutionWorker._execution_logic

    def execution_logic(self: ExecutionWorker) -> None:
        details = self._evaluation_details
        arn = details.aws_execution_details.role_arn
        session = details.execution_details.name
        token = _OWNER.set(rt.authorizer)
        try:
            with acting_as(role(arn, session) if arn else None):
                logic(self)
        finally:
            _OWNER.reset(token)

    return {(ExecutionWorker, "_execution_logic"): execution_logic}


PATCHES = [
    Patch(
        name="authorize-sdk-calls",
        kind=Kind.FEATURE,
        reason="Every SDK call made by a function, a state machine, a rule or schedule target "
        "is authorized against the caller's role, the resource's policy and the KMS key policy, "
        "and refused with the service's AccessDenied error, as on AWS (moto allows everything).",
        test="tests/e2e/test_localcloud_iam.py"
        "::test_a_state_machine_without_its_table_grant_fails_its_claim",
        build=_build_sdk_authorization,
        when="iam",
    ),
    Patch(
        name="threads-inherit-the-caller",
        kind=Kind.FEATURE,
        reason="A thread started while a principal is acting (a handler's thread pool, a Map "
        "iteration) acts as it, as a process's threads share its credentials.",
        test="tests/e2e/test_localcloud_iam.py"
        "::test_the_branches_of_a_parallel_state_act_as_the_state_machines_role",
        build=_build_thread_inheritance,
        when="iam",
    ),
    Patch(
        name="execution-runs-as-its-role",
        kind=Kind.FEATURE,
        reason="A Step Functions execution's service integrations are made with the state "
        "machine's role (moto makes them with no identity).",
        test="tests/e2e/test_localcloud_iam.py::test_a_state_machine_without_its_table_grant_fails_its_claim",
        build=_build_execution_role,
        when="iam",
    ),
]
