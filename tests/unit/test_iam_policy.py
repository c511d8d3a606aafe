"""The local cloud's IAM evaluator (iam/policy.py) against the IAM User Guide.

Sources (each test cites the one it checks):

* [EVAL] "Policy evaluation logic" and "Policy evaluation for requests within a single account",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html
  (read from awsdocs/iam-user-guide ``doc_source/reference_policies_evaluation-logic.md``):
  an explicit deny in any policy wins; otherwise an allow in an identity-based *or* a
  resource-based policy of the same account suffices; "IAM role trust policies and KMS key
  policies are exceptions ... they must explicitly allow access for principals".
* [OPS] "IAM JSON policy elements: Condition operators",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html:
  a key absent from the request does not match, except that a negated operator then matches
  and ``...IfExists`` matches; ``Null`` tests presence; ``ArnLike``/``ArnEquals`` compare the six
  colon-separated parts one by one, each with ``*`` and ``?``.
* [KMS] "Key policies in AWS KMS",
  https://docs.aws.amazon.com/kms/latest/developerguide/key-policies.html: "Without permission
  from the key policy, IAM policies that allow permissions have no effect."
* [PRINCIPAL] "AWS JSON policy elements: Principal",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_principal.html:
  the account ARN and the bare account id both delegate to the account.
* [ACTION] "IAM JSON policy elements: Action",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_action.html:
  "The prefix and the action name are case insensitive"; ``*`` and ``?`` may be used.
* [RESOURCE] "IAM JSON policy elements: Resource",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_resource.html:
  "wildcard characters (* and ?) within the individual segments of an ARN"; names in ARNs are
  case-sensitive ("the IAM user name is case sensitive"; S3 object keys are).

The condition operators and multivalued keys ([OPS], [MULTI], [SETS]) are tested in
localcloud/tests/test_iam_policy_conditions.py. The template's own statements are read from
template.yaml (by Sid), with its intrinsic functions replaced by fixed names, so a change to
one of them is tested as written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from localcloud.iam.policy import (
    OPERATORS,
    Policy,
    PolicyError,
    Principal,
    Request,
    evaluate,
    parse_policy,
    unknown_condition_keys,
)
from localcloud.stack import load_template

pytestmark = pytest.mark.unit

ACCOUNT = "111122223333"
REGION = "us-east-1"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/service-role/WorkerRole"
SESSION_ARN = f"arn:aws:sts::{ACCOUNT}:assumed-role/WorkerRole/worker-session"
ROOT_ARN = f"arn:aws:iam::{ACCOUNT}:root"
OBJECT = "arn:aws:s3:::ingest-bucket/incoming/orders/a.csv"
KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
ALARM = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:ingest-DeadLetters"
RULE = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/ingest-ObjectCreated"
DLQ = f"arn:aws:sqs:{REGION}:{ACCOUNT}:ingest-EventDeliveryDLQ"

ROLE = Principal(arn=ROLE_ARN, session="worker-session")
EVENTS = Principal(service="events.amazonaws.com")
CLOUDWATCH = Principal(service="cloudwatch.amazonaws.com")


# ------------------------------------------------------------------ helpers
def identity(*statements: dict[str, Any]) -> Policy:
    return parse_policy("role/WorkerRole/inline", {"Statement": list(statements)})


def resource_policy(*statements: dict[str, Any], policy_id: str = "resource") -> Policy:
    return parse_policy(policy_id, {"Statement": list(statements)})


def allow(
    action: str | list[str] = "s3:GetObject", resource: Any = OBJECT, **extra: Any
) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


def deny(
    action: str | list[str] = "s3:GetObject", resource: Any = OBJECT, **extra: Any
) -> dict[str, Any]:
    return {"Effect": "Deny", "Action": action, "Resource": resource, **extra}


def request(
    action: str = "s3:GetObject",
    resource: str = OBJECT,
    principal: Principal = ROLE,
    **context: Any,
) -> Request:
    return Request(principal, action, resource, context)


# --- template.yaml, its statements by Sid --------------------------------------------
TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
_PSEUDO = {"AWS::AccountId": ACCOUNT, "AWS::Partition": "aws", "AWS::Region": REGION}
_ARNS = {
    "IngestBucket": "arn:aws:s3:::ingest-bucket",
    "EventDeliveryDLQ": DLQ,
    "PipelineStateMachineObjectCreated": RULE,
}


def _resolve(value: Any) -> Any:
    if isinstance(value, list):
        return [_resolve(v) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"}:
        return _PSEUDO[value["Ref"]]
    if set(value) == {"Fn::GetAtt"}:
        name, attribute = value["Fn::GetAtt"]
        assert attribute == "Arn", value
        return _ARNS[name]
    if set(value) == {"Fn::Sub"}:
        return re.sub(
            r"\$\{([^}]+)\}",
            lambda m: _PSEUDO.get(m[1]) or _ARNS[m[1].removesuffix(".Arn")],
            value["Fn::Sub"],
        )
    return {k: _resolve(v) for k, v in value.items()}


def template_statement(logical_id: str, sid: str) -> dict[str, Any]:
    properties = load_template(TEMPLATE)["Resources"][logical_id]["Properties"]
    document = properties.get("PolicyDocument") or properties["KeyPolicy"]
    found = [s for s in document["Statement"] if s.get("Sid") == sid]
    assert len(found) == 1, f"{logical_id} has no statement {sid}"
    return _resolve(found[0])


# ------------------------------------------------------------------ explicit and implicit deny
# [EVAL] "An explicit deny in any of the policies overrides the allow."
def test_explicit_deny_in_an_identity_policy_beats_an_identity_allow() -> None:
    decision = evaluate(request(), [identity(allow(), deny(Sid="NoReads"))])
    assert not decision.allowed
    assert decision.reason == "explicit-deny-identity"
    assert decision.denied_by == ("role/WorkerRole/inline#NoReads",)


def test_explicit_deny_in_a_resource_policy_beats_an_identity_allow() -> None:
    bucket = resource_policy(deny(Principal="*", Sid="NoReads"), policy_id="bucket/ingest-bucket")
    decision = evaluate(request(), [identity(allow())], bucket)
    assert (decision.allowed, decision.reason) == (False, "explicit-deny-resource")
    assert decision.denied_by == ("bucket/ingest-bucket#NoReads",)


def test_explicit_deny_in_an_identity_policy_beats_a_resource_policy_allow() -> None:
    bucket = resource_policy(allow(Principal={"AWS": ROLE_ARN}))
    decision = evaluate(request(), [identity(deny())], bucket)
    assert (decision.allowed, decision.reason) == (False, "explicit-deny-identity")


def test_a_request_no_statement_allows_is_implicitly_denied() -> None:
    policy = identity(allow("s3:PutObject"), allow("s3:GetObject", "arn:aws:s3:::other/*"))
    decision = evaluate(request(), [policy])
    assert (decision.allowed, decision.reason) == (False, "no-identity-allow")
    assert evaluate(request(), []).reason == "no-identity-allow"


def test_an_allow_names_the_statements_that_allowed_it() -> None:
    decision = evaluate(request(), [identity(allow(Sid="ReadIncoming"))])
    assert decision.allowed
    assert decision.allowed_by == ("role/WorkerRole/inline#ReadIncoming",)


def test_a_statement_without_sid_is_named_by_its_index() -> None:
    decision = evaluate(request(), [identity(allow("s3:PutObject"), allow())])
    assert decision.allowed_by == ("role/WorkerRole/inline#1",)


# ------------------------------------------------------------------ Action, Resource
@pytest.mark.parametrize(
    ("pattern", "action", "matches"),
    [
        ("s3:*", "s3:GetObject", True),
        ("s3:Get*", "s3:GetObjectVersion", True),
        ("s3:Get*", "s3:PutObject", False),
        ("s3:GetObjec?", "s3:GetObject", True),
        ("s3:GetObjec?", "s3:GetObjectVersion", False),
        ("kms:GenerateDataKey*", "kms:GenerateDataKey", True),
        ("*", "dynamodb:Query", True),
        ("sqs:*", "s3:GetObject", False),
    ],
)
def test_action_wildcards(pattern: str, action: str, matches: bool) -> None:
    # [ACTION] multi-character (*) and single-character (?) wildcards, also inside a name
    assert evaluate(request(action), [identity(allow(pattern))]).allowed is matches


@pytest.mark.parametrize("written", ["S3:GETOBJECT", "s3:getobject", "S3:GetObject"])
def test_action_names_are_case_insensitive(written: str) -> None:
    # [ACTION] "iam:ListAccessKeys is the same as IAM:listaccesskeys"
    assert evaluate(request("s3:GetObject"), [identity(allow(written))]).allowed


@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        ("arn:aws:s3:::ingest-bucket/incoming/*", True),  # * spans "/"
        ("arn:aws:s3:::ingest-bucket/incoming/orders/?.csv", True),
        ("arn:aws:s3:::ingest-bucket/incoming/orders/??.csv", False),
        ("arn:aws:s3:::ingest-bucket/processed/*", False),
        ("arn:aws:s3:::*", True),
        ("*", True),
    ],
)
def test_resource_wildcards(pattern: str, matches: bool) -> None:
    assert evaluate(request(), [identity(allow(resource=pattern))]).allowed is matches


def test_resource_arns_are_case_sensitive() -> None:
    # [RESOURCE] resource names match case-sensitively
    upper = "arn:aws:s3:::ingest-bucket/INCOMING/*"
    assert not evaluate(request(), [identity(allow(resource=upper))]).allowed


def test_square_brackets_in_a_resource_pattern_are_literal() -> None:
    key = "arn:aws:s3:::ingest-bucket/incoming/[draft]orders.csv"
    policy = identity(allow(resource="arn:aws:s3:::ingest-bucket/incoming/[draft]*"))
    assert evaluate(request(resource=key), [policy]).allowed


def test_not_action_applies_to_every_other_action() -> None:
    policy = identity({"Effect": "Allow", "NotAction": "s3:Delete*", "Resource": "*"})
    assert evaluate(request("s3:GetObject"), [policy]).allowed
    assert not evaluate(request("s3:DeleteObject"), [policy]).allowed


def test_not_action_deny_spares_only_the_listed_actions() -> None:
    policy = identity(
        allow("s3:*", "*"), {"Effect": "Deny", "NotAction": "s3:Get*", "Resource": "*"}
    )
    assert evaluate(request("s3:GetObject"), [policy]).allowed
    assert evaluate(request("s3:PutObject"), [policy]).reason == "explicit-deny-identity"


def test_not_resource_applies_to_every_other_resource() -> None:
    policy = identity(
        {
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "NotResource": "arn:aws:s3:::ingest-bucket/processed/*",
        }
    )
    assert evaluate(request(), [policy]).allowed
    processed = "arn:aws:s3:::ingest-bucket/processed/a.json"
    assert not evaluate(request(resource=processed), [policy]).allowed


# ------------------------------------------------------------------ resource-based policies
# [EVAL] "If a resource-based policy grants permission directly to the IAM user or the session
# principal that is making the request, then an implicit deny in an identity-based policy ...
# does not impact the final decision." (same account)
@pytest.mark.parametrize("named", [ROLE_ARN, SESSION_ARN])
def test_resource_policy_naming_the_role_allows_it_without_an_identity_policy(named: str) -> None:
    bucket = resource_policy(allow(Principal={"AWS": named}, Sid="Worker"), policy_id="bucket/b")
    decision = evaluate(request(), [], bucket)
    assert decision.allowed
    assert decision.allowed_by == ("bucket/b#Worker",)


def test_resource_policy_naming_another_role_does_not_apply() -> None:
    other = f"arn:aws:iam::{ACCOUNT}:role/OtherRole"
    bucket = resource_policy(allow(Principal={"AWS": other}))
    assert not evaluate(request(), [], bucket).allowed


# [PRINCIPAL] "The account ARN and the shortened account ID behave the same way. Both delegate
# permissions to the account." An administrator must then grant access with identity policies.
@pytest.mark.parametrize("root", [ROOT_ARN, ACCOUNT])
def test_resource_policy_naming_the_account_root_grants_nothing_alone(root: str) -> None:
    bucket = resource_policy(allow(Principal={"AWS": root}))
    decision = evaluate(request(), [], bucket)
    assert (decision.allowed, decision.reason) == (False, "no-identity-allow")
    assert evaluate(request(), [identity(allow())], bucket).allowed


def test_resource_policy_with_principal_star_allows_anyone() -> None:
    bucket = resource_policy(allow(Principal="*"))
    assert evaluate(request(), [], bucket).allowed
    assert evaluate(request(principal=EVENTS), [], bucket).allowed


def test_service_principal_is_allowed_only_by_a_resource_policy() -> None:
    # A service principal has no identity-based policies: any passed in are not consulted.
    decision = evaluate(request(principal=EVENTS), [identity(allow())])
    assert (decision.allowed, decision.reason) == (False, "no-resource-allow")
    named = resource_policy(allow(Principal={"Service": "events.amazonaws.com"}))
    assert evaluate(request(principal=EVENTS), [], named).allowed
    other_service = resource_policy(allow(Principal={"Service": "sns.amazonaws.com"}))
    assert not evaluate(request(principal=EVENTS), [], other_service).allowed


# ------------------------------------------------------------------ KMS key policies
# [KMS] "Unless the key policy explicitly allows it, you cannot use IAM policies to allow access
# to a KMS key." [EVAL] KMS key policies "must explicitly allow access for principals".
def _key_request(principal: Principal = ROLE, **context: Any) -> Request:
    return request("kms:GenerateDataKey", KEY, principal, **context)


def test_key_policy_delegating_to_the_account_needs_an_identity_allow() -> None:
    key = resource_policy(template_statement("NotificationKey", "AccountIamPoliciesGovernTheKey"))
    granted = identity(allow(["kms:GenerateDataKey*", "kms:Decrypt"], KEY))
    assert evaluate(_key_request(), [granted], key, key_policy=True).allowed
    refused = evaluate(_key_request(), [], key, key_policy=True)
    assert (refused.allowed, refused.reason) == (False, "no-identity-allow")


def test_key_policy_granting_the_role_directly_suffices() -> None:
    key = resource_policy(allow("kms:GenerateDataKey", "*", Principal={"AWS": ROLE_ARN}))
    assert evaluate(_key_request(), [], key, key_policy=True).allowed


def test_identity_allow_without_a_key_policy_statement_is_denied() -> None:
    key = resource_policy(allow("kms:Decrypt", "*", Principal={"AWS": ROLE_ARN}))
    granted = identity(allow("kms:*", "*"))
    decision = evaluate(_key_request(), [granted], key, key_policy=True)
    assert (decision.allowed, decision.reason) == (False, "key-policy")
    assert evaluate(_key_request(), [granted], None, key_policy=True).reason == "key-policy"


def test_identity_deny_beats_a_key_policy_grant() -> None:
    # [KMS] "You can use an IAM policy to deny a permission to a KMS key without permission
    # from a key policy."
    key = resource_policy(allow("kms:*", "*", Principal={"AWS": ROLE_ARN}))
    decision = evaluate(_key_request(), [identity(deny("kms:*", "*"))], key, key_policy=True)
    assert decision.reason == "explicit-deny-identity"


def test_key_policy_lets_this_accounts_alarms_use_the_key() -> None:
    # template.yaml NotificationKey, CloudWatchAlarmsPublishToTheTopics: StringEquals
    # aws:SourceAccount AND ArnLike aws:SourceArn alarm:* (both must hold).
    key = resource_policy(
        template_statement("NotificationKey", "AccountIamPoliciesGovernTheKey"),
        template_statement("NotificationKey", "CloudWatchAlarmsPublishToTheTopics"),
    )
    own = {"aws:SourceAccount": ACCOUNT, "aws:SourceArn": ALARM}
    assert evaluate(_key_request(CLOUDWATCH, **own), [], key, key_policy=True).allowed

    other_account = {**own, "aws:SourceAccount": "444455556666"}
    other_region = {**own, "aws:SourceArn": ALARM.replace(REGION, "eu-west-1")}
    not_an_alarm = {**own, "aws:SourceArn": RULE}
    for context in (other_account, other_region, not_an_alarm, {}):
        decision = evaluate(_key_request(CLOUDWATCH, **context), [], key, key_policy=True)
        assert not decision.allowed, context
        assert decision.reason == "key-policy", context


# ------------------------------------------------------------------ template statements
def test_deny_insecure_transport_refuses_plain_http_only() -> None:
    # template.yaml IngestBucketPolicy, DenyInsecureTransport: Bool aws:SecureTransport "false"
    bucket = resource_policy(template_statement("IngestBucketPolicy", "DenyInsecureTransport"))
    reader = [identity(allow())]
    http = evaluate(request(**{"aws:SecureTransport": "false"}), reader, bucket)
    assert (http.allowed, http.reason) == (False, "explicit-deny-resource")
    assert evaluate(request(**{"aws:SecureTransport": "true"}), reader, bucket).allowed
    # [OPS] Bool is not negated: without the key it does not match, so it does not deny.
    assert evaluate(request(), reader, bucket).allowed


def test_deny_insecure_transport_applies_to_service_principals_too() -> None:
    queue = resource_policy(
        template_statement("EventDeliveryDLQPolicy", "AllowObjectCreatedRuleOnly"),
        template_statement("EventDeliveryDLQPolicy", "DenyInsecureTransport"),
    )
    context = {"aws:SourceArn": RULE, "aws:SecureTransport": "false"}
    decision = evaluate(request("sqs:SendMessage", DLQ, EVENTS, **context), [], queue)
    assert decision.reason == "explicit-deny-resource"


def test_dead_letter_queue_accepts_only_the_object_created_rule() -> None:
    # template.yaml EventDeliveryDLQPolicy, AllowObjectCreatedRuleOnly: events.amazonaws.com,
    # sqs:SendMessage, ArnEquals aws:SourceArn = the rule.
    queue = resource_policy(
        template_statement("EventDeliveryDLQPolicy", "AllowObjectCreatedRuleOnly"),
        policy_id="queue/dlq",
    )
    ok = evaluate(request("sqs:SendMessage", DLQ, EVENTS, **{"aws:SourceArn": RULE}), [], queue)
    assert ok.allowed
    assert ok.allowed_by == ("queue/dlq#AllowObjectCreatedRuleOnly",)

    other_rule = RULE.replace("ObjectCreated", "Other")
    for context in ({"aws:SourceArn": other_rule}, {}):
        decision = evaluate(request("sqs:SendMessage", DLQ, EVENTS, **context), [], queue)
        assert (decision.allowed, decision.reason) == (False, "no-resource-allow"), context
    # the rule's service may send, not purge
    purge = request("sqs:PurgeQueue", DLQ, EVENTS, **{"aws:SourceArn": RULE})
    assert not evaluate(purge, [], queue).allowed


# ------------------------------------------------------------------ what the evaluator refuses
@pytest.mark.parametrize(
    "operator",
    ["DateGreaterThan", "IpAddress", "BinaryEquals", "StringEqualz", "ForAnyValue:DateEquals"],
)
def test_an_operator_the_evaluator_lacks_is_an_error_not_a_match(operator: str) -> None:
    policy = identity(allow(Condition={operator: {"aws:CurrentTime": "2020-01-01T00:00:00Z"}}))
    with pytest.raises(PolicyError, match="not evaluated locally"):
        evaluate(request(), [policy])
    with pytest.raises(PolicyError):
        unknown_condition_keys(policy, ["aws:CurrentTime"])


def test_the_not_operators_are_the_negated_ones() -> None:
    # [OPS] negated operators are the ...Not... ones; they decide how a missing key evaluates
    negated = {name for name, (_, neg) in OPERATORS.items() if neg}
    assert negated == {
        "StringNotEquals",
        "StringNotEqualsIgnoreCase",
        "StringNotLike",
        "ArnNotEquals",
        "ArnNotLike",
        "NumericNotEquals",
    }


def test_not_principal_is_refused() -> None:
    document = {
        "Statement": [
            {"Effect": "Deny", "NotPrincipal": {"AWS": ROLE_ARN}, "Action": "*", "Resource": "*"}
        ]
    }
    with pytest.raises(PolicyError, match="NotPrincipal"):
        parse_policy("bucket/b", document)


@pytest.mark.parametrize("effect", ["allow", "Permit", ""])
def test_an_effect_other_than_allow_or_deny_is_refused(effect: str) -> None:
    with pytest.raises(PolicyError):
        parse_policy("p", {"Statement": [{"Effect": effect, "Action": "*", "Resource": "*"}]})


def test_parse_policy_takes_json_text_and_a_single_statement_object() -> None:
    policy = parse_policy(
        "p", '{"Statement": {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}}'
    )
    assert evaluate(request(), [policy]).allowed


def test_unknown_condition_keys_lists_the_keys_not_supplied() -> None:
    policy = identity(
        allow(
            Condition={"StringEquals": {"aws:SourceAccount": ACCOUNT, "aws:PrincipalOrgID": "o-1"}}
        ),
        allow(Condition={"StringLike": {"S3:Prefix": "incoming/*"}}),
        allow(Condition={"Null": {"aws:MultiFactorAuthPresent": "false"}}),
    )
    known = ["aws:SourceAccount", "s3:prefix"]
    assert unknown_condition_keys(policy, known) == {
        "aws:PrincipalOrgID",
        "aws:MultiFactorAuthPresent",
    }
    assert unknown_condition_keys(identity(allow()), known) == set()
