"""Suite-wide hooks."""

from __future__ import annotations

import os

import pytest

# The handlers' Powertools Logger and Metrics read POWERTOOLS_SERVICE_NAME once, when their
# module is first imported: in a test process, by whichever test imports them first. The
# template sets it to the stack name; this is the local cloud's default stack name, so the
# metrics the in-process functions emit carry the `service` dimension the deployed alarms and
# dashboard of that stack read, whatever order the tests run in.
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "ingest-local")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run first. Under ``make test`` (pytest-xdist, one worker per core)
    the 1,000-object burst then runs beside the rest of the suite instead of after it. The
    order within each group is unchanged."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
