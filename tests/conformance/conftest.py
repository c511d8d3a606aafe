"""The local cloud for the conformance samples (as tests/e2e)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ingest_tools.localcloud.cloud import LocalCloud
from ingest_tools.localcloud.pipeline import Pipeline


@pytest.fixture
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud() as running:
        yield running


@pytest.fixture
def pipeline(cloud: LocalCloud) -> Pipeline:
    return Pipeline(cloud)


@pytest.fixture
def p(pipeline: Pipeline) -> Pipeline:
    return pipeline
