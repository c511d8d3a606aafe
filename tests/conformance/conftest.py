"""The local cloud for the conformance samples: the fixtures of tests/e2e."""

from __future__ import annotations

import pytest

from ingest_tools.local_pipeline import Pipeline
from tests.e2e.conftest import cloud, pipeline

__all__ = ["cloud", "p", "pipeline"]


@pytest.fixture
def p(pipeline: Pipeline) -> Pipeline:
    return pipeline
