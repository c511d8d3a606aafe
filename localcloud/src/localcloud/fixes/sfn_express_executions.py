"""Fix: executions of an EXPRESS state machine are named, started and refused as on AWS.

AWS, as verified (2026-11-23) from:

* the Step Functions API reference (botocore's service model, stepfunctions 2016-11-23, in
  this venv): DescribeExecution "Executions of an EXPRESS state machine aren't supported by
  DescribeExecution unless a Map Run dispatched them"; GetExecutionHistory, StopExecution,
  RedriveExecution and DescribeStateMachineForExecution "This API action is not supported
  by EXPRESS state machines"; ListExecutions may fail with StateMachineTypeNotSupported;
* the developer guide, "Choosing workflow type" / "Execution guarantees": asynchronous
  Express workflows are at-least-once and "Idempotency is not automatically managed.
  Starting multiple workflows with the same name results in concurrent executions";
* responses recorded on AWS (LocalStack, tests/aws/services/stepfunctions/v2/
  test_sfn_api_express.snapshot.json, ``test_start_async_describe_history_execution``,
  marked ``aws.validated``, recorded 2024-07-03): ListExecutions of an EXPRESS state machine
  fails with ``StateMachineTypeNotSupported`` "This operation is not supported by this type
  of state machine"; DescribeExecution, StopExecution and GetExecutionHistory of its
  execution fail with ``InvalidArn`` "Invalid Arn: 'Resource type not valid in this context:
  express'" (AWS words a wrong ARN type the same way for other types, e.g. "... context:
  stateMachine", cirrus-geo/cirrus-geo#316);
* the execution ARN of an Express execution, as recorded on AWS in the same snapshots and in
  Step Functions' own CloudWatch Logs records (DataDog/datadog-serverless-functions,
  aws/logs_monitoring tests): ``arn:<partition>:states:<region>:<account>:express:
  <state machine name>:<execution name>:<uuid>``.

moto 5.2.5 stores a state machine's ``type`` (CreateStateMachine ``type``; the stack deploy
through fixes/sfn_cloudformation_state_machine.py) but ignores it when it runs one: every
execution gets an ``:execution:`` ARN, a second StartExecution with a name already used
fails with ExecutionAlreadyExists (or returns the running execution), and every execution
API answers for it. (moto's ``StateMachineInstance.sm_type`` is always STANDARD.)

Here, for a state machine whose type is EXPRESS:

* StartExecution gives the execution AWS's Express ARN (a name is generated when none is
  given, as AWS does) and starts a new, concurrent execution whatever names were used
  before; the execution's context (``$$.Execution.Id``) carries that ARN;
* DescribeExecution, StopExecution, GetExecutionHistory (moto's reads DescribeExecution),
  DescribeStateMachineForExecution and RedriveExecution of an ``:express:`` execution ARN,
  and ListExecutions of the state machine, fail as recorded above (the answers of
  DescribeStateMachineForExecution and RedriveExecution are inferred, not recorded). An ARN
  whose state machine part holds a ``/`` (``<state machine>/<Map Run label>``) names a child
  a Map Run dispatched, which AWS keeps describable: it is passed on to moto unchanged (moto
  runs a Distributed Map's children inside their parent, with no execution of their own;
  see fixes/sfn_map_express_children.py).

Not emulated: at-least-once delivery (an execution never runs twice by itself locally;
``LocalCloud.redeliver`` delivers an event again), the five-minute maximum duration (Wait
states and retries run on the virtual clock). StartSyncExecution is
features/sync_execution.py. Seeing what an Express execution did is CloudWatch Logs' job, as on AWS
(fixes/sfn_execution_logs.py, and ``Pipeline.wait`` reads it there); a test stops one
through the backend (features/executions.py ``abort``), as nothing can on AWS.
"""

from __future__ import annotations

import uuid
from typing import Any

from moto.core.exceptions import AWSError
from moto.stepfunctions import models as sfn_models
from moto.stepfunctions import responses as sfn_responses
from moto.stepfunctions.exceptions import InvalidArn
from moto.stepfunctions.parser import models as sfn_parser_models
from moto.stepfunctions.parser.api import StateMachineType
from moto.stepfunctions.parser.backend import execution as sfn_execution

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = [
    "EXPRESS",
    "PATCHES",
    "TYPE_NOT_SUPPORTED_MESSAGE",
    "StateMachineTypeNotSupported",
    "dispatched_by_map_run",
    "express_execution_arn",
    "is_express",
    "is_express_execution_arn",
    "refuse_express_execution",
]

EXPRESS = "EXPRESS"
TYPE_NOT_SUPPORTED_MESSAGE = "This operation is not supported by this type of state machine"


class StateMachineTypeNotSupported(AWSError):
    TYPE = "StateMachineTypeNotSupported"
    STATUS = 400


def is_express(state_machine: Any) -> bool:
    """The state machine's type (CreateStateMachine ``type``), as moto stores it."""
    return str(getattr(state_machine, "type", "STANDARD")) == EXPRESS


def express_execution_arn(standard_arn: str) -> str:
    """``...:execution:<machine>:<name>`` -> ``...:express:<machine>:<name>:<uuid>``."""
    parts = standard_arn.split(":")
    if len(parts) < 8 or parts[5] != "execution":
        raise ValueError(f"not an execution ARN: {standard_arn}")
    parts[5] = "express"
    return ":".join([*parts, str(uuid.uuid4())])


def is_express_execution_arn(arn: str) -> bool:
    parts = arn.split(":")
    return len(parts) > 6 and parts[5] == "express"


def dispatched_by_map_run(arn: str) -> bool:
    """A Map Run's child: its state machine part is ``<state machine>/<Map Run label>``."""
    parts = arn.split(":")
    return len(parts) > 6 and "/" in parts[6]


def refuse_express_execution(arn: str) -> None:
    """AWS's answer to an execution API that Express executions do not support."""
    if is_express_execution_arn(arn) and not dispatched_by_map_run(arn):
        raise InvalidArn("Invalid Arn: 'Resource type not valid in this context: express'")


def _build(rt: Runtime) -> Targets:
    execution_class = sfn_execution.Execution
    idempotency = sfn_models.StateMachine._handle_name_input_idempotency
    backend = sfn_parser_models.StepFunctionsParserBackend
    list_executions = backend.list_executions

    def new_execution(*args: Any, **kwargs: Any) -> Any:
        """moto's ``Execution(...)`` in StartExecution, with AWS's Express ARN."""
        machine = kwargs.get("state_machine")
        if machine is not None and is_express(machine):
            kwargs["name"] = kwargs.get("name") or str(uuid.uuid4())
            standard = str(kwargs["exec_arn"])
            if standard.endswith(":None"):  # moto formats a missing name as "None"
                standard = f"{standard[: -len('None')]}{kwargs['name']}"
            kwargs["exec_arn"] = express_execution_arn(standard)
            kwargs["sm_type"] = StateMachineType.EXPRESS
            machine.sm_type = StateMachineType.EXPRESS  # the execution's own snapshot
        return execution_class(*args, **kwargs)

    def name_idempotency(self: Any, name: str, execution_input: str) -> Any:
        if is_express(self):
            return None  # "Idempotency is not automatically managed" for Express
        return idempotency(self, name, execution_input)

    def refusing(original: Any) -> Any:
        def refusing_express(self: Any, execution_arn: str) -> Any:
            refuse_express_execution(execution_arn)
            return original(self, execution_arn)

        return refusing_express

    def list_machine_executions(self: Any, state_machine_arn: str, *a: Any, **kw: Any) -> Any:
        if is_express(self.describe_state_machine(state_machine_arn)):
            raise StateMachineTypeNotSupported(TYPE_NOT_SUPPORTED_MESSAGE)
        return list_executions(self, state_machine_arn, *a, **kw)

    def redrive_execution(self: Any) -> Any:
        """moto has no RedriveExecution; an Express execution is refused as AWS does."""
        refuse_express_execution(str(self._get_param("executionArn")))
        raise NotImplementedError("The redrive_execution action has not been implemented")

    refused = ("describe_execution", "stop_execution", "describe_state_machine_for_execution")
    return {
        (sfn_parser_models, "Execution"): new_execution,
        (sfn_models.StateMachine, "_handle_name_input_idempotency"): name_idempotency,
        **{(backend, name): refusing(getattr(backend, name)) for name in refused},
        (backend, "list_executions"): list_machine_executions,
        (sfn_responses.StepFunctionResponse, "redrive_execution"): redrive_execution,
    }


PATCHES = [
    Patch(
        name="sfn-express-executions",
        kind=Kind.FIX,
        reason="An EXPRESS state machine's executions get AWS's :express: ARN, start again "
        "under a name already used (no idempotency), and DescribeExecution, StopExecution, "
        "GetExecutionHistory, DescribeStateMachineForExecution, RedriveExecution and "
        "ListExecutions refuse them with AWS's errors (moto runs them as STANDARD ones).",
        test="tests/e2e/test_localcloud_express.py"
        "::test_express_executions_with_one_name_run_concurrently_under_express_arns",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto "
        "stepfunctions/parser/models.py start_execution ignores the state machine's type",
        adds=("redrive_execution",),
    )
]
