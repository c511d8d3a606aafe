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


# Calls the suite provokes to be refused in clouds of the unchanged template.yaml, each for a
# reason a test asserts. Any other refusal means the template lacks a grant its code uses.
EXPECTED_REFUSALS = {
    # test_localcloud_iam.py: a handler's thread acts as its function's role (no S3 access)
    "ClassifyErrorFunctionRole s3:GetObject",
    # test_localcloud_iam.py: the rule's role loses its policy (deleted at run time)
    "PipelineStateMachineObjectCreatedRole states:StartExecution",
    # test_doctor.py: ReconcileQueue's policy denies the schedule's role (a ReconcileScheduleDLQ
    # dead letter made the way AWS makes one)
    "ReconcileSchedulerRole sqs:SendMessage",
}


_CHECK = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    """The check below belongs to the run ``make pytest`` starts: taken out of the
    environment, so that a pytest this suite runs in a subprocess does not repeat it."""
    if not hasattr(config, "workerinput"):
        config.stash[_CHECK] = os.environ.pop("LOCALCLOUD_IAM_CHECK", "") == "1"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """``make test``: the suite proves template.yaml's permissions. Each local cloud logged
    its IAM decisions to LOCALCLOUD_IAM_LOG; in clouds of the unchanged template, (1) no call
    of the stack's principals was refused beyond EXPECTED_REFUSALS (so removing a statement
    that something used fails the run), and (2) every Allow statement was needed by a call
    (re-evaluated with it removed) or is justified in Metadata.LocalCloud.UnusedGrants.
    Runs once, in the controlling process, after every xdist worker has finished."""
    log = os.environ.get("LOCALCLOUD_IAM_LOG")
    if not log or not session.config.stash.get(_CHECK, False) or exitstatus != 0:
        return
    from pathlib import Path

    from ingest_tools.local_pipeline import TEMPLATE
    from localcloud.iam import report
    from localcloud.stack import load_template

    merged = report.merge(Path(log), TEMPLATE)
    problems = [
        f"refused: {r}" for r in report.refused(Path(log), TEMPLATE) if r not in EXPECTED_REFUSALS
    ]
    problems += [f"unused: {u}" for u in report.unused(merged, load_template(TEMPLATE))]
    if not merged:
        problems.append(f"no IAM decisions logged in {log}")
    writer = session.config.pluginmanager.get_plugin("terminalreporter")
    if problems:
        writer.write_line(
            "least privilege: template.yaml's grants do not match what the suite did "
            f"(ingestctl local iam-report {log}):",
            red=True,
        )
        for problem in problems:
            writer.write_line(f"  {problem}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    else:
        needed = sum(1 for e in merged.values() if e["needed"])
        writer.write_line(
            f"least privilege: {needed} grants of template.yaml needed, the rest justified; "
            "no unexpected refusal"
        )
