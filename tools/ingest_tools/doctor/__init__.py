"""``ingestctl doctor``: is a deployed stack able to ingest, and what is waiting on someone?

``checks`` runs the checks (``run(Context) -> Report``), which live in one module per area:
``event_path`` (S3 -> EventBridge), ``workflow``, ``dead_letters`` (one check per dead-letter
queue), ``reconcile`` (open state records, the reconcile schedule) and ``alarms``; ``report``
is what they return, ``queue_policy`` the dead-letter queue policy evaluation.

Exit codes (``Report.exit_code``; ``ingestctl doctor``, text or ``--json`` alike):

* 0: healthy. No check FAILs; WARNs are reported (with ``--strict``, none WARNs either).
* 1: a check FAILs: something needs a person. A message in any dead-letter queue is one:
  ``dead-letters:<Queue>`` names the queue, the count, the oldest message's age, the error
  codes and the ``ingestctl redrive <Queue>`` command.
* 2: doctor could not run (no ``--stack`` / ``--outputs``, an unreadable outputs file, no
  such stack).
"""

from __future__ import annotations

from ingest_tools.doctor.checks import run
from ingest_tools.doctor.context import Clients, Context
from ingest_tools.doctor.report import Check, Report, Status

__all__ = ["Check", "Clients", "Context", "Report", "Status", "run"]
