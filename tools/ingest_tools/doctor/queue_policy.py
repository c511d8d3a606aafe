"""Would this SQS queue policy let an EventBridge rule send it a dead letter? Pure.

EventBridge sends a rule target's dead letters as the service principal
``events.amazonaws.com``, calling ``sqs:SendMessage`` with ``aws:SourceArn`` = the rule's ARN
and ``aws:SourceAccount`` = its account, over HTTPS (EventBridge User Guide, "Granting
permissions to the dead-letter queue"). Without a statement allowing that, the dead letters
are dropped: the queue policy is part of the delivery path.

The evaluation covers what queue policies use: Principal (``*``, ``Service``, ``AWS: *``),
Action and Resource (with ``*``/``?`` wildcards, case-insensitive actions), and the String*,
Arn* and Bool condition operators (``...IfExists`` too) on the keys of the request above. A
statement with anything else (NotPrincipal, NotAction, NotResource, other operators) cannot
be evaluated here: the answer is then UNKNOWN unless another statement decides it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Any

__all__ = ["EVENTS_PRINCIPAL", "Verdict", "evaluate"]

EVENTS_PRINCIPAL = "events.amazonaws.com"
_ACTION = "sqs:SendMessage"
_UNSUPPORTED_KEYS = ("NotPrincipal", "NotAction", "NotResource")
_STRING_OPERATORS = {
    "StringEquals": (False, False, False),  # (negated, like, ignore case)
    "StringNotEquals": (True, False, False),
    "StringEqualsIgnoreCase": (False, False, True),
    "StringNotEqualsIgnoreCase": (True, False, True),
    "StringLike": (False, True, False),
    "StringNotLike": (True, True, False),
    "ArnEquals": (False, True, False),  # ARN operators match with wildcards, as ArnLike
    "ArnLike": (False, True, False),
    "ArnNotEquals": (True, True, False),
    "ArnNotLike": (True, True, False),
}


class Outcome(StrEnum):
    ALLOWED = "ALLOWED"
    DENIED = "DENIED"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    reason: str
    statement: str | None = None  # the Sid (or index) that decided it


def evaluate(policy: str | None, *, queue_arn: str, rule_arn: str) -> Verdict:
    """Whether ``policy`` lets the rule ``rule_arn`` send dead letters to ``queue_arn``."""
    statements = _statements(policy)
    if isinstance(statements, str):
        return Verdict(Outcome.DENIED, statements)
    account = rule_arn.split(":")[4] if rule_arn.count(":") >= 5 else ""
    context = {
        "aws:sourcearn": rule_arn,
        "aws:sourceaccount": account,
        "aws:securetransport": "true",
    }
    allowed: str | None = None
    unknown: str | None = None
    for index, statement in enumerate(statements):
        if not isinstance(statement, dict):
            continue
        sid = str(statement.get("Sid") or f"#{index}")
        applies = _applies(statement, queue_arn, context)
        effect = str(statement.get("Effect", ""))
        if applies is None:
            unknown = unknown or sid
        elif applies and effect == "Deny":
            return Verdict(Outcome.DENIED, f"statement {sid} denies it", sid)
        elif applies and effect == "Allow":
            allowed = allowed or sid
    if allowed is not None:
        return Verdict(Outcome.ALLOWED, f"statement {allowed} allows it", allowed)
    if unknown is not None:
        return Verdict(Outcome.UNKNOWN, f"statement {unknown} could not be evaluated", unknown)
    return Verdict(
        Outcome.DENIED,
        f"no statement allows {EVENTS_PRINCIPAL} to {_ACTION} with aws:SourceArn {rule_arn}",
    )


def _statements(policy: str | None) -> list[Any] | str:
    """The policy's statements, or why there are none."""
    if not policy or not policy.strip():
        return "the queue has no policy"
    try:
        document = json.loads(policy)
    except ValueError:
        return "the queue policy is not JSON"
    statements = document.get("Statement") if isinstance(document, dict) else None
    if isinstance(statements, dict):
        return [statements]
    if not isinstance(statements, list):
        return "the queue policy has no Statement"
    return statements


def _applies(statement: dict[str, Any], queue_arn: str, context: dict[str, str]) -> bool | None:
    """True/False: the statement matches the request or not; None: cannot tell."""
    if any(key in statement for key in _UNSUPPORTED_KEYS):
        return None
    if not (
        _principal_matches(statement.get("Principal"))
        and _any_match(statement.get("Action"), _ACTION, ignore_case=True)
        and ("Resource" not in statement or _any_match(statement["Resource"], queue_arn))
    ):
        return False
    return _conditions_hold(statement.get("Condition") or {}, context)


def _principal_matches(principal: Any) -> bool:
    if principal == "*":
        return True
    if not isinstance(principal, dict):
        return False
    return EVENTS_PRINCIPAL in _strings(principal.get("Service")) or "*" in _strings(
        principal.get("AWS")
    )


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def _any_match(patterns: Any, value: str, *, ignore_case: bool = False) -> bool:
    if ignore_case:
        value = value.lower()
    return any(
        fnmatchcase(value, pattern.lower() if ignore_case else pattern)
        for pattern in _strings(patterns)
    )


def _conditions_hold(conditions: Any, context: dict[str, str]) -> bool | None:
    if not isinstance(conditions, dict):
        return None
    for operator, clauses in conditions.items():
        if not isinstance(clauses, dict):
            return None
        name = str(operator)
        if_exists = name.endswith("IfExists")
        if if_exists:
            name = name[: -len("IfExists")]
        for key, expected in clauses.items():
            held = _condition(name, context.get(str(key).lower()), _strings(expected), if_exists)
            if held is not True:
                return held
    return True


def _condition(
    operator: str, actual: str | None, expected: list[str], if_exists: bool
) -> bool | None:
    if operator == "Bool":
        if actual is None:
            return if_exists
        return actual.lower() in (e.lower() for e in expected)
    if operator not in _STRING_OPERATORS:
        return None
    negated, like, ignore_case = _STRING_OPERATORS[operator]
    if actual is None:  # a missing key: only IfExists and the negated operators hold
        return if_exists or negated
    if ignore_case:
        actual, expected = actual.lower(), [e.lower() for e in expected]
    found = any(fnmatchcase(actual, e) if like else actual == e for e in expected)
    return found != negated
