"""Fix: ``Ref`` to a layer version of the template is its ARN, as in CloudFormation.

A template's ``AWS::Lambda::LayerVersion`` (what SAM makes of an
``AWS::Serverless::LayerVersion``) referenced by a function's ``Layers`` (``!Ref``) resolves,
in CloudFormation, to the layer version's ARN (the resource's physical id). moto's
``LayerVersion`` model has no ``physical_resource_id``, so moto's ``Ref`` returned the model
object itself (a function's ``Layers`` then failed on it) and DescribeStackResources listed
the resource with no PhysicalResourceId. The property is added: the layer version's ARN.

Regression test: tests/statemachine/test_stack_deploy.py::test_functions_configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from moto.awslambda.models import LayerVersion

from localcloud.patching import Kind, Patch, Targets

if TYPE_CHECKING:
    from localcloud.runtime import Runtime

__all__ = ["PATCHES"]


def _physical_resource_id(self: LayerVersion) -> str:
    return self.arn


def _build(rt: Runtime) -> Targets:
    return {(LayerVersion, "physical_resource_id"): property(_physical_resource_id)}


PATCHES = [
    Patch(
        name="cloudformation-layer-version-ref",
        kind=Kind.FIX,
        reason="Ref to an AWS::Lambda::LayerVersion of the template is the layer version's "
        "ARN, as in CloudFormation (moto: the model object, which a function's Layers cannot "
        "take, and no PhysicalResourceId in DescribeStackResources).",
        test="tests/statemachine/test_stack_deploy.py::test_functions_configuration",
        build=_build,
        upstream="not reported yet (moto 5.2.5's LayerVersion has no physical_resource_id)",
        adds=("physical_resource_id",),
    )
]
