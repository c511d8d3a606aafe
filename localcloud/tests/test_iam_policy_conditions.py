"""The local cloud's IAM evaluator (iam/policy.py): condition operators and multivalued
context keys against the IAM User Guide ([OPS] as in test_iam_policy.py), and:

* [MULTI] "Conditions with multiple context keys or values",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-logic-multiple-context-keys-or-values.html:
  operators AND, keys AND, values OR, values of a negated operator NOR (its example tables are
  reproduced below).
* [SETS] "Multivalued context key examples",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition_examples-multi-valued-context-keys.html
  and the older "Creating a Condition That Tests Multiple Key Values (Set Operations)"
  (awsdocs/iam-user-guide ``doc_source/reference_policies_multi-value-conditions.md``).
* [GRAMMAR] "Grammar of the IAM JSON policy language",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_grammar.html:
  ``<condition_value> = ("string" | "number" | "Boolean")``.
"""

from __future__ import annotations

from typing import Any

import pytest

from localcloud.iam.policy import Principal, Request, evaluate, parse_policy

pytestmark = pytest.mark.unit

ACCOUNT = "111122223333"
REGION = "us-east-1"
ALARM = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:ingest-DeadLetters"
RULE = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/ingest-ObjectCreated"
ROLE = Principal(
    arn=f"arn:aws:iam::{ACCOUNT}:role/service-role/WorkerRole", session="worker-session"
)
OBJECT = "arn:aws:s3:::ingest-bucket/incoming/orders/a.csv"


def holds(condition: dict[str, Any], **context: Any) -> bool:
    """Whether a statement with ``condition`` applies to a request with ``context``."""
    statement = {
        "Effect": "Allow",
        "Action": "s3:GetObject",
        "Resource": "*",
        "Condition": condition,
    }
    policy = parse_policy("role/WorkerRole/inline", {"Statement": [statement]})
    return evaluate(Request(ROLE, "s3:GetObject", OBJECT, context), [policy]).allowed


@pytest.mark.parametrize(
    ("condition", "context", "expected"),
    [
        ({"StringEquals": {"s3:prefix": "incoming/"}}, {"s3:prefix": "incoming/"}, True),
        ({"StringEquals": {"s3:prefix": "incoming/"}}, {"s3:prefix": "INCOMING/"}, False),
        ({"StringEquals": {"s3:prefix": "incoming/*"}}, {"s3:prefix": "incoming/a"}, False),
        ({"StringEqualsIgnoreCase": {"s3:prefix": "incoming/"}}, {"s3:prefix": "INCOMING/"}, True),
        ({"StringLike": {"s3:prefix": "incoming/*"}}, {"s3:prefix": "incoming/orders/"}, True),
        ({"StringLike": {"s3:prefix": "incoming/*"}}, {"s3:prefix": "processed/"}, False),
        ({"StringLike": {"s3:prefix": "incoming/?"}}, {"s3:prefix": "incoming/a"}, True),
        ({"StringLike": {"s3:prefix": "incoming/?"}}, {"s3:prefix": "incoming/ab"}, False),
        ({"StringLike": {"s3:prefix": "Incoming/*"}}, {"s3:prefix": "incoming/a"}, False),
        ({"StringNotEquals": {"s3:prefix": "incoming/"}}, {"s3:prefix": "processed/"}, True),
        ({"StringNotLike": {"s3:prefix": "incoming/*"}}, {"s3:prefix": "incoming/a"}, False),
    ],
)
def test_string_operators(condition: dict, context: dict, expected: bool) -> None:
    # [OPS] StringEquals/StringLike are case-sensitive; StringLike takes * and ?.
    assert holds(condition, **context) is expected


@pytest.mark.parametrize(
    ("operator", "pattern", "expected"),
    [
        ("ArnLike", f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:*", True),
        ("ArnLike", f"arn:aws:cloudwatch:*:{ACCOUNT}:alarm:*", True),
        ("ArnLike", f"arn:aws:cloudwatch:{REGION}:?????????????:alarm:*", False),
        ("ArnLike", f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:ingest-*", True),
        ("ArnLike", f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:Ingest-*", False),
        ("ArnLike", f"arn:aws:events:{REGION}:{ACCOUNT}:*", False),
        # [OPS] ArnEquals takes the same wildcards as ArnLike
        ("ArnEquals", f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:*", True),
        ("ArnEquals", ALARM, True),
        ("ArnNotEquals", ALARM, False),
        ("ArnNotLike", "arn:aws:events:*:*:rule/*", True),
    ],
)
def test_arn_operators_compare_each_of_the_six_parts(
    operator: str, pattern: str, expected: bool
) -> None:
    assert holds({operator: {"aws:SourceArn": pattern}}, **{"aws:SourceArn": ALARM}) is expected


@pytest.mark.parametrize(
    ("policy_value", "request_value", "expected"),
    [
        ("true", "true", True),
        ("true", "false", False),
        (True, "true", True),
        ("false", False, True),
    ],
)
def test_bool(policy_value: Any, request_value: Any, expected: bool) -> None:
    condition = {"Bool": {"aws:SecureTransport": policy_value}}
    assert holds(condition, **{"aws:SecureTransport": request_value}) is expected


@pytest.mark.parametrize(
    ("operator", "expected"),
    [
        ("NumericEquals", False),
        ("NumericNotEquals", True),
        ("NumericLessThan", True),
        ("NumericLessThanEquals", True),
        ("NumericGreaterThan", False),
        ("NumericGreaterThanEquals", False),
    ],
)
def test_numeric_operators(operator: str, expected: bool) -> None:
    assert holds({operator: {"s3:max-keys": "10"}}, **{"s3:max-keys": "5"}) is expected


def test_numeric_boundaries() -> None:
    assert holds({"NumericLessThanEquals": {"s3:max-keys": "10"}}, **{"s3:max-keys": "10"})
    assert not holds({"NumericLessThan": {"s3:max-keys": "10"}}, **{"s3:max-keys": "10"})
    assert holds({"NumericEquals": {"s3:max-keys": "10"}}, **{"s3:max-keys": "10.0"})


def test_an_unquoted_number_is_a_condition_value() -> None:
    assert holds({"NumericLessThanEquals": {"s3:max-keys": 10}}, **{"s3:max-keys": "5"})


def test_null_tests_whether_the_key_is_present() -> None:
    # [OPS] "true (the key doesn't exist - it is null) or false (the key exists ...)"
    assert holds({"Null": {"aws:SourceArn": "true"}})
    assert not holds({"Null": {"aws:SourceArn": "true"}}, **{"aws:SourceArn": RULE})
    assert holds({"Null": {"aws:SourceArn": "false"}}, **{"aws:SourceArn": RULE})
    assert not holds({"Null": {"aws:SourceArn": "false"}})


@pytest.mark.parametrize(
    "condition",
    [
        {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
        {"StringLike": {"aws:SourceAccount": "*"}},
        {"ArnLike": {"aws:SourceArn": "*"}},
        {"Bool": {"aws:SecureTransport": "true"}},
        {"NumericLessThan": {"s3:max-keys": "10"}},
    ],
)
def test_a_positive_operator_does_not_match_a_missing_key(condition: dict) -> None:
    # [OPS] "If the key ... is not present in the request context, the values do not match and
    # the condition is false."
    assert not holds(condition)


@pytest.mark.parametrize(
    "condition",
    [
        {"StringNotEquals": {"aws:SourceAccount": ACCOUNT}},
        {"StringNotLike": {"aws:SourceAccount": "*"}},
        {"StringNotEqualsIgnoreCase": {"aws:SourceAccount": ACCOUNT}},
        {"ArnNotLike": {"aws:SourceArn": "*"}},
        {"ArnNotEquals": {"aws:SourceArn": RULE}},
        {"NumericNotEquals": {"s3:max-keys": "10"}},
    ],
)
def test_a_negated_operator_matches_a_missing_key(condition: dict) -> None:
    # [OPS] "If the policy condition requires that the key is not matched, such as StringNotLike
    # or ArnNotLike, and the right key is not present, the condition is true."
    assert holds(condition)


def test_if_exists_matches_a_missing_key_and_checks_a_present_one() -> None:
    # [OPS] "If the key is not present, evaluate the condition element as true."
    condition = {"StringEqualsIfExists": {"aws:SourceAccount": ACCOUNT}}
    assert holds(condition)
    assert holds(condition, **{"aws:SourceAccount": ACCOUNT})
    assert not holds(condition, **{"aws:SourceAccount": "444455556666"})
    assert holds({"ArnLikeIfExists": {"aws:SourceArn": "arn:aws:events:*"}}) is True
    assert not holds(
        {"BoolIfExists": {"aws:SecureTransport": "true"}}, **{"aws:SecureTransport": "false"}
    )


def test_condition_keys_are_case_insensitive() -> None:
    # [OPS] condition key names are not case-sensitive; their values are (StringEquals)
    assert holds({"StringEquals": {"AWS:SOURCEACCOUNT": ACCOUNT}}, **{"aws:sourceaccount": ACCOUNT})
    assert holds({"Bool": {"aws:securetransport": "true"}}, **{"aws:SecureTransport": "true"})


def test_multiple_values_for_one_key_are_ored() -> None:
    condition = {"StringEquals": {"aws:PrincipalTag/department": ["finance", "hr", "legal"]}}
    assert holds(condition, **{"aws:PrincipalTag/department": "hr"})
    assert not holds(condition, **{"aws:PrincipalTag/department": "payroll"})


def test_multiple_values_of_a_negated_operator_are_nored() -> None:
    # [MULTI] "a logical NOR ... returns true only if all values evaluate to false"
    condition = {"StringNotEquals": {"aws:PrincipalTag/department": ["finance", "hr"]}}
    assert holds(condition, **{"aws:PrincipalTag/department": "legal"})
    assert not holds(condition, **{"aws:PrincipalTag/department": "hr"})


# [MULTI] the example table of "Evaluation logic for negated matching condition operators":
# StringEquals on two keys AND ArnNotLike on a third; every row as published.
_MULTI = {
    "StringEquals": {
        "aws:PrincipalTag/department": ["finance", "hr", "legal"],
        "aws:PrincipalTag/role": ["audit", "security"],
    },
    "ArnNotLike": {
        "aws:PrincipalArn": [
            "arn:aws:iam::222222222222:user/Ana",
            "arn:aws:iam::222222222222:user/Mary",
        ]
    },
}


@pytest.mark.parametrize(
    ("department", "role", "user", "expected"),
    [
        ("legal", "audit", "Nikki", True),
        ("hr", "audit", "Mary", False),
        ("hr", "payroll", "Nikki", False),
        ("hr", None, "Nikki", False),
        (None, None, "Nikki", False),
    ],
)
def test_operators_and_keys_are_anded_as_in_the_user_guide_table(
    department: str | None, role: str | None, user: str, expected: bool
) -> None:
    context = {"aws:PrincipalArn": f"arn:aws:iam::222222222222:user/{user}"}
    if department:
        context["aws:PrincipalTag/department"] = department
    if role:
        context["aws:PrincipalTag/role"] = role
    assert holds(_MULTI, **context) is expected


# [SETS] the example tables of "Multivalued context key examples", row by row.
@pytest.mark.parametrize(
    ("tag_keys", "expected"),
    [
        (["webserver"], True),
        (["environment", "webserver", "test"], True),
        (["environment", "test"], False),
        (None, False),
    ],
)
def test_for_any_value_as_in_the_user_guide_table(
    tag_keys: list[str] | None, expected: bool
) -> None:
    context = {"aws:TagKeys": tag_keys} if tag_keys is not None else {}
    assert holds({"ForAnyValue:StringEquals": {"aws:TagKeys": "webserver"}}, **context) is expected


@pytest.mark.parametrize(
    ("tag_keys", "expected"),
    [
        (["key1:legal"], False),
        (["key1:hr", "key1:personnel"], False),
        (["key1:hr", "key2:audit"], False),
        (["key3:legal"], True),
        (None, True),  # "ForAllValues ... also returns true if there are no context keys"
    ],
)
def test_for_all_values_with_a_negated_operator_as_in_the_user_guide_table(
    tag_keys: list[str] | None, expected: bool
) -> None:
    context = {"aws:TagKeys": tag_keys} if tag_keys is not None else {}
    condition = {"ForAllValues:StringNotLike": {"aws:TagKeys": ["key1*", "key2*"]}}
    assert holds(condition, **context) is expected


def test_for_all_values_requires_every_request_value_to_match() -> None:
    # [SETS] older page: PostDateTime and UserName against [PostDateTime, Message, Tags] -> false
    condition = {
        "ForAllValues:StringLike": {"dynamodb:Attributes": ["PostDateTime", "Message", "Tags"]}
    }
    assert holds(condition, **{"dynamodb:Attributes": ["PostDateTime", "Message"]})
    assert not holds(condition, **{"dynamodb:Attributes": ["PostDateTime", "UserName"]})


def test_for_any_value_is_false_for_a_missing_key_even_with_a_negated_operator() -> None:
    assert not holds({"ForAnyValue:StringNotEquals": {"aws:TagKeys": ["environment"]}})
