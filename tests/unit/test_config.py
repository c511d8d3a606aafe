"""Settings from the environment: defaults, overrides, typed errors, the template in step."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ingest_pipeline.config import EnvSettings, ReconcileSettings, Settings
from ingest_pipeline.errors import ConfigurationError
from ingest_pipeline.handlers import classify_error
from ingest_pipeline.logic.policy import FailurePolicy, ReconcilePolicy
from localcloud.stack import load_template

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
TEMPLATE = load_template(ROOT / "template.yaml")
TIMEOUT_EVENT = json.loads((ROOT / "events" / "classify-error" / "states-timeout.json").read_text())
MODELS: list[type[EnvSettings]] = [Settings, ReconcileSettings]

REQUIRED = {
    "OBJECT_STATE_TABLE": "ObjectState",
    "PIPELINE_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:Pipeline",
    "INGEST_BUCKET": "ingest-bucket",
    "OPERATIONS_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:Operations",
}

# (model, variable, attribute, a valid value that differs from the default)
INTEGERS: list[tuple[type[EnvSettings], str, str, int]] = [
    (Settings, "RETRY_BASE_SECONDS", "retry_base_seconds", 60),
    (Settings, "RETRY_MAX_SECONDS", "retry_max_seconds", 7200),
    (Settings, "RECORD_RETENTION_DAYS", "record_retention_days", 30),
    (ReconcileSettings, "RECONCILE_MAX_ATTEMPTS", "max_attempts", 3),
    (ReconcileSettings, "MISSED_EVENT_GRACE_SECONDS", "missed_grace_seconds", 600),
    (ReconcileSettings, "MISSED_EVENT_LOOKBACK_HOURS", "missed_lookback_hours", 24),
    (ReconcileSettings, "RECONCILE_MAX_STARTS_PER_RUN", "max_starts_per_run", 50),
    (ReconcileSettings, "RUN_LEASE_SECONDS", "run_lease_seconds", 300),
    (ReconcileSettings, "RECORD_RETENTION_DAYS", "record_retention_days", 30),
]


def env_for(model: type[EnvSettings], **values: str) -> dict[str, str]:
    base = dict(REQUIRED) if model is ReconcileSettings else {}
    return {**base, **values}


class Context:
    function_name = "test"
    memory_limit_in_mb = 128
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:test"
    aws_request_id = "req-1"


# ------------------------------------------------------------------------------- defaults


def test_settings_defaults_are_the_failure_policy_defaults() -> None:
    settings = Settings.from_env({})
    assert settings.failure_policy == FailurePolicy()
    assert (settings.retry_base_seconds, settings.retry_max_seconds) == (300, 6 * 3600)
    assert settings.record_retention_days == 90


def test_reconcile_defaults_are_the_reconcile_policy_defaults() -> None:
    settings = ReconcileSettings.from_env(REQUIRED)
    assert settings.policy == ReconcilePolicy()
    assert settings.policy.max_starts_per_run == 500
    assert settings.run_lease_seconds == 120
    assert settings.record_retention_days == FailurePolicy().record_retention_days
    assert settings.table == "ObjectState"
    assert settings.state_machine_arn == REQUIRED["PIPELINE_STATE_MACHINE_ARN"]
    assert settings.bucket == "ingest-bucket"
    assert settings.operations_topic_arn == REQUIRED["OPERATIONS_TOPIC_ARN"]
    assert settings.incoming_prefix == "incoming/"


def test_an_empty_variable_counts_as_unset() -> None:
    assert Settings.from_env({"RETRY_BASE_SECONDS": ""}).retry_base_seconds == 300


def test_unrelated_environment_variables_are_ignored() -> None:
    settings = Settings.from_env({"PATH": "/usr/bin", "retry_base_seconds": "1", "X": "y"})
    assert settings.retry_base_seconds == 300


# ------------------------------------------------------------------------------ overrides


@pytest.mark.parametrize(("model", "name", "attribute", "value"), INTEGERS)
def test_each_variable_overrides_its_default(
    model: type[EnvSettings], name: str, attribute: str, value: int
) -> None:
    default = getattr(model.from_env(env_for(model)), attribute)
    assert default != value
    settings = model.from_env(env_for(model, **{name: f" {value} "}))
    assert getattr(settings, attribute) == value


def test_overrides_reach_the_domain_policies() -> None:
    settings = Settings.from_env(
        {"RETRY_BASE_SECONDS": "60", "RETRY_MAX_SECONDS": "90", "RECORD_RETENTION_DAYS": "7"}
    )
    assert settings.failure_policy == FailurePolicy(60, 90, 7)
    assert settings.failure_policy.retry_delay(3) == 90
    reconcile = ReconcileSettings.from_env(
        env_for(
            ReconcileSettings,
            RECONCILE_MAX_ATTEMPTS="2",
            MISSED_EVENT_GRACE_SECONDS="61",
            MISSED_EVENT_LOOKBACK_HOURS="5",
            RECONCILE_MAX_STARTS_PER_RUN="9",
        )
    )
    assert reconcile.policy == ReconcilePolicy(2, 61, 5, 9)


def test_from_env_reads_os_environ_and_revalidates_when_it_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RETRY_BASE_SECONDS", "120")
    first = Settings.from_env()
    assert first.retry_base_seconds == 120
    assert Settings.from_env() is first  # validated once for this environment
    monkeypatch.setenv("RETRY_BASE_SECONDS", "180")
    assert Settings.from_env().retry_base_seconds == 180


# ------------------------------------------------------------------------------ bad values


@pytest.mark.parametrize("raw", ["abc", "1.5", "10s", "0", "-3"])
@pytest.mark.parametrize(("model", "name", "attribute", "value"), INTEGERS)
def test_a_bad_value_raises_configuration_error_naming_the_variable(
    model: type[EnvSettings], name: str, attribute: str, value: int, raw: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        model.from_env(env_for(model, **{name: raw}))
    message = str(info.value)
    assert message.startswith(f"[CONFIGURATION] environment variable {name}={raw!r}: ")
    expected = "Expected `int` >= 1" if raw in {"0", "-3"} else "Expected `int`, got `str`"
    assert expected in message
    assert info.value.details == {"variables": [name]}
    assert type(info.value) is ConfigurationError


@pytest.mark.parametrize("name", sorted(REQUIRED))
@pytest.mark.parametrize("raw", [None, "", "   "])
def test_a_missing_required_variable_raises_configuration_error(name: str, raw: str | None) -> None:
    env = {k: v for k, v in REQUIRED.items() if k != name}
    if raw is not None:
        env[name] = raw
    with pytest.raises(ConfigurationError) as info:
        ReconcileSettings.from_env(env)
    assert name in str(info.value)
    if raw is None or raw == "":
        assert str(info.value) == (
            f"[CONFIGURATION] environment variable {name} is not set (see template.yaml)"
        )
    assert info.value.details == {"variables": [name]}


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ConfigurationError) as info:
        ReconcileSettings.from_env({"INGEST_BUCKET": "b", "RUN_LEASE_SECONDS": "x"})
    assert sorted(info.value.details["variables"]) == [
        "OBJECT_STATE_TABLE",
        "OPERATIONS_TOPIC_ARN",
        "PIPELINE_STATE_MACHINE_ARN",
        "RUN_LEASE_SECONDS",
    ]


def test_retry_max_below_retry_base_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError) as info:
        Settings.from_env({"RETRY_BASE_SECONDS": "600", "RETRY_MAX_SECONDS": "300"})
    assert str(info.value) == (
        "[CONFIGURATION] environment variable RETRY_MAX_SECONDS=300 is less than "
        "RETRY_BASE_SECONDS=600"
    )
    assert Settings.from_env({"RETRY_BASE_SECONDS": "600", "RETRY_MAX_SECONDS": "600"})


# -------------------------------------------------------------------------------- handler


@pytest.fixture
def powertools_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Test")
    return monkeypatch


def test_handler_uses_the_environment(powertools_env: pytest.MonkeyPatch) -> None:
    powertools_env.setenv("RETRY_BASE_SECONDS", "60")
    powertools_env.setenv("RETRY_MAX_SECONDS", "90")
    report = classify_error.handler(TIMEOUT_EVENT, Context())
    message = json.loads(report["message"])
    failed_at = datetime.fromisoformat(message["failedAt"])
    retry_after = datetime.fromisoformat(message["retryAfter"])
    assert (retry_after - failed_at).total_seconds() == 90  # attempt 2: min(90, 60 * 2)


def test_handler_raises_configuration_error_for_a_bad_variable(
    powertools_env: pytest.MonkeyPatch,
) -> None:
    powertools_env.setenv("RETRY_MAX_SECONDS", "six hours")
    with pytest.raises(ConfigurationError, match="RETRY_MAX_SECONDS='six hours'"):
        classify_error.handler(TIMEOUT_EVENT, Context())


# ------------------------------------------------------------------------ template.yaml


def template_environment() -> dict[str, list[Any]]:
    """Every environment variable template.yaml sets (Globals and functions): its values."""
    found: dict[str, list[Any]] = {}
    blocks = [TEMPLATE["Globals"]["Function"]]
    blocks += [
        r["Properties"]
        for r in TEMPLATE["Resources"].values()
        if r["Type"] == "AWS::Serverless::Function"
    ]
    for block in blocks:
        for name, value in ((block.get("Environment") or {}).get("Variables") or {}).items():
            found.setdefault(name, []).append(value)
    return found


def parameter_of(value: Any) -> dict[str, Any] | None:
    """The template Parameter a variable's value refers to (``!Ref``), if any."""
    ref = value.get("Ref") if isinstance(value, dict) else None
    return TEMPLATE["Parameters"].get(ref) if ref else None


def test_every_variable_the_settings_read_is_set_by_the_template() -> None:
    read = {name for model in MODELS for name in model.env_names()}
    assert sorted(read - set(template_environment())) == []


@pytest.mark.parametrize("model", MODELS)
def test_template_defaults_equal_the_code_defaults(model: type[EnvSettings]) -> None:
    """The template's defaults are the deployed values; the code's apply when a variable is
    unset. They must agree, or a deployment and a unit test run with different policies."""
    set_by_template = template_environment()
    checked = 0
    for field in msgspec.structs.fields(model):
        alias = field.encode_name
        if field.required or alias not in set_by_template:
            continue
        for value in set_by_template[alias]:
            parameter = parameter_of(value)
            deployed = parameter["Default"] if parameter else value
            assert str(deployed) == str(field.default), alias
            checked += 1
    assert checked >= 3


def test_the_smallest_values_the_template_allows_are_valid() -> None:
    checked = 0
    for model in MODELS:
        smallest = dict(REQUIRED)
        for alias, values in template_environment().items():
            for value in values:
                parameter = parameter_of(value)
                if alias in model.env_names() and parameter and "MinValue" in parameter:
                    smallest[alias] = str(parameter["MinValue"])
                    checked += 1
        model.from_env(smallest)
    assert checked >= 5
