"""SSM parameters: the public ones the template resolves (seeded), checked before deploying."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError
from moto.core import DEFAULT_ACCOUNT_ID

from localcloud.stack.base import StackDeployError
from localcloud.stack.clients import DeployClients


def put_public_parameter(name: str, value: str, *, region: str) -> None:
    """Seed a public SSM parameter (``/aws/service/...``) that AWS publishes and moto's API
    refuses to write (reserved prefix), the way moto seeds its own public parameters."""
    from moto.ssm.models import Parameter, ssm_backends

    versions = ssm_backends[DEFAULT_ACCOUNT_ID][region]._parameters[name]
    versions.append(
        Parameter(
            account_id=DEFAULT_ACCOUNT_ID,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=datetime.now(UTC),
            version=len(versions) + 1,
            data_type="text",
        )
    )


def _check_ssm_parameters(
    template: dict[str, Any], parameters: dict[str, str], clients: DeployClients
) -> None:
    ssm = clients("ssm")
    missing = []
    for key, spec in (template.get("Parameters") or {}).items():
        if not str(spec.get("Type", "")).startswith("AWS::SSM::Parameter::"):
            continue
        name = parameters.get(key, spec.get("Default"))
        try:
            ssm.get_parameter(Name=name)
        except ClientError:
            missing.append(f"{key} -> {name}")
    if missing:
        raise StackDeployError(
            f"SSM parameters not found in the local SSM: {', '.join(missing)}. AWS publishes "
            "/aws/service/... parameters; seed them with stack.put_public_parameter()."
        )
