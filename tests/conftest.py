"""Suite-wide hooks."""

from __future__ import annotations

import os

import pytest

# The handlers' Powertools Logger and Metrics read POWERTOOLS_SERVICE_NAME once, when their
# module is first imported: in a test process, by whichever test imports them first. The
# template sets it to the stack name; this is the local cloud's default stack name, so the
# metrics the in-process functions emit carry the `service` dimension the deployed alarms and
# dashboard of that stack read, whatever order the tests run in.
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "ingest-local")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run first. Under ``make test`` (pytest-xdist, one worker per core)
    the 1,000-object burst then runs beside the rest of the suite instead of after it. The
    order within each group is unchanged."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """``make test``: every Allow statement of template.yaml must have been needed by a call
    the suite made (each cloud logged its decisions to LOCALCLOUD_IAM_LOG, re-evaluated with
    each statement removed), or be justified beside it (Metadata.LocalCloud.UnusedGrants).
    Runs once, in the controlling process, after every xdist worker has finished."""
    log = os.environ.get("LOCALCLOUD_IAM_LOG")
    if (
        not log
        or os.environ.get("LOCALCLOUD_IAM_CHECK") != "1"
        or hasattr(session.config, "workerinput")
    ):
        return
    from pathlib import Path

    from ingest_tools.localcloud.cloud import TEMPLATE
    from ingest_tools.localcloud.iam import report
    from ingest_tools.localcloud.stack import load_template

    template = load_template(TEMPLATE)
    merged = report.merge(Path(log), TEMPLATE)
    unused = report.unused(merged, template)
    writer = session.config.get_terminal_reporter()
    if not merged:
        writer.write_line(f"least privilege: no decisions logged in {log}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif unused:
        writer.write_line(
            "least privilege: these Allow statements of template.yaml allowed nothing the suite "
            "needed; remove them or justify them in Metadata.LocalCloud.UnusedGrants "
            f"(ingestctl local iam-report {log}):",
            red=True,
        )
        for name in unused:
            writer.write_line(f"  {name}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    else:
        needed = sum(1 for e in merged.values() if e["needed"])
        writer.write_line(f"least privilege: all {needed} needed grants of template.yaml were used")
