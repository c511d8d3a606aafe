"""The whole event graph from template.yaml: S3 put -> EventBridge -> Step Functions -> ..."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ingest_tools.local_pipeline import Pipeline, app_cloud
from localcloud.cloud import LocalCloud


@pytest.fixture
def cloud() -> Iterator[LocalCloud]:
    with app_cloud() as running:
        yield running


@pytest.fixture
def pipeline(cloud: LocalCloud) -> Pipeline:
    return Pipeline(cloud)


@pytest.fixture
def p(pipeline: Pipeline) -> Pipeline:
    """The pipeline under its short name (modules with a stack of their own override it)."""
    return pipeline
