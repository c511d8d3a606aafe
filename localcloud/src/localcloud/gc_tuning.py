"""The cyclic garbage collector, tuned for a process that runs local clouds.

A local cloud allocates a great many short-lived containers (botocore's requests and
responses, moto's models and serialisations) on top of a large heap that lives as long as the
process (moto, botocore's service models, the deployed stack). With CPython's defaults (a
collection every 700 new containers, the older generations scanned again and again as the heap
grows) the collector took about a quarter of a process's start (imports and the first deploy:
6.0-7.4 -> 4.3-5.7 s of CPU) and 4-12 % of a test run.

The settings are the whole process's, so they are for the processes' owners (``localcloud
up``, an application's own command, a test suite's conftest), not something LocalCloud does:

* ``tune()`` starts a collection after 50,000 new containers instead of 700; call it first;
* ``freeze()`` moves what is alive (the long-lived heap) out of every later collection
  (``gc.freeze``); call it once the process has loaded what it keeps.
"""

from __future__ import annotations

import gc

__all__ = ["THRESHOLDS", "freeze", "tune"]

THRESHOLDS = (50_000, 20, 100)


def tune() -> None:
    gc.set_threshold(*THRESHOLDS)


def freeze() -> None:
    gc.collect()
    gc.freeze()
