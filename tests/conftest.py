"""Suite-wide hooks."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run first. Under ``make test`` (pytest-xdist, one worker per core)
    the 1,000-object burst then runs beside the rest of the suite instead of after it. The
    order within each group is unchanged."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
