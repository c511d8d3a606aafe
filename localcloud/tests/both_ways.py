"""The two ways a local cloud runs functions, as a fixture's ``params``: on its threads, and
in environment processes of their own where the Lambda runtime (.venv-lambda) is installed."""

from __future__ import annotations

import pytest

from localcloud.environments import default_runtime_python

BOTH_WAYS = [
    "thread",
    pytest.param(
        "process",
        marks=pytest.mark.skipif(
            not default_runtime_python().exists(), reason="no .venv-lambda (make bootstrap)"
        ),
    ),
]
