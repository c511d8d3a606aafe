"""The local cloud for the conformance samples: the fixtures of tests/e2e; and the published
access-denied samples (samples/access-denied-*) both test_access_denied_*.py files read."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.e2e.conftest import cloud, p, pipeline

__all__ = [
    "ACCOUNT",
    "MACHINE",
    "QUEUE_URL",
    "REGION",
    "S3_UG",
    "SAMPLES",
    "TOPIC",
    "cloud",
    "observed",
    "p",
    "pipeline",
    "sample_json",
    "xml_text",
]

SAMPLES = Path(__file__).parent / "samples"
ACCOUNT = "123456789012"  # moto's default account
REGION = "us-east-1"
TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:ingest-OperationsTopic"
QUEUE_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/ingest-ReconcileQueue"
MACHINE = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:ingest-Pipeline"


def sample_json(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text())


OBSERVED = sample_json("access-denied-observed-messages.json")["entries"]
S3_UG = sample_json("access-denied-s3-ug-message-examples.json")


def observed(source: str) -> dict[str, Any]:
    """The one observed access-denied message whose source contains ``source``."""
    found = [e for e in OBSERVED if source in e["source"]]
    assert len(found) == 1, f"{source}: {len(found)} entries"
    return found[0]


def xml_text(name: str, tag: str) -> str:
    """The text of ``<tag>`` in a saved XML error body (a flat body: no parser needed)."""
    match = re.search(f"<{tag}>([^<]*)</{tag}>", (SAMPLES / name).read_text())
    assert match, f"no <{tag}> in {name}"
    return match[1]
