"""Deploy the real SAM template into moto through CloudFormation, the way ``sam deploy`` would.

``deploy(template)`` runs inside ``moto.mock_aws(config=...)`` with the local cloud's patches
installed (fixes/sfn_cloudformation_state_machine.py puts CloudFormation state machines into
the executing Step Functions backend and applies DefinitionSubstitutions). It:

1. loads the template with CloudFormation short tags and makes it deployable without
   ``sam build``/``sam package`` (template.py): a local ``CodeUri`` (Globals and functions) or
   layer ``ContentUri`` becomes a placeholder zip in moto S3 naming the directory the
   function's environments run (code.py), a state machine ``DefinitionUri`` an inline
   ``Definition``;
2. runs the SAM transform offline (samtranslator, bundled managed-policy map, no AWS call);
3. refuses, before creating anything, what moto would silently get wrong: a resource type
   neither moto's CloudFormation nor a shim (shims.py) creates (moto logs a warning, skips it
   and reports CREATE_COMPLETE); for the audited types (support.py), a property nobody
   applies; an ``AWS::SSM::Parameter::Value<...>`` parameter missing in moto (ssm.py);
4. runs ``create_stack`` (a failing resource is reported by logical id, type and reason),
   applies what moto's models ignore (properties.py), and checks CREATE_COMPLETE and that
   every state machine is visible to ``DescribeStateMachine`` with no ``${...}`` left.

An invocation runs the function's code in its environment processes
(features/lambda_processes.py), with its own variables: nothing of it enters this process.
Not audited property by property (moto passes their properties through, or IAM is not
enforced): SQS queues, SNS topics, IAM roles.
"""

from __future__ import annotations

from localcloud.stack.base import (
    DeployedStack,
    StackDeployError,
    UnsupportedPropertyError,
    UnsupportedResourceError,
)
from localcloud.stack.deploy import deploy, deploy_patch_set
from localcloud.stack.ssm import put_public_parameter
from localcloud.stack.template import load_template, localize, sam_transform

__all__ = [
    "DeployedStack",
    "StackDeployError",
    "UnsupportedPropertyError",
    "UnsupportedResourceError",
    "deploy",
    "deploy_patch_set",
    "load_template",
    "localize",
    "put_public_parameter",
    "sam_transform",
]
