"""checkov skips in template.yaml: each one names a check and says why it does not apply.

`make lint` runs checkov on the template and fails on any failed check. A check that does not
apply to a resource is skipped in that resource's Metadata (checkov reads it from the raw
template, AWS::Serverless::* resources included):

    Metadata:
      checkov:
        skip:
          - id: CKV_AWS_117
            comment: Reaches only S3 ...

A skip without a reason hides a finding nobody can review, so every entry needs both.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest

from ingest_tools.local_pipeline import ROOT, TEMPLATE
from localcloud.stack import load_template

pytestmark = pytest.mark.unit

CHECK_ID = re.compile(r"CKV2?_AWS_\d+")


def _skips() -> list[tuple[str, Any]]:
    resources = load_template(TEMPLATE)["Resources"]
    found = []
    for logical_id, resource in resources.items():
        checkov = (resource.get("Metadata") or {}).get("checkov")
        if checkov is None:
            continue
        assert isinstance(checkov, dict), f"{logical_id}: Metadata.checkov is not a mapping"
        assert set(checkov) == {"skip"}, f"{logical_id}: Metadata.checkov has {sorted(checkov)}"
        assert isinstance(checkov["skip"], list), f"{logical_id}: checkov.skip is not a list"
        found += [(logical_id, entry) for entry in checkov["skip"]]
    return found


SKIPS = _skips()


def test_the_template_has_checkov_skips() -> None:
    # guards the parametrization below against a template layout it no longer reads
    assert SKIPS


@pytest.mark.parametrize(
    ("logical_id", "entry"), SKIPS, ids=[f"{lid}-{e.get('id')}" for lid, e in SKIPS]
)
def test_every_checkov_skip_has_a_check_id_and_a_one_line_reason(
    logical_id: str, entry: Any
) -> None:
    assert isinstance(entry, dict), f"{logical_id}: skip entry {entry!r} is not a mapping"
    assert set(entry) == {"id", "comment"}, f"{logical_id}: skip entry keys {sorted(entry)}"
    assert isinstance(entry["id"], str), logical_id
    assert CHECK_ID.fullmatch(entry["id"]), f"{logical_id}: {entry['id']!r} is not a check id"
    comment = entry["comment"]
    assert isinstance(comment, str), f"{logical_id} {entry['id']}: comment is not text"
    assert comment.strip(), f"{logical_id} {entry['id']}: empty comment"
    assert "\n" not in comment.strip(), f"{logical_id} {entry['id']}: comment is not one line"


def test_a_check_is_skipped_at_most_once_per_resource() -> None:
    seen: set[tuple[str, str]] = set()
    for logical_id, entry in SKIPS:
        key = (logical_id, entry.get("id"))
        assert key not in seen, f"{logical_id}: {entry.get('id')} skipped twice"
        seen.add(key)


def test_make_lint_runs_checkov_so_that_any_failed_check_fails_it() -> None:
    """No check is skipped wholesale on the command line, and failures are not soft."""
    makefile = (ROOT / "Makefile").read_text()
    match = re.search(r"^CHECKOV_ARGS \?= (.+)$", makefile, re.MULTILINE)
    assert match, "Makefile defines no CHECKOV_ARGS"
    args = shlex.split(match.group(1))
    assert "--skip-download" in args  # no Prisma Cloud API calls: no network needed
    banned = {"--soft-fail", "--soft-fail-on", "--skip-check", "--check", "--hard-fail-on"}
    assert not banned & {arg.split("=")[0] for arg in args}, args
    assert re.search(r"^\t\$\(CHECKOV\) \$\(CHECKOV_ARGS\)$", makefile, re.MULTILINE)
