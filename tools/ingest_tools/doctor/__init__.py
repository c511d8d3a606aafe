"""``ingestctl doctor``: is a deployed stack able to ingest, and what is waiting on someone?

``checks`` holds the checks (``run(Context) -> Report``), ``dead_letters`` the check of each
dead-letter queue, ``report`` what they return, ``queue_policy`` the dead-letter queue policy
evaluation.

Exit codes (``Report.exit_code``; ``ingestctl doctor``, text or ``--json`` alike):

* 0: healthy. No check FAILs; WARNs are reported (with ``--strict``, none WARNs either).
* 1: a check FAILs: something needs a person. A message in any dead-letter queue is one:
  ``dead-letters:<Queue>`` names the queue, the count, the oldest message's age, the error
  codes and the ``ingestctl redrive <Queue>`` command.
* 2: doctor could not run (no ``--stack`` / ``--outputs``, an unreadable outputs file, no
  such stack).
"""

from __future__ import annotations

from ingest_tools.doctor.checks import Clients, Context, run
from ingest_tools.doctor.report import Check, Report, Status

__all__ = ["Check", "Clients", "Context", "Report", "Status", "run"]
