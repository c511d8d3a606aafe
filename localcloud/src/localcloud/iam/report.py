"""Least privilege, measured: which statement of the template allowed what, and which is unused.

``usage(authorizer, resources)`` re-evaluates every decision the cloud allowed with each of
the statements that allowed it removed in turn: a statement is *needed* when its removal
denies a call that was made. It also lists the actions each statement allowed. Statements
are named by the template's logical ids (``DeadLetterQueue#AllowTheRuleOnly``,
``FnRole/FnRolePolicy0#ReadIncoming``), so runs of one template merge.

A cloud started with ``LOCALCLOUD_IAM_LOG=DIR`` writes its usage to ``DIR`` when it stops
(``write``); ``merge`` combines the files of many runs (a whole pytest run, every xdist
worker) and ``render`` prints the report (``localcloud iam-report DIR``). ``unused``
lists the template's Allow statements no run needed and the template does not justify:
``Metadata: {LocalCloud: {UnusedGrants: {<Sid>: <why>}}}`` on the resource that holds the
statement (a function, state machine, role, queue, bucket or key policy). Deny statements
are guards: reported with what they refused, never required.
"""

from __future__ import annotations

import fnmatch
import json
import os
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from localcloud.iam.actions import Need
from localcloud.iam.enforcement import Authorizer
from localcloud.iam.policy import Policy, Principal, Request, evaluate

__all__ = ["LOG_VARIABLE", "denials", "merge", "refused", "render", "unused", "usage", "write"]

LOG_VARIABLE = "LOCALCLOUD_IAM_LOG"


# The service's own default policy (an SNS topic's), not a statement of the template.
_DEFAULT_STATEMENTS = frozenset({"__default_statement_ID"})


def _logical(policy_id: str, names: dict[str, str]) -> str | None:
    """role/<physical>/<policy>#<sid> -> <LogicalRole>/<policy>#<sid>, bucket/<name>#<sid> ->
    <LogicalBucket>#<sid>, ... (names: physical name -> logical id); None for what the stack
    did not create (a test's own role or queue) and for a service's default statement."""
    head, _, sid = policy_id.partition("#")
    kind, _, rest = head.partition("/")
    if sid in _DEFAULT_STATEMENTS:
        return None
    if kind == "role":
        role, _, policy = rest.partition("/")
        return f"{names[role]}/{policy}#{sid}" if role in names else None
    return f"{names[rest]}#{sid}" if rest in names else None


def _physical_names(resources: dict[str, str]) -> dict[str, str]:
    """Physical id -> logical id, keyed as the policy ids name resources (queue URL -> name,
    topic ARN -> name)."""
    names = {}
    for logical, physical in resources.items():
        names[physical.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]] = logical
        names[physical] = logical
    return names


def _without(policies: Iterable[Policy], statement: str) -> list[Policy]:
    return [
        replace(p, statements=tuple(s for s in p.statements if s.id != statement)) for p in policies
    ]


def usage(authorizer: Authorizer, resources: dict[str, str], region: str) -> dict[str, Any]:
    """Per statement (logical name): effect, actions, the actions it allowed or refused,
    whether a call needed it, how many calls it decided."""
    names = _physical_names(resources)
    out: dict[str, dict[str, Any]] = {}
    for policy in authorizer.all_policies(region):
        if policy.id.startswith(("aws-managed/", "managed/")):
            continue  # AWS's documents: not the template's to trim
        for s in policy.statements:
            name = _logical(s.id, names)
            if name is None:
                continue
            out[name] = {
                "effect": s.effect,
                "actions": list(s.actions or s.not_actions),
                "used": [],
                "needed": False,
                "calls": 0,
            }
    for decision in authorizer.decisions:
        who = decision["principal"]
        principal = Principal(arn=who) if who.startswith("arn:") else Principal(service=who)
        request = Request(principal, decision["action"], decision["resource"], decision["context"])
        identity = authorizer.identity_policies(principal.arn) if principal.arn else []
        resource, is_key = authorizer.resource_policy(Need("", decision["resource"]), region)
        ids = decision["allowed_by"] if decision["allowed"] else decision["denied_by"]
        for statement in ids:
            entry = out.get(_logical(statement, names) or "")
            if entry is None:
                continue
            entry["calls"] += decision["count"]
            if decision["action"] not in entry["used"]:
                entry["used"].append(decision["action"])
            if decision["allowed"] and not entry["needed"]:
                alone = _without([resource], statement)[0] if resource else None
                again = evaluate(request, _without(identity, statement), alone, key_policy=is_key)
                entry["needed"] = not again.allowed
    return out


def denials(authorizer: Authorizer, resources: dict[str, str]) -> list[str]:
    """The calls refused to the stack's principals, as ``<Logical principal> <action>``
    (a principal the stack did not create, such as a test's own role, is left out)."""
    names = _physical_names(resources)
    out = set()
    for decision in authorizer.decisions:
        principal = decision["principal"]
        logical = (
            names.get(principal.rsplit("/", 1)[-1]) if principal.startswith("arn:") else principal
        )
        if not decision["allowed"] and logical:
            out.add(f"{logical} {decision['action']}")
    return sorted(out)


def write(authorizer: Authorizer, resources: dict[str, str], region: str, template: Path) -> Path:
    directory = Path(os.environ[LOG_VARIABLE])
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
    record = {
        "template": str(template),
        "statements": usage(authorizer, resources, region),
        "denied": denials(authorizer, resources),
    }
    path.write_text(json.dumps(record, indent=1, sort_keys=True))
    return path


def _records(directory: Path, template: Path | None) -> Iterator[dict[str, Any]]:
    """The runs logged in ``directory`` (of ``template`` only, if given)."""
    for path in sorted(Path(directory).glob("*.json")):
        record = json.loads(path.read_text())
        if template is None or Path(record["template"]).resolve() == template.resolve():
            yield record


def merge(directory: Path, template: Path | None = None) -> dict[str, dict[str, Any]]:
    """The statements of every run logged in ``directory`` (of ``template`` only, if given)."""
    merged: dict[str, dict[str, Any]] = {}
    for record in _records(directory, template):
        for name, entry in record["statements"].items():
            into = merged.setdefault(name, {**entry, "used": [], "needed": False, "calls": 0})
            into["used"] = sorted({*into["used"], *entry["used"]})
            into["needed"] = into["needed"] or entry["needed"]
            into["calls"] += entry["calls"]
    return merged


def refused(directory: Path, template: Path) -> list[str]:
    """Every call refused to the stack's principals in the runs of ``template``."""
    return sorted({d for record in _records(directory, template) for d in record.get("denied", [])})


def justifications(template: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(owner, Sid) -> reason, from each resource's ``Metadata.LocalCloud.UnusedGrants``; the
    owner is the resource and, for a SAM function or state machine, its generated role."""
    out: dict[tuple[str, str], str] = {}
    for logical_id, resource in (template.get("Resources") or {}).items():
        grants = ((resource.get("Metadata") or {}).get("LocalCloud") or {}).get("UnusedGrants")
        for sid, reason in (grants or {}).items():
            out[(logical_id, str(sid))] = str(reason)
            out[(f"{logical_id}Role", str(sid))] = str(reason)
    return out


def _owner_sid(name: str) -> tuple[str, str]:
    head, _, sid = name.rpartition("#")
    return head.split("/", 1)[0], sid


def unused(merged: dict[str, dict[str, Any]], template: dict[str, Any]) -> list[str]:
    """Allow statements no run needed and the template does not justify."""
    why = justifications(template)
    return sorted(
        name
        for name, entry in merged.items()
        if entry["effect"] == "Allow" and not entry["needed"] and _owner_sid(name) not in why
    )


def _never_used(entry: dict[str, Any]) -> list[str]:
    return [
        a
        for a in entry["actions"]
        if not any(fnmatch.fnmatch(used.lower(), a.lower()) for used in entry["used"])
    ]


def render(merged: dict[str, dict[str, Any]], template: dict[str, Any] | None = None) -> str:
    """Per principal / resource policy: each statement, what it allowed, what it never did."""
    why = justifications(template or {})
    lines: list[str] = []
    owner = None
    for name in sorted(merged):
        entry = merged[name]
        head = name.split("#", 1)[0].split("/", 1)[0]
        if head != owner:
            owner = head
            lines.append(f"\n{owner}")
        if entry["effect"] == "Deny":
            verdict = f"guard (refused {entry['calls']} call(s))"
        elif entry["needed"]:
            verdict = f"needed ({entry['calls']} call(s))"
        elif _owner_sid(name) in why:
            verdict = f"not exercised locally: {why[_owner_sid(name)]}"
        else:
            verdict = "UNUSED: remove it, or justify it in Metadata.LocalCloud.UnusedGrants"
        lines.append(f"  {name.split('/', 1)[-1]}: {verdict}")
        if entry["used"]:
            lines.append(f"      used:  {', '.join(entry['used'])}")
        never = _never_used(entry)
        if never and entry["effect"] == "Allow":
            lines.append(f"      never: {', '.join(never)}")
    return "\n".join(lines).lstrip("\n")
