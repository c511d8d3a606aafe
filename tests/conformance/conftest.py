"""The whole event graph from template.yaml: S3 put -> EventBridge -> Step Functions -> ..."""

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
