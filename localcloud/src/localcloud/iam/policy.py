"""IAM policy evaluation for one account: identity, resource and key policies, with conditions.

Pure functions, no moto: a :class:`Request` (principal, action, resource, context keys) is
evaluated against the policies that apply to it, following the IAM User Guide's "Policy
evaluation logic" for requests within one account:

1. an explicit ``Deny`` in any applicable policy denies;
2. a KMS key's policy must allow the request: directly, or by naming the account root
   (``arn:aws:iam::<account>:root``), which lets IAM policies decide;
3. otherwise the request is allowed when an identity-based policy of the principal or the
   resource-based policy allows it. A resource policy naming the account root does not grant
   anything by itself. A service principal (``events.amazonaws.com``) has no identity
   policies: only resource policies can allow it.

Not evaluated (and stated in the README): service control and resource control policies,
permission boundaries, session policies, cross-account requests, ``NotPrincipal``.

Conditions: the operators in ``OPERATORS`` with ``...IfExists`` and ``ForAnyValue:`` /
``ForAllValues:``. Keys are case-insensitive. A key absent from the request: positive
operators do not match, negated ones (``StringNotEquals``, ``ArnNotLike``, ...) match,
``...IfExists`` matches, ``Null`` tests presence. An operator not listed is an error
(:class:`PolicyError`), never a silent match; ``unknown_condition_keys`` lists the keys of a
document that the local cloud does not supply, so a deploy can refuse them by name.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "OPERATORS",
    "Decision",
    "Policy",
    "PolicyError",
    "Principal",
    "Request",
    "Statement",
    "evaluate",
    "parse_policy",
    "unknown_condition_keys",
]


class PolicyError(ValueError):
    """A policy the evaluator cannot evaluate faithfully (unknown operator, bad shape)."""


@dataclass(frozen=True)
class Principal:
    """Who makes a request: an IAM role (``arn``), or an AWS service (``service``)."""

    arn: str = ""  # role ARN (arn:aws:iam::<account>:role/<name>)
    service: str = ""  # service principal, e.g. events.amazonaws.com
    session: str = "local"

    @property
    def account(self) -> str:
        return self.arn.split(":")[4] if self.arn else ""

    @property
    def caller(self) -> str:
        """How AWS names the caller in an error message (the assumed-role session ARN)."""
        if self.service:
            return self.service
        name = self.arn.rsplit("/", 1)[-1]
        return f"arn:aws:sts::{self.account}:assumed-role/{name}/{self.session}"

    def __str__(self) -> str:
        return self.service or self.arn


@dataclass(frozen=True)
class Request:
    principal: Principal
    action: str  # service:Action, e.g. s3:GetObject
    resource: str  # ARN, or "*" for actions without resource-level permissions
    context: Mapping[str, Any] = field(default_factory=dict)  # condition keys (any case)


@dataclass(frozen=True)
class Statement:
    id: str  # <policy id>#<Sid or index>: what a report names
    effect: str
    actions: tuple[str, ...] = ()
    not_actions: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    not_resources: tuple[str, ...] = ()
    principals: tuple[str, ...] = ()  # "*", AWS ARNs, "service:<name>" (resource policies)
    condition: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @functools.cached_property
    def _exact_actions(self) -> frozenset[str]:
        return frozenset(a.lower() for a in self.actions if "*" not in a and "?" not in a)

    @functools.cached_property
    def _wild_actions(self) -> tuple[str, ...]:
        return tuple(a for a in self.actions if "*" in a or "?" in a)

    def applies(self, request: Request, *, resource_policy: bool) -> bool:
        if self.actions and not (
            request.action.lower() in self._exact_actions
            or _any_match(self._wild_actions, request.action, ignore_case=True)
        ):
            return False
        if self.not_actions and _any_match(self.not_actions, request.action, ignore_case=True):
            return False
        if self.resources and not _any_match(self.resources, request.resource):
            return False
        if self.not_resources and _any_match(self.not_resources, request.resource):
            return False
        if resource_policy and not self.names(request.principal):
            return False
        return _conditions_hold(self.condition, request.context)

    def names(self, principal: Principal) -> bool:
        """Whether the Principal element names ``principal`` (resource policies)."""
        for entry in self.principals:
            if entry == "*" or (principal.service and entry == f"service:{principal.service}"):
                return True
            if principal.arn and entry in (principal.arn, principal.caller):
                return True
        return False

    def names_root_of(self, principal: Principal) -> bool:
        root = f"arn:aws:iam::{principal.account}:root"
        return bool(principal.arn) and (
            root in self.principals or principal.account in self.principals
        )


@dataclass(frozen=True)
class Policy:
    id: str  # e.g. "role/MyFunctionRole/MyFunctionRolePolicy0", "bucket/my-bucket"
    statements: tuple[Statement, ...]


@dataclass(frozen=True)
class Decision:
    allowed: bool
    #: allowed, explicit-deny-identity, explicit-deny-resource, no-identity-allow,
    #: no-resource-allow, key-policy
    reason: str
    allowed_by: tuple[str, ...] = ()  # statement ids that allowed it
    denied_by: tuple[str, ...] = ()


def _as_tuple(value: Any) -> tuple[str, ...]:
    """A policy value as strings ("Quotation marks are optional for numeric and Boolean
    values": 10 and true are "10" and "true")."""
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(_scalar(v) for v in value)
    return (_scalar(value),)


def _scalar(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _principals(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if value == "*":
        return ("*",)
    if not isinstance(value, Mapping):
        raise PolicyError(f"Principal must be '*' or a map, not {value!r}")
    out: list[str] = []
    for kind, names in value.items():
        for name in _as_tuple(names):
            out.append(f"service:{name}" if kind == "Service" else name)
    return tuple(out)


def parse_policy(policy_id: str, document: str | Mapping[str, Any]) -> Policy:
    """A policy document (JSON text or parsed) as a :class:`Policy`; statement ids are
    ``<policy_id>#<Sid>`` (or ``#<index>`` when the statement has no Sid)."""
    doc = json.loads(document) if isinstance(document, str) else document
    raw = doc.get("Statement") or []
    if isinstance(raw, Mapping):
        raw = [raw]
    statements = []
    for index, item in enumerate(raw):
        if "NotPrincipal" in item:
            raise PolicyError(f"{policy_id}: NotPrincipal is not evaluated locally")
        effect = str(item.get("Effect", ""))
        if effect not in ("Allow", "Deny"):
            raise PolicyError(f"{policy_id}: statement {index} has Effect {effect!r}")
        statements.append(
            Statement(
                id=f"{policy_id}#{item.get('Sid') or index}",
                effect=effect,
                actions=_as_tuple(item.get("Action")),
                not_actions=_as_tuple(item.get("NotAction")),
                resources=_as_tuple(item.get("Resource")),
                not_resources=_as_tuple(item.get("NotResource")),
                principals=_principals(item.get("Principal")),
                condition=dict(item.get("Condition") or {}),
            )
        )
    return Policy(policy_id, tuple(statements))


# ------------------------------------------------------------------ matching
@functools.lru_cache(maxsize=4096)
def _pattern(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    """IAM's wildcards are ``*`` and ``?`` only (``[`` is a literal, unlike fnmatch)."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body, re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL)


def _like(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    if "*" not in pattern and "?" not in pattern:
        return value.lower() == pattern.lower() if ignore_case else value == pattern
    return _pattern(pattern, ignore_case).fullmatch(value) is not None


def _any_match(patterns: Iterable[str], value: str, *, ignore_case: bool = False) -> bool:
    return any(_like(p, value, ignore_case=ignore_case) for p in patterns)


def _arn_like(pattern: str, value: str) -> bool:
    """ArnLike: each of the six colon-separated parts matches on its own."""
    want, have = pattern.split(":", 5), value.split(":", 5)
    return len(want) == len(have) == 6 and all(_like(w, h) for w, h in zip(want, have, strict=True))


def _bool(value: Any) -> str:
    return str(value).lower()


# operator -> (test(expected, actual) for one value, negated)
OPERATORS: dict[str, tuple[Any, bool]] = {
    "StringEquals": (lambda e, a: str(a) == str(e), False),
    "StringNotEquals": (lambda e, a: str(a) == str(e), True),
    "StringEqualsIgnoreCase": (lambda e, a: str(a).lower() == str(e).lower(), False),
    "StringNotEqualsIgnoreCase": (lambda e, a: str(a).lower() == str(e).lower(), True),
    "StringLike": (lambda e, a: _like(str(e), str(a)), False),
    "StringNotLike": (lambda e, a: _like(str(e), str(a)), True),
    "ArnEquals": (lambda e, a: _arn_like(str(e), str(a)), False),
    "ArnLike": (lambda e, a: _arn_like(str(e), str(a)), False),
    "ArnNotEquals": (lambda e, a: _arn_like(str(e), str(a)), True),
    "ArnNotLike": (lambda e, a: _arn_like(str(e), str(a)), True),
    "Bool": (lambda e, a: _bool(a) == _bool(e), False),
    "NumericEquals": (lambda e, a: float(a) == float(e), False),
    "NumericNotEquals": (lambda e, a: float(a) == float(e), True),
    "NumericLessThan": (lambda e, a: float(a) < float(e), False),
    "NumericLessThanEquals": (lambda e, a: float(a) <= float(e), False),
    "NumericGreaterThan": (lambda e, a: float(a) > float(e), False),
    "NumericGreaterThanEquals": (lambda e, a: float(a) >= float(e), False),
}


def _split_operator(name: str) -> tuple[str, str, bool]:
    """(set modifier, base operator, if-exists) of a condition operator name."""
    modifier = ""
    for prefix in ("ForAnyValue:", "ForAllValues:"):
        if name.startswith(prefix):
            modifier, name = prefix[:-1], name[len(prefix) :]
    if_exists = name.endswith("IfExists") and name != "IfExists"
    base = name[: -len("IfExists")] if if_exists else name
    if base != "Null" and base not in OPERATORS:
        raise PolicyError(f"condition operator {name} is not evaluated locally")
    return modifier, base, if_exists


def _lookup(context: Mapping[str, Any], key: str) -> Any:
    return next((value for name, value in context.items() if name.lower() == key.lower()), None)


def _conditions_hold(
    condition: Mapping[str, Mapping[str, Any]], context: Mapping[str, Any]
) -> bool:
    for operator, block in condition.items():
        modifier, base, if_exists = _split_operator(operator)
        for key, expected in block.items():
            actual = _lookup(context, key)
            wanted = _as_tuple(expected)
            if base == "Null":
                present = actual is not None
                if not any((_bool(w) == "true") != present for w in wanted):
                    return False
                continue
            test, negated = OPERATORS[base]
            if actual is None:  # an absent key: an empty set for the set operators
                if if_exists or modifier == "ForAllValues" or (negated and not modifier):
                    continue
                return False
            values = _as_tuple(actual)
            if modifier == "ForAllValues":
                hit = all(any(test(w, v) for w in wanted) for v in values)
            else:
                hit = any(test(w, v) for w in wanted for v in values)
            if hit == negated:
                return False
    return True


def unknown_condition_keys(policy: Policy, known: Iterable[str]) -> set[str]:
    """Condition keys of ``policy`` outside ``known`` (case-insensitive); also checks that
    every operator is one the evaluator has (PolicyError otherwise)."""
    for statement in policy.statements:
        for operator in statement.condition:
            _split_operator(operator)
    lowered = {k.lower() for k in known}
    keys = {key for s in policy.statements for block in s.condition.values() for key in block}
    return {key for key in keys if key.lower() not in lowered}


# ------------------------------------------------------------------ evaluation
def evaluate(  # noqa: PLR0911, PLR0912 - the User Guide's evaluation order, step by step
    request: Request,
    identity: Iterable[Policy] = (),
    resource: Policy | None = None,
    *,
    key_policy: bool = False,
) -> Decision:
    """The decision for ``request``; ``resource`` is the resource's policy (for a KMS key,
    its key policy with ``key_policy=True``)."""
    identity = () if request.principal.service else tuple(identity)
    allow: list[str] = []
    for policy in identity:
        for s in policy.statements:
            if s.applies(request, resource_policy=False):
                if s.effect == "Deny":
                    return Decision(False, "explicit-deny-identity", denied_by=(s.id,))
                allow.append(s.id)
    direct: list[str] = []  # resource-policy statements that name the principal
    delegated: list[str] = []  # ... that name its account's root: IAM policies decide
    for s in resource.statements if resource is not None else ():
        if not s.applies(request, resource_policy=False):
            continue
        if s.names(request.principal):
            if s.effect == "Deny":
                return Decision(False, "explicit-deny-resource", denied_by=(s.id,))
            direct.append(s.id)
        elif s.effect == "Allow" and s.names_root_of(request.principal):
            delegated.append(s.id)
    if direct:
        return Decision(True, "allowed", tuple(allow + direct))
    if key_policy:
        if delegated and allow:
            return Decision(True, "allowed", tuple(allow + delegated))
        return Decision(False, "no-identity-allow" if delegated else "key-policy")
    if allow:
        return Decision(True, "allowed", tuple(allow))
    if request.principal.service:
        return Decision(False, "no-resource-allow")
    return Decision(False, "no-identity-allow")
