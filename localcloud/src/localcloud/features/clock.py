"""The local cloud's clock: retries, Wait states and delivery backoff in virtual time.

``Clock.scale`` 0 (the default) runs every wait at once and records it; 1.0 is real time;
0.01 is a hundred times faster. Three places wait (moto 5.2.x):

* the workflow's Retry: ``JitterStrategyDecl._eval_body``
  (asl/component/common/retry/jitter_strategy_decl.py) is the last step before
  ``RetrierDecl._eval_body`` sleeps ``interval`` (retrier_decl.py). The replacement records
  the computed interval (after BackoffRate, MaxDelaySeconds and FULL jitter) per execution
  and state, and hands on ``interval * scale``;
* Wait states: ``WaitFunction._wait_interval`` records the seconds and waits ``scale`` of them;
* botocore's retry backoff (``botocore.endpoint`` calls ``time.sleep``): the Lambdas', the
  tools' and the local cloud's own clients sleep on this clock, like EventBridge's
  RetryPolicy and Scheduler's (``Clock.sleep``).
"""

from __future__ import annotations

import time
from typing import Any

import botocore.endpoint as botocore_endpoint
from moto.stepfunctions.parser.asl.component.common.retry import jitter_strategy_decl
from moto.stepfunctions.parser.asl.component.state.wait.wait_function import wait_function

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Clock, Runtime

__all__ = ["PATCHES"]


class _ClockTime:
    """``botocore.endpoint``'s view of the ``time`` module, sleeping on the clock."""

    def __init__(self, clock: Clock) -> None:
        self.sleep = clock.sleep

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def _build(rt: Runtime) -> Targets:
    clock = rt.clock
    jitter_eval = jitter_strategy_decl.JitterStrategyDecl._eval_body

    def eval_jitter(self: Any, env: Any) -> None:
        jitter_eval(self, env)
        interval = env.stack.pop()
        clock.record(clock.retry_sleeps, env, interval)
        env.stack.append(interval * clock.scale)

    def wait_interval(self: Any, env: Any, wait_seconds: float) -> None:
        clock.record(clock.waits, env, wait_seconds)
        if clock.scale and wait_seconds > 0:
            env.program_state_event.wait(wait_seconds * clock.scale)

    return {
        (jitter_strategy_decl.JitterStrategyDecl, "_eval_body"): eval_jitter,
        (wait_function.WaitFunction, "_wait_interval"): wait_interval,
        (botocore_endpoint, "time"): _ClockTime(clock),
    }


PATCHES = [
    Patch(
        name="virtual-clock",
        kind=Kind.FEATURE,
        reason="Retry backoff, Wait states and SDK retries run on a virtual (or scaled) clock and "
        "are recorded, so a 6-hour retry schedule is tested in milliseconds and asserted exactly.",
        test="tests/e2e/test_event_graph.py::test_transient_errors_recover_with_retries",
        build=_build,
    )
]
