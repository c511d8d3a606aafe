"""The large-file path with chunks big enough for S3 to copy their outputs (its own local
cloud: 6 MiB chunks; test_large_file_path.py's stack uses 1 MiB ones)."""

from __future__ import annotations

import pytest

from ingest_tools.local_pipeline import local_pipeline
from tests.statemachine.test_large_file_path import (
    KEY,
    chunk_count,
    orders,
    single_path_output,
)

pytestmark = pytest.mark.statemachine


def test_big_chunk_outputs_are_copied_by_s3() -> None:
    """Chunk outputs of 5 MiB and more become parts by UploadPartCopy (the small ones above
    are joined in memory): the output is still the single path's, byte for byte."""
    with local_pipeline(
        parameters={"LargeObjectThresholdMiB": "1", "LargeObjectChunkMiB": "6"}
    ) as pipeline:
        body = orders(230_000)  # about 15 MiB: chunks of 6, 6 and 3 MiB
        _, handoff = pipeline.ingest(KEY, body, timeout=180)
        run = pipeline.handed_over_to(handoff, timeout=180)
        assert run.status == "SUCCEEDED", run.cause
        assert chunk_count(pipeline, run.arn) == 3
        out = pipeline.output_key(KEY)
        head = pipeline.s3.head_object(Bucket=pipeline.bucket, Key=out, PartNumber=1)
        assert head["PartsCount"] == 3
        assert head["ContentLength"] >= 5 * 1024 * 1024  # part 1 was copied whole
        assert pipeline.read(out) == single_path_output(body)
