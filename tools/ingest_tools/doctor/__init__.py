"""``ingestctl doctor``: is a deployed stack able to ingest, and what is waiting on someone?

``checks`` holds the checks (``run(Context) -> Report``), ``report`` what they return,
``queue_policy`` the dead-letter queue policy evaluation.
"""

from __future__ import annotations

from ingest_tools.doctor.checks import Clients, Context, run
from ingest_tools.doctor.report import Check, Report, Status

__all__ = ["Check", "Clients", "Context", "Report", "Status", "run"]
