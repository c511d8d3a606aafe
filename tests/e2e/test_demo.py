"""`make demo` says "as expected" only when every column it prints is what its scenario
expects: with one statement of template.yaml deleted, the row it breaks is marked !!, the
verdict names the column (expected, then got) and the command exits 1; the template as it
is passes every scenario with exit 0.

Each run deploys a copy of the template (tests.support.template_copy, in tmp_path: the
suite's least-privilege check reads only the clouds of template.yaml itself) and runs only
the scenarios the deletion reaches (``run_demo(scenarios=...)``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ingest_tools import cli
from ingest_tools.demo import SCENARIOS, run_demo
from tests.support import template_copy

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # five deploys: about 16 s in all

TIMES = "\N{MULTIPLICATION SIGN}"  # the Notifications column: topic, this sign, count
Edit = Callable[[dict[str, Any]], None]
Matches = Callable[[dict[str, Any]], bool]


def _statements(props: dict[str, Any]) -> list[tuple[list[Any], int]]:
    """(list, index) of each policy of a function or state machine (its Policies, SAM policy
    templates included, and their statements) or of a queue policy (its statements)."""
    lists = [props.get("Policies", [])]
    lists += [p["Statement"] for p in props.get("Policies", []) if "Statement" in p]
    lists += [props[k]["Statement"] for k in ("PolicyDocument",) if k in props]
    return [(items, i) for items in lists for i in range(len(items))]


def without(resource: str, matches: Matches) -> Edit:
    """Delete the one statement (or SAM policy template) of ``resource`` that ``matches``."""

    def edit(template: dict[str, Any]) -> None:
        props = template["Resources"][resource]["Properties"]
        found = [(items, i) for items, i in _statements(props) if matches(items[i])]
        assert len(found) == 1, f"{resource}: {len(found)} statements match, not one"
        items, i = found[0]
        del items[i]
        assert not any(matches(items[i]) for items, i in _statements(props))

    return edit


def sid(name: str) -> Matches:
    return lambda statement: statement.get("Sid") == name


def publish_to_operations(policy: dict[str, Any]) -> bool:
    """The state machine's ``SNSPublishMessagePolicy`` of the OperationsTopic."""
    return "SNSPublishMessagePolicy" in policy and "OperationsTopic" in json.dumps(policy)


def demo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Edit | None, *names: str
) -> tuple[int, list[str]]:
    """run_demo on a copy of the template: (exit status, the lines it printed)."""
    template = template_copy(tmp_path, edit)
    code = run_demo(template, scenarios=names, lambda_logs=tmp_path / "lambda-logs.jsonl")
    return code, capsys.readouterr().out.splitlines()


def marked(lines: list[str]) -> dict[str, str]:
    """Scenario -> the table's first column (ok or !!) for each row printed."""
    names = {s.name for s in SCENARIOS}
    rows: dict[str, str] = {}
    for line in lines:
        mark, _, rest = line.partition("  ")
        name = next((n for n in names if rest.startswith(f"{n}  ")), None)
        if mark in {"ok", "!!"} and name:
            rows[name] = mark
    return rows


def differences(lines: list[str]) -> dict[tuple[str, str], tuple[str, str]]:
    """(scenario, column) -> (expected, got), from the verdict's !! lines."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for i, line in enumerate(lines):
        if line.startswith("     expected  "):
            scenario, column = lines[i - 1].removeprefix("!! ").split(": ", 1)
            got = lines[i + 1].removeprefix("     got       ")
            out[scenario, column] = (line.removeprefix("     expected  "), got)
    return out


DELETIONS = {
    # the quarantine copy is refused: a CONFIGURATION failure pages operations instead
    "WriteQuarantine": (
        without("QuarantineFunction", sid("WriteQuarantine")),
        ["bad data"],
        {
            ("bad data", "DynamoDB state"): ("FAILED (PERMANENT)", "FAILED (CONFIGURATION)"),
            ("bad data", "Notifications"): (f"data-quality{TIMES}1", f"operations{TIMES}1"),
            ("bad data", "Path through the states"): (
                "ClaimObject → ProcessObject → QuarantineObject → RecordRejection → "
                "NotifyDataQuality → FailExecution",
                "ClaimObject → ProcessObject → QuarantineObject → "
                "DescribeConfigurationFailure → RecordConfigurationFailure → "
                "NotifyOperations → FailExecution",
            ),
        },
    ),
    # the topics' key refuses the state machine: neither notification is sent
    "EncryptNotifications": (
        without("PipelineStateMachine", sid("EncryptNotifications")),
        ["bad data", "access denied (KMS)"],
        {
            ("bad data", "Notifications"): (f"data-quality{TIMES}1", "-"),
            ("access denied (KMS)", "Notifications"): (f"operations{TIMES}1", "-"),
        },
    ),
    # the DLQ's policy no longer admits the rule: the dead letter is lost
    "AllowObjectCreatedRuleOnly": (
        without("EventDeliveryDLQPolicy", sid("AllowObjectCreatedRuleOnly")),
        ["failed delivery -> DLQ"],
        {("failed delivery -> DLQ", "DLQ"): ("1 (THROTTLING)", "-")},
    ),
    # the page to operations is refused
    "SNSPublishMessagePolicy OperationsTopic": (
        without("PipelineStateMachine", publish_to_operations),
        ["access denied (KMS)"],
        {("access denied (KMS)", "Notifications"): (f"operations{TIMES}1", "-")},
    ),
}


@pytest.mark.parametrize("deleted", list(DELETIONS))
def test_a_deleted_statement_fails_the_demo_naming_row_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], deleted: str
) -> None:
    edit, names, expected = DELETIONS[deleted]
    code, lines = demo(tmp_path, capsys, edit, *names)
    assert code == 1, "\n".join(lines)
    assert differences(lines) == expected, "\n".join(lines)
    assert marked(lines) == dict.fromkeys(names, "!!")
    assert f"0/{len(names)} scenarios ended as expected" in "\n".join(lines)


def test_the_template_as_it_is_passes_every_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = demo(tmp_path, capsys, None)
    assert code == 0, "\n".join(lines)
    assert marked(lines) == {s.name: "ok" for s in SCENARIOS}
    assert not differences(lines)
    assert f"{len(SCENARIOS)}/{len(SCENARIOS)} scenarios ended as expected" in "\n".join(lines)


def test_an_unknown_scenario_exits_2_before_deploying(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["local", "demo", "--scenario", "no such thing"]) == 2
    assert "no such scenario" in capsys.readouterr().err
