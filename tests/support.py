"""Shared test helpers: sample events and files, polling (never a bare sleep)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import boto3
import pytest

from ingest_tools.local_pipeline import ROOT, TEMPLATE
from localcloud.stack import load_template

EVENTS = ROOT / "events"
T = TypeVar("T")

__all__ = [
    "AWKWARD_KEYS",
    "EVENTS",
    "LOG_DELIVERY_POLICIES",
    "ROOT",
    "TEMPLATE",
    "cli_json",
    "load_event",
    "role_allowing",
    "sample_file",
    "template_copy",
    "wait_for",
]

# Keys whose encoding S3 and EventBridge disagree about in public reports: space, '+', a
# literal '%20', non-ASCII.
AWKWARD_KEYS = [
    "incoming/orders/with space.csv",
    "incoming/orders/plus+sign.csv",
    "incoming/orders/percent%20literal.csv",
    "incoming/orders/d\u00e9j\u00e0-\u6771\u4eac.csv",
]


def load_event(name: str) -> Any:
    """A sample event from events/ (the same files `sam local invoke -e` uses)."""
    return json.loads((EVENTS / name).read_text())


def wait_for(
    probe: Callable[[], T | None], *, timeout: float = 10.0, interval: float = 0.01, what: str = ""
) -> T:
    """Poll ``probe`` until it returns something truthy; TimeoutError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what or probe}")
        time.sleep(interval)


def sample_file(name: str) -> bytes:
    return (EVENTS / "files" / name).read_bytes()


def role_allowing(name: str, actions: list[str], resources: str | list[str] = "*") -> str:
    """A role Step Functions may assume whose one policy allows ``actions`` on ``resources``:
    the local cloud authorizes every call a state machine makes with its role, as AWS does."""
    iam = boto3.client("iam")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "states.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    arn = str(
        iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    )
    allow = {"Effect": "Allow", "Action": actions, "Resource": resources}
    iam.put_role_policy(
        RoleName=name,
        PolicyName="allow",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [allow]}),
    )
    return arn


def template_copy(tmp_path: Path, edit: Callable[[dict[str, Any]], None] | None = None) -> Path:
    """template.yaml as JSON in ``tmp_path`` (artifact paths made absolute), changed by
    ``edit``: deploy a variant of the real template (a statement removed, a resource added)."""
    template = load_template(TEMPLATE)
    template["Globals"]["Function"]["CodeUri"] = str(ROOT / "functions")
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::StateMachine":
            machine = resource["Properties"]
            machine["DefinitionUri"] = str(ROOT / machine["DefinitionUri"])
    if edit is not None:
        edit(template)
    path = tmp_path / "template.json"
    path.write_text(json.dumps(template))
    return path


def cli_json(capsys: pytest.CaptureFixture[str]) -> Any:
    """The JSON document the command printed (Lambda logs of the local cloud share stdout)."""
    out = "\n" + capsys.readouterr().out
    start = max(out.rfind("\n{\n"), out.rfind("\n[\n"))
    return json.JSONDecoder().raw_decode(out[start + 1 :])[0]


#: SAM ``Policies`` for a state machine with a CloudWatch Logs destination: what Step
#: Functions needs to set up the log delivery with its role (the local cloud, as AWS, refuses
#: to create it otherwise). Template YAML, to indent under the state machine's Properties.
LOG_DELIVERY_POLICIES = """\
Policies:
  - Statement:
      - Effect: Allow
        Action:
          - logs:CreateLogDelivery
          - logs:GetLogDelivery
          - logs:UpdateLogDelivery
          - logs:DeleteLogDelivery
          - logs:ListLogDeliveries
          - logs:PutResourcePolicy
          - logs:DescribeResourcePolicies
          - logs:DescribeLogGroups
        Resource: "*"
"""
