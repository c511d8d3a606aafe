"""Published SAM templates (aws-samples/serverless-patterns, serverless_patterns/__init__.py)
on the local cloud: each deploys and its README's steps end as the README says, or the deploy
refuses it by the construct's name, never with a traceback."""

from __future__ import annotations

import pytest
from serverless_patterns import Pattern, patterns, steps

from localcloud.stack.base import StackDeployError

pytestmark = [pytest.mark.e2e]

PATTERNS = patterns()
STEPS = steps()
IN_SCOPE = {n: p for n, p in PATTERNS.items() if p.status != "upstream"}


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern(name: str) -> None:
    pattern = PATTERNS[name]
    if pattern.status in ("refused", "upstream", "aside") and pattern.refusal:
        with pytest.raises(StackDeployError, match=pattern.refusal), pattern.cloud():
            pass
        return
    with pattern.cloud() as cloud:
        if name in STEPS:
            STEPS[name](cloud, pattern)


def test_steps_are_of_patterns_that_deploy() -> None:
    """Steps (and pending steps, with their reason) only for patterns that deploy."""
    pending = steps("PENDING")
    deploying = {n for n, p in PATTERNS.items() if p.status in ("deploys", "aside")}
    assert STEPS.keys() <= deploying, sorted(STEPS.keys() - deploying)
    assert pending.keys() <= deploying - STEPS.keys(), sorted(pending.keys() & STEPS.keys())
    assert all(isinstance(p, Pattern) for p in PATTERNS.values())
