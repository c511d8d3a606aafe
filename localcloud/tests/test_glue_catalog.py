"""The Glue Data Catalog is in the scope (features/service_scope.py): ``AWS::Glue::Database``
and ``AWS::Glue::Table`` deploy (stack/shims.py), a role's Glue calls are judged on the
catalog, database and table ARNs AWS names (iam/actions.py) against the role's policies
(inline, and a customer managed policy attached to it: iam/enforcement.py reads its default
version), and Glue beyond its Data Catalog (a crawler) is refused naming it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from localcloud.cloud import LocalCloud
from localcloud.iam.actions import Need, required

pytestmark = [pytest.mark.e2e]

TEMPLATE = """\
AWSTemplateFormatVersion: '2010-09-09'
Resources:
  Catalog:
    Type: AWS::Glue::Database
    Properties:
      CatalogId: !Ref AWS::AccountId
      DatabaseInput:
        Name: !Join ["_", !Split ["-", !Ref AWS::StackName]]
  Events:
    Type: AWS::Glue::Table
    Properties:
      CatalogId: !Ref AWS::AccountId
      DatabaseName: !Ref Catalog
      TableInput:
        Name: events
        TableType: EXTERNAL_TABLE
        Parameters: {projection.enabled: "true"}
        PartitionKeys: [{Name: day, Type: string}]
        StorageDescriptor:
          Location: s3://somewhere/events/
          Columns: [{Name: id, Type: string}]
Outputs:
  Database:
    Value: !Ref Catalog
  Table:
    Value: !Ref Events
"""


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    path: Path = tmp_path_factory.mktemp("glue") / "template.yaml"
    path.write_text(TEMPLATE)
    with LocalCloud(path, stack_name="glue-catalog") as running:
        yield running


@pytest.fixture
def as_role(cloud: LocalCloud) -> Callable[..., Any]:
    """A Glue client as a new role with ``inline`` (a statement) or ``managed`` (attached)."""
    iam, account = boto3.client("iam"), cloud.account_id
    trust = {"Effect": "Allow", "Principal": {"AWS": account}, "Action": "sts:AssumeRole"}

    def make(name: str, statement: dict[str, Any], *, managed: bool = False) -> Any:
        document = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
        trusted = json.dumps({"Version": "2012-10-17", "Statement": [trust]})
        arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=trusted)["Role"]["Arn"]
        if managed:
            policy = iam.create_policy(PolicyName=name, PolicyDocument=document)["Policy"]
            iam.attach_role_policy(RoleName=name, PolicyArn=policy["Arn"])
        else:
            iam.put_role_policy(RoleName=name, PolicyName=name, PolicyDocument=document)
        keys = boto3.client("sts").assume_role(RoleArn=arn, RoleSessionName=name)["Credentials"]
        return boto3.client(
            "glue",
            aws_access_key_id=keys["AccessKeyId"],
            aws_secret_access_key=keys["SecretAccessKey"],
            aws_session_token=keys["SessionToken"],
        )

    return make


def _events_table(cloud: LocalCloud, *actions: str) -> dict[str, Any]:
    prefix = f"arn:aws:glue:{cloud.region}:{cloud.account_id}"
    resources = ["catalog", "database/glue_catalog", "table/glue_catalog/events"]
    return {
        "Effect": "Allow",
        "Action": list(actions),
        "Resource": [f"{prefix}:{r}" for r in resources],
    }


def test_the_database_and_table_deploy_with_their_refs(cloud: LocalCloud) -> None:
    assert (cloud.outputs["Database"], cloud.outputs["Table"]) == ("glue_catalog", "events")
    table = boto3.client("glue").get_table(DatabaseName="glue_catalog", Name="events")["Table"]
    assert table["PartitionKeys"] == [{"Name": "day", "Type": "string"}]
    assert table["Parameters"] == {"projection.enabled": "true"}
    assert table["StorageDescriptor"]["Location"] == "s3://somewhere/events/"


@pytest.mark.parametrize("managed", [False, True], ids=["inline", "customer-managed"])
def test_a_role_reaches_the_table_its_policy_names_and_no_other(
    cloud: LocalCloud, as_role: Callable[..., Any], managed: bool
) -> None:
    statement = _events_table(cloud, "glue:GetTable", "glue:UpdateTable")
    glue = as_role(f"reader-{managed}", statement, managed=managed)
    table = glue.get_table(DatabaseName="glue_catalog", Name="events")["Table"]
    storage = table["StorageDescriptor"]
    storage["Columns"].append({"Name": f"added_{managed}", "Type": "int"})
    glue.update_table(
        DatabaseName="glue_catalog", TableInput={"Name": "events", "StorageDescriptor": storage}
    )
    for call, refused_on in (
        (lambda: glue.get_table(DatabaseName="glue_catalog", Name="orders"), "glue_catalog/orders"),
        (lambda: glue.get_tables(DatabaseName="glue_catalog"), ":catalog"),  # not its action
    ):
        with pytest.raises(glue.exceptions.ClientError) as refused:
            call()
        error = refused.value.response["Error"]
        assert error["Code"] == "AccessDeniedException", error
        assert f"on resource: arn:aws:glue:{cloud.region}:" in error["Message"]
        assert refused_on in error["Message"]


def test_glue_beyond_the_data_catalog_is_refused_naming_it(
    cloud: LocalCloud, as_role: Callable[..., Any]
) -> None:
    glue = as_role("crawls", {"Effect": "Allow", "Action": "glue:*", "Resource": "*"})
    with pytest.raises(glue.exceptions.ClientError) as refused:
        glue.start_crawler(Name="anything")
    error = refused.value.response["Error"]
    assert error["Code"] == "AccessDeniedException", error
    assert "AWS Glue beyond its Data Catalog" in error["Message"]


def test_table_calls_need_the_catalog_the_database_and_the_table() -> None:
    created = {"DatabaseName": "d", "TableInput": {"Name": "t"}}
    needs = required("glue", "CreateTable", created, "eu-west-1", "123456789012")
    prefix = "arn:aws:glue:eu-west-1:123456789012"
    assert needs == [
        Need("glue:CreateTable", f"{prefix}:catalog"),
        Need("glue:CreateTable", f"{prefix}:database/d"),
        Need("glue:CreateTable", f"{prefix}:table/d/t"),
    ]
    assert required("glue", "GetDatabase", {"Name": "d"}, "eu-west-1", "123456789012") == [
        Need("glue:GetDatabase", f"{prefix}:catalog"),
        Need("glue:GetDatabase", f"{prefix}:database/d"),
    ]
