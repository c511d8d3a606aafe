"""Run the real template and ASL on moto's Step Functions engine, handlers in-process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ingest_tools.local_pipeline import (
    MOTO_CONFIG,
    REGION,
    Execution,
    Pipeline,
    local_pipeline,
)

__all__ = ["MOTO_CONFIG", "REGION", "Execution", "Pipeline"]


@pytest.fixture
def pipeline() -> Iterator[Pipeline]:
    with local_pipeline() as running:
        yield running
