"""A first burst of concurrent calls to a service (fixes/service_routers.py): every caller is
answered, and the service's botocore model is loaded once, not once per thread that asked
before the first load was done.

The load is slowed (50 ms more) so that every thread of the burst asks while it runs, as the
first Lambda invocations of a burst of executions did.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core import routing
from moto.core import utils as moto_utils

from localcloud import registry
from localcloud.patching import PatchSet
from localcloud.runtime import Runtime

pytestmark = [pytest.mark.e2e]

NAME = "service-routers-once"
CALLERS = 20


@pytest.fixture
def lambda_api() -> Iterator[Any]:
    runtime = Runtime()
    chosen = PatchSet(p for p in registry.patch_set() if p.name == NAME)  # LOCALCLOUD_WITHOUT
    routing.get_service_router.cache_clear()  # as in a new process (moto's caches)
    moto_utils.get_service_model.cache_clear()
    with mock_aws():
        chosen.install(runtime)
        try:
            yield boto3.client("lambda", region_name="us-east-1")
        finally:
            chosen.uninstall()
            runtime.close()


def test_a_first_burst_of_calls_is_answered_from_one_model_load(
    lambda_api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[str] = []
    load = moto_utils._load_service_model

    def slow_load(service: str, model: str) -> Any:
        loads.append(service)
        time.sleep(0.05)
        return load(service, model)

    monkeypatch.setattr(moto_utils, "_load_service_model", slow_load)
    start = threading.Barrier(CALLERS)
    answers: list[Any] = []

    def call() -> None:
        start.wait()
        answers.append(lambda_api.list_functions()["Functions"])

    threads = [threading.Thread(target=call) for _ in range(CALLERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert answers == [[]] * CALLERS
    assert loads.count("lambda") == 1, loads
