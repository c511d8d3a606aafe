"""Lambda's asynchronous-invocation configuration, checked as AWS checks it.

* ``DeadLetterConfig`` (CreateFunction, UpdateFunctionConfiguration, and the template's
  ``AWS::Lambda::Function`` through stack/properties.py): moto 5.2.5 ignores it (and
  GetFunctionConfiguration never returns it). Lambda accepts an SQS queue or SNS topic the
  execution role may write, else InvalidParameterValueException "The provided execution role
  does not have permissions to call SendMessage on SQS" (or Publish on SNS) - the error
  CloudFormation reports for such a function.
* Put/Update/Get/DeleteFunctionEventInvokeConfig (and ``AWS::Lambda::EventInvokeConfig``,
  stack/shims.py): moto's Put appends a configuration (Get keeps answering the first one) and
  its Update does not merge. Here Put replaces, Update merges; MaximumRetryAttempts 0-2 and
  MaximumEventAgeInSeconds 60-21,600 are checked (botocore checks the minimums, the
  template's shim does not go through it), and each destination must be one the execution
  role may send to (sqs:SendMessage, sns:Publish, lambda:InvokeFunction, events:PutEvents).
  S3 bucket destinations are refused: not emulated. One configuration per function (the
  Qualifier is not kept apart).

The asynchronous invocations that honour it: features/lambda_async.py.
"""

from __future__ import annotations

import json
from typing import Any

from moto.awslambda.exceptions import (
    InvalidParameterValueException,
    LambdaClientError,
    ValidationException,
)
from moto.awslambda.models import EventInvokeConfig, LambdaBackend, LambdaFunction
from moto.awslambda.utils import get_backend

from localcloud.iam import enforcement as iam
from localcloud.iam.actions import Need
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "arn_parts", "async_settings", "json_payload", "set_dead_letter_config"]

DEFAULT_RETRIES = 2
DEFAULT_MAX_AGE = 21600
# destination service -> (IAM action, operation, service as Lambda's message names it)
_SENDS = {
    "sqs": ("sqs:SendMessage", "SendMessage", "SQS"),
    "sns": ("sns:Publish", "Publish", "SNS"),
    "lambda": ("lambda:InvokeFunction", "InvokeFunction", "Lambda"),
    "events": ("events:PutEvents", "PutEvents", "EventBridge"),
}


def arn_parts(arn: str) -> tuple[str, str, str, str]:
    parts = arn.split(":", 5)
    if len(parts) < 6:
        raise InvalidParameterValueException(f"{arn} is not a valid ARN")
    return parts[2], parts[3], parts[4], parts[5]


def json_payload(body: Any) -> str:
    """An Invoke's payload (none: the event is ``{}``), refused if it is not JSON."""
    payload = (body.decode() if isinstance(body, bytes) else str(body or "")) or "{}"
    try:
        json.loads(payload)
    except ValueError as exc:
        raise LambdaClientError(
            "InvalidRequestContentException", f"Could not parse request body into json: {exc}"
        ) from exc
    return payload


def _may_send(fn: LambdaFunction, target: str) -> tuple[bool, str, str]:
    """Whether the execution role of ``fn`` may send to ``target``: (allowed, op, service)."""
    service, region, _, _ = arn_parts(target)
    if service not in _SENDS:
        raise InvalidParameterValueException(f"The destination ARN {target} is not supported")
    action, operation, name = _SENDS[service]
    runtime = getattr(get_backend(fn.account_id, fn.region), "runtime", None)
    if runtime is None or not runtime.authorizer.enabled:
        return True, operation, name
    need = Need(action, target)
    caller = iam.role(fn.role, fn.function_name)
    allowed = runtime.authorizer.check(caller, need, region, True).allowed
    return allowed, operation, name


def set_dead_letter_config(fn: LambdaFunction, config: dict[str, Any] | None) -> None:
    """CreateFunction / UpdateFunctionConfiguration's DeadLetterConfig, checked."""
    target = str((config or {}).get("TargetArn") or "")
    if target:
        service = arn_parts(target)[0]
        if service not in ("sqs", "sns"):
            raise InvalidParameterValueException(
                "The DeadLetterConfig target must be an Amazon SQS queue or an Amazon SNS topic"
            )
        allowed, operation, name = _may_send(fn, target)
        if not allowed:
            raise InvalidParameterValueException(
                f"The provided execution role does not have permissions to call {operation} "
                f"on {name}"
            )
    fn.dead_letter_config = {"TargetArn": target} if target else None  # type: ignore[attr-defined]


def _check_event_invoke_config(fn: LambdaFunction, config: dict[str, Any]) -> dict[str, Any]:
    """PutFunctionEventInvokeConfig's checks (see the module docstring)."""
    out: dict[str, Any] = {}
    for key, low, high in (("MaximumRetryAttempts", 0, 2), ("MaximumEventAgeInSeconds", 60, 21600)):
        if config.get(key) is not None:
            value = out[key] = int(config[key])
            if not low <= value <= high:
                member = key[0].lower() + key[1:]  # maximumRetryAttempts
                raise ValidationException(
                    str(value), member, f"Member must have value between {low} and {high}"
                )
    destinations: dict[str, Any] = {}
    given = config.get("DestinationConfig") or {}
    for kind in ("OnSuccess", "OnFailure"):
        target = str((given.get(kind) or {}).get("Destination") or "")
        destinations[kind] = {"Destination": target} if target else {}
        if not target:
            continue
        if arn_parts(target)[0] == "s3":
            raise InvalidParameterValueException(
                f"{kind}: S3 bucket destinations are not emulated by the local cloud"
            )
        allowed, operation, _ = _may_send(fn, target)
        if not allowed:
            raise InvalidParameterValueException(
                f"The function execution role does not have permissions to call {operation} "
                f"on {target}"
            )
    out["DestinationConfig"] = destinations
    return out


def _put_config(self: LambdaBackend, function_name: str, config: dict[str, Any]) -> dict[str, Any]:
    fn = self.get_function(function_name)
    checked = _check_event_invoke_config(fn, config)
    event_config = EventInvokeConfig(fn.function_arn, fn.last_modified, checked)
    fn.event_invoke_config = [event_config]  # Put replaces the configuration
    return event_config.response()


def _update_config(
    self: LambdaBackend, function_name: str, config: dict[str, Any]
) -> dict[str, Any]:
    fn = self.get_function(function_name)
    merged = dict(fn.event_invoke_config[0].config) if fn.event_invoke_config else {}
    old = merged.get("DestinationConfig") or {}
    merged.update(config)
    if "DestinationConfig" in config:
        merged["DestinationConfig"] = {**old, **(config["DestinationConfig"] or {})}
    return _put_config(self, function_name, merged)


def async_settings(fn: LambdaFunction) -> tuple[int, int, str, str, str]:
    """(max retries, max age, OnSuccess ARN, OnFailure ARN, dead-letter ARN) of ``fn``."""
    config = fn.event_invoke_config[0].config if fn.event_invoke_config else {}
    dest = config.get("DestinationConfig") or {}
    return (
        int(config.get("MaximumRetryAttempts", DEFAULT_RETRIES)),
        int(config.get("MaximumEventAgeInSeconds", DEFAULT_MAX_AGE)),
        str((dest.get("OnSuccess") or {}).get("Destination") or ""),
        str((dest.get("OnFailure") or {}).get("Destination") or ""),
        str((getattr(fn, "dead_letter_config", None) or {}).get("TargetArn") or ""),
    )


# ------------------------------------------------------------------ function configuration
_orig_get_configuration = LambdaFunction.get_configuration
_orig_update_configuration = LambdaFunction.update_configuration
_orig_create_function = LambdaBackend.create_function


def _get_configuration(self: LambdaFunction, on_create: bool = False) -> dict[str, Any]:
    config = _orig_get_configuration(self, on_create)
    dead_letter = getattr(self, "dead_letter_config", None)
    if dead_letter:
        config["DeadLetterConfig"] = dict(dead_letter)
    return config


def _update_configuration(self: LambdaFunction, config: dict[str, Any]) -> Any:
    if "DeadLetterConfig" in config:
        set_dead_letter_config(self, config["DeadLetterConfig"])
    return _orig_update_configuration(self, config)


def _create_function(self: LambdaBackend, spec: dict[str, Any]) -> LambdaFunction:
    fn = _orig_create_function(self, spec)
    if spec.get("DeadLetterConfig"):
        try:
            set_dead_letter_config(fn, spec["DeadLetterConfig"])
        except Exception:
            self.delete_function(fn.function_name)
            raise
    return fn


def _build(rt: Runtime) -> Targets:
    return {
        (LambdaBackend, "put_function_event_invoke_config"): _put_config,
        (LambdaBackend, "update_function_event_invoke_config"): _update_config,
        (LambdaBackend, "create_function"): _create_function,
        (LambdaFunction, "get_configuration"): _get_configuration,
        (LambdaFunction, "update_configuration"): _update_configuration,
    }


PATCHES = [
    Patch(
        name="lambda-event-invoke-config",
        kind=Kind.FEATURE,
        reason="DeadLetterConfig is kept and returned, Put/UpdateFunctionEventInvokeConfig "
        "replace/merge, and both check that the execution role may send to the target, as "
        "Lambda does (moto: no DeadLetterConfig, Put appends, Update does not merge).",
        test="localcloud/tests/test_lambda_async.py"
        "::test_a_role_without_send_message_cannot_configure_the_queue",
        build=_build,
    ),
]
