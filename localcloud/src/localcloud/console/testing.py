"""For browser tests of the console (the package's and an application's): the system's
Chromium (Debian's ``chromium`` package, or ``LOCALCLOUD_CHROMIUM``) driven by Playwright
(Python), never Playwright's own browser downloads.

``skip_reason()`` says why such a test cannot run here (None: it can); ``launch(playwright)``
starts the headless browser with the arguments the tests use. Imports neither pytest nor
Playwright itself, so importing it never fails.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

__all__ = ["ARGS", "TIMEOUT_MS", "chromium", "launch", "skip_reason"]

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 15_000


def chromium() -> str:
    """The Chromium executable to drive."""
    return os.environ.get("LOCALCLOUD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def skip_reason() -> str | None:
    """Why a browser test cannot run here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (the dev extra pins it; no browser download is needed)"
    if not Path(chromium()).is_file():
        return f"no Chromium at {chromium()} (apt-get install chromium, or set LOCALCLOUD_CHROMIUM)"
    return None


def launch(playwright: Any) -> Any:
    """A headless Chromium of ``playwright`` (a started ``sync_playwright()``)."""
    return playwright.chromium.launch(executable_path=chromium(), args=ARGS, headless=True)
