"""The whole event graph from template.yaml: S3 put -> EventBridge -> Step Functions -> ..."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported by the fixtures: a run of test_external_endpoint.py alone (against
    # LocalStack, AWS or `ingestctl local up`) does not load the local cloud (~2.5 s of CPU)
    from ingest_tools.local_pipeline import Pipeline
    from localcloud.cloud import LocalCloud

# Modules whose every test leaves the stack as the next one needs it: they only ask it
# questions whose answers no test changes (EventBridge TestEventPattern; the last test also
# serves the cloud over HTTP and moves an empty dead-letter queue), so one stack per module
# (per xdist worker) does instead of a deploy per test (~0.8 s of CPU each). A module whose
# tests change what the others assert must not be listed.
SHARED_STACK_MODULES = frozenset({"tests.e2e.test_localcloud_fidelity_event_patterns"})


@pytest.fixture(scope="module")
def module_cloud() -> Iterator[LocalCloud]:
    """One LocalCloud for a whole module of SHARED_STACK_MODULES."""
    from ingest_tools.local_pipeline import app_cloud

    with app_cloud() as running:
        yield running


@pytest.fixture
def cloud(request: pytest.FixtureRequest) -> Iterator[LocalCloud]:
    """A LocalCloud of template.yaml for this test alone (shared by the module's tests in
    SHARED_STACK_MODULES)."""
    if request.module.__name__ in SHARED_STACK_MODULES:
        yield request.getfixturevalue("module_cloud")
        return
    from ingest_tools.local_pipeline import app_cloud

    with app_cloud() as running:
        yield running


@pytest.fixture
def pipeline(cloud: LocalCloud) -> Pipeline:
    from ingest_tools.local_pipeline import Pipeline

    return Pipeline(cloud)


@pytest.fixture
def p(pipeline: Pipeline) -> Pipeline:
    """The pipeline under its short name (modules with a stack of their own override it)."""
    return pipeline
