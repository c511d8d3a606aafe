"""CloudFormation's API as ``sam deploy`` drives it: a template read from S3 by its URL, change
sets that create and update a stack (SAM's transform server-side, code from S3 zips), a change
set without changes, a failed update rolled back; and the real SAM CLI against ``localcloud
up``-style serving (skipped where the pinned SAM CLI is not installed)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
SAM_CLI = Path(os.environ.get("LOCALCLOUD_SAM_CLI", ROOT / ".venv-sam" / "bin" / "sam"))
EMPTY = 'AWSTemplateFormatVersion: "2010-09-09"\nResources:\n  Box: {Type: AWS::S3::Bucket}\n'
APP = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  Stage: {Type: String, Default: dev}
Resources:
  Hello:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.13
      Handler: app.handler
      CodeUri: %(code)s
      Environment: {Variables: {STAGE: !Ref Stage}}
Outputs:
  HelloName: {Value: !Ref Hello}
"""
HANDLER = (
    "import os\n"
    "def handler(event, context):\n"
    "    return {'hello': event.get('name'), 'stage': os.environ['STAGE'], 'v': %d}\n"
)


@pytest.fixture
def cloud(tmp_path: Path) -> Iterator[LocalCloud]:
    (tmp_path / "template.yaml").write_text(EMPTY)
    with LocalCloud(tmp_path / "template.yaml", stack_name="host") as running:
        yield running


def upload_code(version: int) -> str:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("app.py", HANDLER % version)
    s3 = boto3.client("s3")
    if "artifacts" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket="artifacts")
    s3.put_object(Bucket="artifacts", Key=f"hello-{version}.zip", Body=archive.getvalue())
    return f"s3://artifacts/hello-{version}.zip"


def change_set(stack: str, body: str, kind: str, **extra: object) -> dict[str, object]:
    cfn = boto3.client("cloudformation")
    made = cfn.create_change_set(
        StackName=stack,
        ChangeSetName=f"c{len(body)}",
        TemplateBody=body,
        ChangeSetType=kind,
        Capabilities=["CAPABILITY_IAM"],
        **extra,  # type: ignore[arg-type]
    )
    described: dict[str, object] = cfn.describe_change_set(ChangeSetName=made["Id"])
    if described["Status"] == "CREATE_COMPLETE":
        cfn.execute_change_set(ChangeSetName=made["Id"])
    return described


def call(function: str) -> object:
    reply = boto3.client("lambda").invoke(FunctionName=function, Payload=b'{"name": "Ada"}')
    return json.loads(reply["Payload"].read())


def stack_of(name: str) -> dict[str, object]:
    described: dict[str, object] = boto3.client("cloudformation").describe_stacks(StackName=name)[
        "Stacks"
    ][0]
    return described


def test_a_template_url_on_the_local_endpoint_is_read(cloud: LocalCloud) -> None:
    cloud.serve(port=0)
    endpoint = cloud.describe()["endpoint"]
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="templates")
    s3.put_object(Bucket="templates", Key="a/t.yaml", Body=EMPTY.encode())
    cfn = boto3.client("cloudformation", endpoint_url=endpoint, region_name="us-east-1")
    for name, url in (  # as the SAM CLI builds it on the endpoint; and S3's own forms
        ("by-endpoint", f"{endpoint}/templates/a/t.yaml"),
        ("by-host", "https://templates.s3.us-east-1.amazonaws.com/a/t.yaml"),
    ):
        cfn.create_stack(StackName=name, TemplateURL=url)
        assert stack_of(name)["StackStatus"] == "CREATE_COMPLETE"
    with pytest.raises(cfn.exceptions.ClientError, match="S3 error: The specified key"):
        cfn.create_stack(StackName="none", TemplateURL=f"{endpoint}/templates/missing.yaml")


def test_change_sets_create_and_update_a_sam_stack(cloud: LocalCloud) -> None:
    described = change_set("app", APP % {"code": upload_code(1)}, "CREATE")
    assert described["Status"] == "CREATE_COMPLETE", described
    stack = stack_of("app")
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    function = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}["HelloName"]  # type: ignore[attr-defined]
    assert call(function) == {"hello": "Ada", "stage": "dev", "v": 1}

    parameters = [{"ParameterKey": "Stage", "ParameterValue": "prod"}]
    change_set("app", APP % {"code": upload_code(2)}, "UPDATE", Parameters=parameters)
    assert stack_of("app")["StackStatus"] == "UPDATE_COMPLETE"
    assert call(function) == {"hello": "Ada", "stage": "prod", "v": 2}

    same = change_set("app", APP % {"code": upload_code(2)}, "UPDATE", Parameters=parameters)
    assert same["Status"] == "FAILED"
    assert "didn't contain changes" in str(same["StatusReason"])  # what sam deploy reports


def test_a_failed_update_rolls_back(cloud: LocalCloud) -> None:
    change_set("app", APP % {"code": upload_code(1)}, "CREATE")
    broken = APP % {"code": upload_code(2)} + (
        "  Broken:\n    Value: x\n"  # an output is fine; the machine below is not
    )
    broken = broken.replace(
        "Outputs:",
        "  Machine:\n    Type: AWS::StepFunctions::StateMachine\n    Properties:\n"
        "      RoleArn: arn:aws:iam::123456789012:role/none\n"
        '      DefinitionString: \'{"StartAt": "Nowhere", "States": {}}\'\nOutputs:',
    )
    change_set("app", broken, "UPDATE")
    stack = stack_of("app")
    assert stack["StackStatus"] == "UPDATE_ROLLBACK_COMPLETE"
    resources = boto3.client("cloudformation").describe_stack_resources(StackName="app")
    assert "Machine" not in {r["LogicalResourceId"] for r in resources["StackResources"]}
    function = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}["HelloName"]  # type: ignore[attr-defined]
    assert call(function) == {"hello": "Ada", "stage": "dev", "v": 1}  # the code before
    events = boto3.client("cloudformation").describe_stack_events(StackName="app")
    reasons = " ".join(e.get("ResourceStatusReason", "") for e in events["StackEvents"])
    assert "The following resource(s) failed to update: [Machine]" in reasons


def sam_cli(cloud: LocalCloud, project: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """The pinned SAM CLI in ``project``, pointed at ``cloud`` served on a port of its own."""
    cloud.serve(port=0)
    env = {**os.environ, "AWS_ENDPOINT_URL": cloud.describe()["endpoint"],
           "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
           "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0"}  # fmt: skip

    def sam(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(SAM_CLI), *args], cwd=project, env=env, capture_output=True,
                              text=True, timeout=300, check=False)  # fmt: skip

    return sam


# the real CLI in a subprocess: long, so started first (tests/conftest.py orders slow first)
NEEDS_SAM = pytest.mark.skipif(
    not SAM_CLI.exists(), reason=f"no SAM CLI at {SAM_CLI} (make bootstrap)"
)


@pytest.mark.slow
@NEEDS_SAM
def test_sam_deploy_and_delete_against_the_served_cloud(cloud: LocalCloud, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text(HANDLER % 7)
    (project / "template.yaml").write_text(APP % {"code": "src/"})
    sam = sam_cli(cloud, project)
    deploy = ("deploy", "--stack-name", "samapp", "--resolve-s3", "--capabilities",
              "CAPABILITY_IAM", "--no-confirm-changeset",
              "--parameter-overrides", "Stage=staging")  # fmt: skip
    done = sam(*deploy)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Successfully created/updated stack - samapp" in done.stdout
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack_of("samapp")["Outputs"]}  # type: ignore[attr-defined]
    assert call(outputs["HelloName"]) == {"hello": "Ada", "stage": "staging", "v": 7}
    # sam remote invoke: the response, and the log tail it asks for (LogType Tail)
    remote = sam("remote", "invoke", "--stack-name", "samapp", "Hello", "--event", '{"name": "Bo"}')
    assert remote.returncode == 0, remote.stdout + remote.stderr
    assert '{"hello": "Bo", "stage": "staging", "v": 7}' in remote.stdout
    assert "START RequestId: " in remote.stdout + remote.stderr
    assert "REPORT RequestId: " in remote.stdout + remote.stderr

    again = sam(*deploy)  # nothing changed: SAM's own message, exit status 1
    assert again.returncode == 1 and "No changes to deploy" in again.stdout + again.stderr

    gone = sam("delete", "--stack-name", "samapp", "--no-prompts")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    functions = boto3.client("lambda").list_functions()["Functions"]
    assert outputs["HelloName"] not in {f["FunctionName"] for f in functions}


@pytest.mark.slow
@NEEDS_SAM
def test_a_published_pattern_deployed_by_sam_runs_its_readme_steps(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    """s3-eventbridge-sfn deployed with ``sam deploy`` behaves as with ``localcloud up
    --template``: its README's steps (serverless_patterns/steps_b2.py) pass on this stack."""
    from serverless_patterns import patterns
    from serverless_patterns.steps_b2 import s3_eventbridge_sfn

    pattern = patterns()["s3-eventbridge-sfn"]
    project = tmp_path / pattern.name
    shutil.copytree(pattern.dir, project)
    sam = sam_cli(cloud, project)
    done = sam("deploy", "--stack-name", "pattern", "--resolve-s3", "--capabilities",
               "CAPABILITY_IAM", "--no-confirm-changeset")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack_of("pattern")["Outputs"]}  # type: ignore[attr-defined]
    deployed = SimpleNamespace(outputs=outputs, deliveries=cloud.deliveries)
    s3_eventbridge_sfn(deployed, pattern)  # type: ignore[arg-type]
