"""A Distributed Map (S3 ItemReader, EXPRESS children, ResultWriter) runs locally as on AWS.

A small standalone SAM stack (not the app's template): a bucket, one Python function run
in-process, and two state machines whose Map state reads a JSON plan from S3, runs one
child per item and writes the results through a ResultWriter. Each test asserts what a user
of AWS sees: the execution's outcome and the result files where the manifest points.
The fixes: localcloud/fixes/sfn_map_express_children.py, sfn_map_tolerated_failures.py,
sfn_map_result_writer.py (each test fails without its fix, LOCALCLOUD_WITHOUT=<name>).
"""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = pytest.mark.e2e

PREFIX = "work/map-results"

CHILD = """
class SomeTypedError(Exception):
    pass


def handler(event, context):
    chunk = event["chunk"]
    if chunk.get("fail") == "typed":
        raise SomeTypedError(f"typed failure of chunk {event['index']}")
    if chunk.get("fail") == "untyped":
        raise ValueError(f"untyped failure of chunk {event['index']}")
    return {"doubled": chunk["n"] * 2, "index": event["index"], "object": event["object"]}
"""


def _machine(thresholds: str) -> str:
    """A state machine resource: the Map state of the brief, with ``thresholds``."""
    return textwrap.indent(
        textwrap.dedent(
            f"""\
            Type: AWS::Serverless::StateMachine
            Properties:
              Type: STANDARD
              DefinitionSubstitutions:
                FunctionArn: !GetAtt ChunkFunction.Arn
                Bucket: !Ref Bucket
              Policies:
                - LambdaInvokePolicy: {{FunctionName: !Ref ChunkFunction}}
                - S3CrudPolicy: {{BucketName: !Ref Bucket}}
              Definition:
                StartAt: TransformChunks
                States:
                  TransformChunks:
                    Type: Map
                    ItemReader:
                      Resource: arn:aws:states:::s3:getObject
                      ReaderConfig: {{InputType: JSON}}
                      Parameters: {{"Bucket.$": "$.plan.bucket", "Key.$": "$.plan.key"}}
                    ItemSelector:
                      "object.$": "$.object"
                      "chunk.$": "$$.Map.Item.Value"
                      "index.$": "$$.Map.Item.Index"
                      "executionArn.$": "$$.Execution.Id"
                    ItemProcessor:
                      ProcessorConfig: {{Mode: DISTRIBUTED, ExecutionType: EXPRESS}}
                      StartAt: ProcessChunk
                      States:
                        ProcessChunk:
                          Type: Task
                          Resource: arn:aws:states:::lambda:invoke
                          Parameters: {{FunctionName: "${{FunctionArn}}", "Payload.$": "$"}}
                          ResultSelector: {{"result.$": "$.Payload"}}
                          Retry:
                            - ErrorEquals: [Lambda.ServiceException]
                              IntervalSeconds: 1
                              MaxAttempts: 2
                              BackoffRate: 2
                              MaxDelaySeconds: 5
                              JitterStrategy: FULL
                          Catch:
                            - ErrorEquals: [SomeTypedError]
                              ResultPath: $.error
                              Next: ReportChunkError
                          End: true
                        ReportChunkError: {{Type: Pass, End: true}}
                    MaxConcurrency: 100
                    {thresholds}
                    Label: Chunks
                    ResultWriter:
                      Resource: arn:aws:states:::s3:putObject
                      Parameters: {{Bucket: "${{Bucket}}", Prefix: {PREFIX}}}
                    ResultPath: $.chunks
                    Catch:
                      - ErrorEquals: [States.ALL]
                        ResultPath: $.error
                        Next: MapFailed
                    Next: AssembleOutput
                  MapFailed: {{Type: Pass, End: true}}
                  AssembleOutput: {{Type: Pass, End: true}}
            """
        ),
        "    ",
    )


TEMPLATE = f"""\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  Bucket:
    Type: AWS::S3::Bucket
  ChunkFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: code/
      Handler: localcloud_dmap_child.handler
      Runtime: python3.13
      Timeout: 10
  ZeroTolerance:
{_machine("ToleratedFailurePercentage: 0")}
  ToleratesOne:
{_machine("ToleratedFailureCount: 1")}
Outputs:
  BucketName: {{Value: !Ref Bucket}}
  ZeroToleranceArn: {{Value: !Ref ZeroTolerance}}
  ToleratesOneArn: {{Value: !Ref ToleratesOne}}
"""


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    root = tmp_path_factory.mktemp("dmap-stack")
    (root / "code").mkdir()
    (root / "code" / "localcloud_dmap_child.py").write_text(CHILD)
    (root / "template.yaml").write_text(TEMPLATE)
    with LocalCloud(root / "template.yaml", stack_name="dmap-test", event_delivery=False) as c:
        yield c


class Run:
    """One execution of a deployed machine over a plan of chunks, and what it left in S3."""

    def __init__(self, cloud: LocalCloud, machine: str, chunks: list[dict[str, Any]]):
        self.s3, self.sfn = boto3.client("s3"), boto3.client("stepfunctions")
        self.bucket = cloud.outputs["BucketName"]
        plan_key = f"plans/{uuid.uuid4()}.json"
        self.s3.put_object(Bucket=self.bucket, Key=plan_key, Body=json.dumps(chunks).encode())
        execution_input = {
            "object": {"key": "incoming/x.csv"},
            "plan": {"bucket": self.bucket, "key": plan_key},
        }
        self.arn = self.sfn.start_execution(
            stateMachineArn=cloud.outputs[machine],
            name=str(uuid.uuid4()),
            input=json.dumps(execution_input),
        )["executionArn"]
        self.described = cloud.runtime.wait_until(self._ended, 60)
        assert self.described, f"{self.arn} did not end in 60 s"
        self.output = json.loads(self.described.get("output") or "null")

    def _ended(self) -> dict[str, Any] | None:
        described = self.sfn.describe_execution(executionArn=self.arn)
        return None if described["status"] == "RUNNING" else described

    def read(self, key: str) -> Any:
        return json.loads(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())

    def size(self, key: str) -> int:
        return int(self.s3.head_object(Bucket=self.bucket, Key=key)["ContentLength"])

    def map_run_arn(self) -> str:
        (run,) = self.sfn.list_map_runs(executionArn=self.arn)["mapRuns"]
        return str(run["mapRunArn"])

    def manifest_key(self) -> str:
        return f"{PREFIX}/{self.map_run_arn().rsplit(':', 1)[-1]}/manifest.json"

    def entries(self, manifest: dict[str, Any], status: str) -> list[dict[str, Any]]:
        return [e for f in manifest["ResultFiles"][status] for e in self.read(f["Key"])]


def test_express_item_processor_deploys_and_runs(cloud: LocalCloud) -> None:
    described = boto3.client("stepfunctions").describe_state_machine(
        stateMachineArn=cloud.outputs["ZeroToleranceArn"]
    )
    processor = json.loads(described["definition"])["States"]["TransformChunks"]
    assert processor["ItemProcessor"]["ProcessorConfig"]["ExecutionType"] == "EXPRESS"

    run = Run(cloud, "ZeroToleranceArn", [{"n": 1}, {"n": 2}])

    assert run.described["status"] == "SUCCEEDED"
    assert set(run.output["chunks"]) == {"MapRunArn", "ResultWriterDetails"}
    assert run.output["chunks"]["MapRunArn"] == run.map_run_arn()


def test_result_writer_writes_each_childs_output_where_the_manifest_points(
    cloud: LocalCloud,
) -> None:
    chunks = [{"n": n} for n in range(5)]
    run = Run(cloud, "ZeroToleranceArn", chunks)
    assert run.described["status"] == "SUCCEEDED", run.described

    details = run.output["chunks"]["ResultWriterDetails"]
    map_run_arn = run.output["chunks"]["MapRunArn"]
    assert details == {"Bucket": run.bucket, "Key": run.manifest_key()}
    manifest = run.read(details["Key"])
    assert manifest["DestinationBucket"] == run.bucket
    assert manifest["MapRunArn"] == map_run_arn
    assert manifest["ResultFiles"]["FAILED"] == manifest["ResultFiles"]["PENDING"] == []
    folder = details["Key"].rsplit("/", 1)[0]
    assert [f["Key"] for f in manifest["ResultFiles"]["SUCCEEDED"]] == [
        f"{folder}/SUCCEEDED_0.json"
    ]
    for listed in manifest["ResultFiles"]["SUCCEEDED"]:
        assert listed["Size"] == run.size(listed["Key"])

    entries = run.entries(manifest, "SUCCEEDED")
    outputs = sorted((json.loads(e["Output"])["result"] for e in entries), key=lambda r: r["index"])
    assert outputs == [
        {"doubled": n * 2, "index": n, "object": {"key": "incoming/x.csv"}} for n in range(5)
    ]
    for entry in entries:
        assert entry["Status"] == "SUCCEEDED"
        assert entry["InputDetails"] == entry["OutputDetails"] == {"Included": True}
        child_input = json.loads(entry["Input"])  # what the ItemSelector made of the item
        assert child_input["chunk"] == chunks[child_input["index"]]
        assert child_input["executionArn"] == run.arn  # $$.Execution.Id: the parent
        assert entry["ExecutionArn"].endswith(f"/Chunks:{entry['Name']}")
        assert entry["StateMachineArn"].endswith("/Chunks")
        assert entry["StartDate"] <= entry["StopDate"]
        assert {"RedriveCount", "RedriveStatus"} <= set(entry)


def test_a_typed_error_caught_in_the_child_is_a_succeeded_child(cloud: LocalCloud) -> None:
    run = Run(cloud, "ZeroToleranceArn", [{"n": 1}, {"n": 2, "fail": "typed"}])

    assert run.described["status"] == "SUCCEEDED"
    manifest = run.read(run.output["chunks"]["ResultWriterDetails"]["Key"])
    by_index = {
        json.loads(e["Input"])["index"]: json.loads(e["Output"])
        for e in run.entries(manifest, "SUCCEEDED")
    }
    assert by_index[0]["result"]["doubled"] == 2
    assert by_index[1]["error"]["Error"] == "SomeTypedError"  # ReportChunkError's output
    assert manifest["ResultFiles"]["FAILED"] == []


def test_a_failed_child_fails_the_map_run_and_the_map_catch_handles_it(
    cloud: LocalCloud,
) -> None:
    run = Run(cloud, "ZeroToleranceArn", [{"n": 1}, {"n": 2, "fail": "untyped"}, {"n": 3}])

    assert run.described["status"] == "SUCCEEDED"  # the Map state's Catch -> MapFailed
    assert run.output["error"] == {
        "Error": "States.ExceedToleratedFailureThreshold",
        "Cause": "The specified tolerated failure threshold was exceeded",
    }
    assert "chunks" not in run.output
    history = run.sfn.get_execution_history(executionArn=run.arn)["events"]
    assert [e["type"] for e in history if e["type"].startswith("MapRun")] == [
        "MapRunStarted",
        "MapRunFailed",
    ]
    assert run.sfn.describe_map_run(mapRunArn=run.map_run_arn())["status"] == "FAILED"

    # The results were written before the Map state failed.
    manifest = run.read(run.manifest_key())
    (failed,) = run.entries(manifest, "FAILED")
    assert failed["Status"] == "FAILED"
    assert failed["Error"] == "ValueError"
    assert json.loads(failed["Cause"])["errorMessage"] == "untyped failure of chunk 1"
    assert json.loads(failed["Input"])["index"] == 1
    assert "Output" not in failed
    succeeded = run.entries(manifest, "SUCCEEDED")
    assert sorted(json.loads(e["Input"])["index"] for e in succeeded) == [0, 2]


def test_failures_within_the_tolerated_count_let_the_map_succeed(cloud: LocalCloud) -> None:
    one_failure = [{"n": 1}, {"n": 2, "fail": "untyped"}, {"n": 3}]
    run = Run(cloud, "ToleratesOneArn", one_failure)

    assert run.described["status"] == "SUCCEEDED"
    assert "error" not in run.output
    manifest = run.read(run.output["chunks"]["ResultWriterDetails"]["Key"])
    assert len(run.entries(manifest, "FAILED")) == 1
    assert len(run.entries(manifest, "SUCCEEDED")) == 2

    two_failures = Run(cloud, "ToleratesOneArn", [*one_failure, {"n": 4, "fail": "untyped"}])
    assert two_failures.output["error"]["Error"] == "States.ExceedToleratedFailureThreshold"
