"""Lambda tenant isolation mode as Lambda runs it (features/lambda_tenancy.py): a function
with TenancyConfig PER_TENANT runs each tenant in an environment of its own (module state is
never shared between tenants, and is kept for one tenant), the handler reads context.tenant_id,
and an Invoke without TenantId is refused, synchronous or asynchronous. Wherever functions
run: on threads of the cloud, or in environment processes (a pool per tenant,
features/lambda_processes.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud
from localcloud.features.lambda_async import async_invocations

pytestmark = [pytest.mark.e2e]

TEMPLATE = Path(__file__).parent / "templates" / "lambda_tenancy" / "template.yaml"


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(TEMPLATE, stack_name="lambda-tenancy") as running:
        yield running


def invoke(function: str, **kwargs: Any) -> dict[str, Any]:
    reply = boto3.client("lambda").invoke(FunctionName=function, Payload=b"{}", **kwargs)
    assert "FunctionError" not in reply, reply["Payload"].read()
    return dict(json.loads(reply["Payload"].read()))


def test_each_tenant_has_an_environment_of_its_own(cloud: LocalCloud) -> None:
    blue = invoke("tenancy-isolated", TenantId="blue")
    green = invoke("tenancy-isolated", TenantId="green")
    blue_again = invoke("tenancy-isolated", TenantId="blue")
    assert blue["tenant"] == "blue" and green["tenant"] == "green"  # context.tenant_id
    assert green["environment"] != blue["environment"]
    assert green["seen"] == ["green"]  # nothing of blue's in green's module state
    assert blue_again["environment"] == blue["environment"]  # blue's environment, reused
    assert blue_again["seen"] == ["blue", "blue"]


def test_an_invoke_without_a_tenant_id_is_refused(cloud: LocalCloud) -> None:
    client = boto3.client("lambda")
    for kwargs in ({}, {"InvocationType": "Event"}):
        with pytest.raises(ClientError) as refused:
            client.invoke(FunctionName="tenancy-isolated", Payload=b"{}", **kwargs)
        assert refused.value.response["Error"]["Code"] == "InvalidParameterValueException"
        assert "TenantId" in refused.value.response["Error"]["Message"]


def test_an_asynchronous_invocation_runs_in_its_tenants_environment(cloud: LocalCloud) -> None:
    reply = boto3.client("lambda").invoke(
        FunctionName="tenancy-isolated", InvocationType="Event", TenantId="red", Payload=b"{}"
    )
    assert reply["StatusCode"] == 202
    cloud.settle()
    ran = async_invocations(cloud.runtime).of("tenancy-isolated")[-1]
    assert ran.status == "SUCCEEDED"
    assert ran.response["tenant"] == "red" and ran.response["seen"] == ["red"]


def test_a_function_without_tenant_isolation_has_no_tenant(cloud: LocalCloud) -> None:
    first, second = invoke("tenancy-shared"), invoke("tenancy-shared")
    assert first["tenant"] is None
    assert second["environment"] == first["environment"]
