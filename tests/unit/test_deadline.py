"""The time budget: an object that cannot finish before the function's Timeout is stopped
early with a configuration error that names its size, the limit and the rate (pure logic)."""

from __future__ import annotations

import pytest

from ingest_pipeline.errors import ErrorClass, ObjectTooLargeError
from ingest_pipeline.logic.deadline import TimeBudget

pytestmark = pytest.mark.unit

MB = 1_000_000


def test_an_object_that_fits_is_left_alone() -> None:
    budget = TimeBudget(size=500 * MB, limit_seconds=300)
    # 10 s for 50 MB: 5 MB/s, the other 450 MB need 90 s of the 290 s left.
    budget.check(done=50 * MB, elapsed=10, remaining=290)


def test_an_object_that_cannot_finish_is_stopped_with_its_figures() -> None:
    budget = TimeBudget(size=3_000 * MB, limit_seconds=300)
    with pytest.raises(ObjectTooLargeError) as raised:
        budget.check(done=10 * MB, elapsed=5, remaining=295)  # 2 MB/s: 1,500 s in all
    error = raised.value
    assert error.error_class is ErrorClass.CONFIGURATION and error.code == "OBJECT_TOO_LARGE"
    assert error.details == {
        "size": 3_000 * MB,
        "limitSeconds": 300,
        "bytesPerSecond": 2 * MB,
        "neededSeconds": 1500,
    }
    assert "a 3.0 GB object cannot be processed in the 300 s" in error.message
    assert "about 1500 s" in error.message and "MemorySize" in error.message


def test_the_margin_is_kept_for_finishing_the_upload() -> None:
    budget = TimeBudget(size=100 * MB, limit_seconds=300)
    assert budget.margin_seconds == 15
    # 1 MB/s: the other 90 MB need 90 s; 100 s are left, but 15 of them are the margin.
    budget.check(done=10 * MB, elapsed=10, remaining=105)
    with pytest.raises(ObjectTooLargeError):
        budget.check(done=10 * MB, elapsed=10, remaining=104)


def test_no_projection_before_the_warm_up_or_when_nothing_is_left() -> None:
    budget = TimeBudget(size=10_000 * MB, limit_seconds=300)
    assert budget.warmup_seconds == 5
    budget.check(done=1, elapsed=4.9, remaining=295)  # too early to know the rate
    budget.check(done=0, elapsed=60, remaining=240)  # nothing read yet
    budget.check(done=10_000 * MB, elapsed=200, remaining=100)  # all read


def test_short_limits_scale_the_warm_up_and_the_margin() -> None:
    budget = TimeBudget(size=100 * MB, limit_seconds=3)
    assert budget.warmup_seconds == pytest.approx(0.3) == budget.margin_seconds
    with pytest.raises(ObjectTooLargeError):
        budget.check(done=1 * MB, elapsed=0.5, remaining=2.5)
