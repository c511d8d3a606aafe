"""Operator tooling for the S3 ingestion pipeline: ingestctl and the local cloud."""

from pathlib import Path

# Here, not in local_pipeline (which loads the local cloud, and moto with it: ~2.5 s of CPU),
# so that ingestctl's commands for AWS start without it.
ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
STACK_NAME = "ingest-local"  # the stack of every local cloud of this app (AWS::StackName)
