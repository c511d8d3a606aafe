"""``sam build && sam deploy`` of this project to the local cloud, as a user deploys it to AWS:
the unchanged SAM CLI, pointed at a served local cloud by ``AWS_ENDPOINT_URL`` alone.

``make build`` (the project's build: arm64 wheels, the pyarrow layer) into a directory of its
own; ``sam package`` of the build (what ``sam deploy`` does first; once here for both
deploys), then ``sam deploy --config-env staging`` (samconfig.toml's staging environment: its
stack name, S3 prefix and parameter overrides); an upload to the deployed bucket ends
SUCCEEDED, run by the code that was deployed, each function in its own environment processes
(the aarch64 wheels rebuilt for this machine, localcloud/environments/host_build.py); a second
deploy with ``WorkflowType=EXPRESS`` replaces the per-object state machine and an upload
ends SUCCEEDED as Express; ``sam delete`` removes the stack and keeps what the template
retains (the bucket, the state table), as CloudFormation does.

This is the suite's ``sam build`` check too (``make test`` runs no separate build)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from ingest_pipeline.models import state_pk, state_sk
from ingest_tools.local_pipeline import wait_execution
from localcloud.cloud import LocalCloud
from localcloud.environments import default_runtime_python
from tests.support import sample_file

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SAM_CLI = ROOT / ".venv-sam" / "bin" / "sam"
STACK = "s3-ingest-pipeline-staging"  # samconfig.toml [staging.global.parameters]
LINKED = re.compile(rb"lib(?:arrow|parquet)[a-z_]*\.so(?:\.[0-9]+)*")  # a library file name
EMPTY = 'AWSTemplateFormatVersion: "2010-09-09"\nResources:\n  Box: {Type: AWS::S3::Bucket}\n'


def outputs() -> dict[str, str]:
    stack = boto3.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}


def upload_runs(cloud: LocalCloud, key: str) -> tuple[Any, dict[str, Any]]:
    """Upload a valid orders file to the deployed bucket: the execution the rule started,
    once ended, and the object's state record."""
    out = outputs()
    put = boto3.client("s3").put_object(
        Bucket=out["IngestBucketName"], Key=key, Body=sample_file("orders-good.csv")
    )

    def started() -> list[Any]:
        return cloud.deliveries.find(
            lambda d: (
                d.event.get("detail", {}).get("object", {}).get("key") == key
                and d.execution_arn is not None
            )
        )

    delivered = cloud.deliveries.wait(started, 30)
    assert delivered, f"no execution started for {key}"
    run = wait_execution(cloud, str(delivered[0].execution_arn), 60,
                         sfn=boto3.client("stepfunctions"), logs=boto3.client("logs"))  # fmt: skip
    item = boto3.client("dynamodb").get_item(
        TableName=out["ObjectStateTableName"],
        Key={"pk": {"S": state_pk(out["IngestBucketName"], key)},
             "sk": {"S": state_sk(put["VersionId"])}},
    ).get("Item", {})  # fmt: skip
    return run, item


def served_sam(cloud: LocalCloud) -> Callable[..., subprocess.CompletedProcess[str]]:
    cloud.serve(port=0)
    env = {**os.environ, "AWS_ENDPOINT_URL": cloud.describe()["endpoint"],
           "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
           "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0"}  # fmt: skip

    def sam(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(SAM_CLI), *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600, check=False)  # fmt: skip

    return sam


@pytest.mark.skipif(not SAM_CLI.exists(), reason="no SAM CLI (make bootstrap)")
def test_sam_build_deploy_update_and_delete_of_this_project(tmp_path: Path) -> None:
    if not default_runtime_python().exists():
        pytest.skip("no Lambda runtime Python for the function environments (make bootstrap)")
    build = tmp_path / "build"
    command = ["make", "--no-print-directory", "build", f"BUILD_DIR={build}"]
    made = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)  # fmt: skip
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    # the pyarrow layer without Arrow Flight and the linking copies (layers/pyarrow/Makefile):
    # every Arrow library a shipped one names (in its dynamic section) is shipped
    pyarrow = build / "PyarrowLayer" / "python" / "pyarrow"
    shipped = {p.name for p in pyarrow.iterdir()}
    named = {m.decode() for so in pyarrow.glob("*.so*") for m in LINKED.findall(so.read_bytes())}
    assert named and named <= shipped, sorted(named - shipped)
    copies = [n for n in shipped if n.startswith(("libarrow", "libparquet"))
              and not re.fullmatch(r"\w+\.so\.[0-9]+", n)]  # fmt: skip
    assert not copies and not [n for n in shipped if "flight" in n], sorted(shipped)
    (tmp_path / "host.yaml").write_text(EMPTY)
    with LocalCloud(tmp_path / "host.yaml", stack_name="host") as cloud:
        sam = served_sam(cloud)
        # sam deploy's own first step, once for both deploys: the 106 MiB pyarrow layer is
        # zipped once (about 5 s of CPU), not again by the update, as a CI/CD pipeline does
        packaged = tmp_path / "packaged.yaml"
        package = ("package", "--template-file", str(build / "template.yaml"), "--resolve-s3",
                   "--s3-prefix", STACK, "--output-template-file", str(packaged))  # fmt: skip
        made = sam(*package)
        assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
        staging = ("--config-env", "staging", "--config-file", str(ROOT / "samconfig.toml"))
        deploy = ("deploy", *staging, "--template-file", str(packaged))
        done = sam(*deploy)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"Successfully created/updated stack - {STACK}" in done.stdout

        run, record = upload_runs(cloud, "incoming/orders/deployed.csv")
        assert run.status == "SUCCEEDED", run
        assert record["status"]["S"] == "SUCCEEDED", record
        standard = outputs()["PipelineStateMachineArn"]

        express = sam(*deploy, "--parameter-overrides", "Environment=staging WorkflowType=EXPRESS")
        assert express.returncode == 0, express.stdout[-3000:] + express.stderr[-3000:]
        replaced = outputs()["PipelineStateMachineArn"]
        assert replaced != standard
        sfn = boto3.client("stepfunctions")
        assert sfn.describe_state_machine(stateMachineArn=replaced)["type"] == "EXPRESS"
        run, record = upload_runs(cloud, "incoming/orders/express.csv")
        assert run.status == "SUCCEEDED" and ":express:" in run.arn, run
        assert record["status"]["S"] == "SUCCEEDED", record

        bucket, table = outputs()["IngestBucketName"], outputs()["ObjectStateTableName"]
        gone = sam(
            "delete",
            "--config-env",
            "staging",
            "--config-file",
            str(ROOT / "samconfig.toml"),
            "--no-prompts",
        )
        assert gone.returncode == 0, gone.stdout[-3000:] + gone.stderr[-3000:]
        stacks = boto3.client("cloudformation").list_stacks()["StackSummaries"]
        assert {s["StackStatus"] for s in stacks if s["StackName"] == STACK} == {"DELETE_COMPLETE"}
        functions = boto3.client("lambda").list_functions()["Functions"]
        assert not [f for f in functions if f["FunctionName"].startswith(STACK)]
        machines = sfn.list_state_machines()["stateMachines"]
        assert not [m for m in machines if m["name"].startswith(STACK)]
        # DeletionPolicy: Retain, as CloudFormation keeps them
        boto3.client("s3").head_bucket(Bucket=bucket)
        boto3.client("dynamodb").describe_table(TableName=table)
