"""Fix: a stack's SSM parameter keeps its name; the value it resolved to is ``ResolvedValue``.

A parameter of type ``AWS::SSM::Parameter::Value<...>`` names an SSM parameter. CloudFormation
keeps that name as the stack's parameter value (DescribeStacks; ``Stack.stack_parameters``, what
UsePreviousValue and the "no updates" check read), and an update that keeps it
(``UsePreviousValue``, what ``sam deploy`` sends for every parameter it does not override) reads
the named parameter again. moto keeps only the resolved value, so that update looked up an SSM
parameter named after the value (the layer ARN the Powertools parameter holds): "parameter not
found", and every second ``sam deploy`` of a template with one failed.
"""

from __future__ import annotations

from typing import Any

from moto.cloudformation.models import Stack

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_STACK_PARAMETERS = Stack.stack_parameters
_PARAMETER_LIST = Stack.parameter_list


def _names(stack: Stack) -> dict[str, str]:
    """The SSM-typed parameters' names: as given, else the template's default."""
    slots = (stack.template_dict or {}).get("Parameters") or {}
    return {
        key: str((stack.parameters or {}).get(key, slot.get("Default", "")))
        for key, slot in slots.items()
        if str(slot.get("Type", "")).startswith("AWS::SSM::Parameter::Value")
    }


def _stack_parameters(self: Stack) -> dict[str, Any]:
    return {**_STACK_PARAMETERS.fget(self), **_names(self)}  # type: ignore[attr-defined]


def _parameter_list(self: Stack) -> list[dict[str, Any]]:
    names = _names(self)
    listed: list[dict[str, Any]] = _PARAMETER_LIST.fget(self)  # type: ignore[attr-defined]
    for parameter in listed:
        name = names.get(parameter["ParameterKey"])
        if name is not None:
            parameter["ResolvedValue"] = parameter["ParameterValue"]
            parameter["ParameterValue"] = name
    return listed


def _build(rt: Runtime) -> Targets:
    return {
        (Stack, "stack_parameters"): property(_stack_parameters),
        (Stack, "parameter_list"): property(_parameter_list),
    }


PATCHES = [
    Patch(
        name="cloudformation-ssm-parameter-values",
        kind=Kind.FIX,
        reason="A stack's SSM-typed parameter keeps its name (ResolvedValue: the value read), so "
        "UsePreviousValue reads it again (moto: every second sam deploy of such a template "
        "failed).",
        test="localcloud/tests/test_stack_updates.py::"
        "test_an_ssm_parameter_kept_by_an_update_is_read_again",
        build=_build,
        upstream="not reported yet (moto 5.2.5 keeps only resolved_parameters)",
    )
]
