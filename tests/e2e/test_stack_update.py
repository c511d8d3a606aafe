"""A stack update of template.yaml as ``sam deploy --parameter-overrides`` makes it:
``WorkflowType=EXPRESS`` replaces the per-object state machine (CloudFormation replaces a
state machine whose type changes), the rule and the roles follow the new one, and an upload
then ends SUCCEEDED as an Express execution; the old machine is gone."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from ingest_tools.local_pipeline import Pipeline
from localcloud.cloud import LocalCloud
from tests.support import sample_file

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_workflow_type_express_replaces_the_per_object_state_machine(cloud: LocalCloud) -> None:
    if cloud.parameters.get("WorkflowType") == "EXPRESS":
        pytest.skip("deployed as EXPRESS already (LOCALCLOUD_PARAMETER_OVERRIDES)")
    standard = Pipeline(cloud)
    _, run = standard.ingest("incoming/orders/first.csv", sample_file("orders-good.csv"))
    assert run.status == "SUCCEEDED", run

    assert cloud.update({"WorkflowType": "EXPRESS"}) == "UPDATE_COMPLETE"
    express = Pipeline(cloud)  # the stack's outputs now
    assert express.state_machine != standard.state_machine
    described = express.sfn.describe_state_machine(stateMachineArn=express.state_machine)
    assert described["type"] == "EXPRESS"
    with pytest.raises(ClientError, match="StateMachineDoesNotExist"):
        express.sfn.describe_state_machine(stateMachineArn=standard.state_machine)

    _, run = express.ingest("incoming/orders/second.csv", sample_file("orders-good.csv"))
    assert run.status == "SUCCEEDED", run
    assert ":express:" in run.arn
