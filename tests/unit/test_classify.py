"""The classification rules table for errors our code did not raise."""

from __future__ import annotations

import pytest

from ingest_pipeline.errors import ErrorClass, error_names
from ingest_pipeline.logic.classify import DEFAULT_CLASS, RULES, classify

pytestmark = pytest.mark.unit

T, C, P = ErrorClass.TRANSIENT, ErrorClass.CONFIGURATION, ErrorClass.PERMANENT


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("States.Timeout", T),
        ("Sandbox.Timedout", T),
        ("Lambda.TooManyRequestsException", T),
        ("Lambda.ServiceException", T),
        ("DynamoDB.ProvisionedThroughputExceededException", T),
        ("DynamoDB.ThrottlingException", T),
        ("SNS.ThrottledException", T),
        ("S3.SlowDown", T),
        ("DynamoDB.InternalServerError", T),
        ("States.Permissions", C),
        ("S3.AccessDenied", C),
        ("SNS.AuthorizationErrorException", C),  # unknown -> default
        ("DynamoDB.ResourceNotFoundException", C),
        ("Lambda.ResourceNotFoundException", C),
        ("Runtime.ExitError", C),
        ("Runtime.OutOfMemory", C),
        ("Lambda.Unknown", C),
        ("States.DataLimitExceeded", C),
        ("KeyError", C),  # a bug in our code: default
        ("S3.NoSuchKey", P),
        ("HeaderError", P),
        ("StorageUnavailableError", T),
        ("InvalidEventError", C),
    ],
)
def test_classification(name: str, expected: ErrorClass) -> None:
    assert classify(name).error_class is expected


def test_default_is_documented_configuration() -> None:
    result = classify("Something.NobodyHasSeen")
    assert result.error_class is DEFAULT_CLASS is ErrorClass.CONFIGURATION
    assert result.rule == "default"


def test_own_errors_are_classified_by_the_taxonomy_not_the_rules() -> None:
    for error_class in ErrorClass:
        for name in error_names(error_class):
            result = classify(name)
            assert (result.error_class, result.rule) == (error_class, "taxonomy")


def test_every_rule_is_reachable() -> None:
    # A rule shadowed by an earlier, broader one is dead: flag it.
    for index, rule in enumerate(RULES):
        probe = rule.pattern.replace("*", "X")
        assert classify(probe).rule == rule.pattern, f"rule {index} {rule.pattern} is shadowed"


@pytest.mark.parametrize(
    "name",
    [
        "States.ExceedToleratedFailureThreshold",
        "States.ItemReaderFailed",
        "States.ResultWriterFailed",
    ],
)
def test_the_large_file_maps_own_failures_are_escalated_with_a_reason(name: str) -> None:
    result = classify(name)
    assert result.error_class is ErrorClass.CONFIGURATION
    assert result.rule == name and "default" not in result.reason
