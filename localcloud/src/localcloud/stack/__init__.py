"""Deploy the real SAM template into moto through CloudFormation, the way ``sam deploy`` would.

``deploy(template)`` runs inside ``moto.mock_aws(config=...)`` with the local cloud's
patches installed (fixes/sfn_cloudformation_state_machine.py puts CloudFormation state
machines into the executing Step Functions backend and applies DefinitionSubstitutions). It:

1. loads the template with CloudFormation short tags (samtranslator's YAML loader);
2. makes it deployable without ``sam build``/``sam package``: every local ``CodeUri``
   (Globals and functions) and layer ``ContentUri`` becomes the S3 location of a small
   placeholder zip uploaded into moto S3 (naming the directory the function's environments
   run: code.py), and
   every state machine ``DefinitionUri`` becomes an inline ``Definition``;
3. runs the SAM transform offline (samtranslator, bundled managed-policy map, no AWS call);
4. refuses, before creating anything, what moto would silently get wrong:
   * a resource type moto's CloudFormation cannot create and no shim covers
     (``UnsupportedResourceError``; moto itself logs a warning, skips the resource and
     reports CREATE_COMPLETE);
   * for the audited types in ``PROPERTY_SUPPORT``, a property that neither moto's model nor
     this module applies and that is not listed as having no local effect
     (``UnsupportedPropertyError``);
   * an ``AWS::SSM::Parameter::Value<...>`` parameter whose SSM parameter does not exist in
     moto (seed public ``/aws/service/...`` ones with ``put_public_parameter``);
5. ``create_stack`` with the transformed template; a resource that fails is reported with its
   logical id, type and reason (``StackDeployError``). Properties moto's models ignore are
   then applied: through the API for S3 (versioning, EventBridge notifications, public access
   block, ownership, lifecycle) and DynamoDB (TTL, PITR); on moto's Lambda model for layers,
   tracing, architectures and tags (its UpdateFunctionConfiguration ignores them). Checks
   CREATE_COMPLETE and that every state machine is visible to ``DescribeStateMachine`` with
   no ``${...}`` left. An invocation runs the function's code in its environment processes
   (features/lambda_processes.py), with its own variables: nothing of it enters this process.

Shims (``SHIMS``) for types moto 5.2's CloudFormation does not create (checked against
``moto.cloudformation.parsing.get_model_map()``):

* ``AWS::S3::BucketPolicy`` -> PutBucketPolicy, the document as written (the local cloud's
  IAM evaluates it, conditions included: iam/enforcement.py).
* ``AWS::SQS::QueuePolicy`` -> SetQueueAttributes(Policy) (evaluated by the local cloud's IAM).
* ``AWS::SNS::Subscription`` -> Subscribe (+ subscription attributes).
* ``AWS::CloudWatch::Alarm`` -> PutMetricAlarm (single-metric alarms).

While ``create_stack`` runs, layer versions of ``PUBLIC_LAYER_ACCOUNTS`` (the Powertools
layer account) resolve to a stand-in, since moto only knows layers published into it; any
other unknown layer still fails as in moto. Not audited property by property (moto passes
their properties through, or IAM is not enforced): SQS queues, SNS topics, IAM roles.

Modules: base (errors, DeployedStack), template (preparation, SAM transform), support (what
moto can create), properties (what its models ignore), ssm, shims, deploy.
"""

from __future__ import annotations

from localcloud.stack.base import (
    PUBLIC_LAYER_ACCOUNTS,
    DeployedStack,
    StackDeployError,
    UnsupportedPropertyError,
    UnsupportedResourceError,
)
from localcloud.stack.deploy import deploy, deploy_patch_set
from localcloud.stack.shims import SHIMS
from localcloud.stack.ssm import put_public_parameter
from localcloud.stack.support import (
    PROPERTY_SUPPORT,
    moto_supported_types,
    unsupported_properties,
    unsupported_resources,
)
from localcloud.stack.template import load_template, localize, sam_transform

__all__ = [
    "PROPERTY_SUPPORT",
    "PUBLIC_LAYER_ACCOUNTS",
    "SHIMS",
    "DeployedStack",
    "StackDeployError",
    "UnsupportedPropertyError",
    "UnsupportedResourceError",
    "deploy",
    "deploy_patch_set",
    "load_template",
    "localize",
    "moto_supported_types",
    "put_public_parameter",
    "sam_transform",
    "unsupported_properties",
    "unsupported_resources",
]
