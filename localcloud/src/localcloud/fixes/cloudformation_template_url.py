"""Fix: a ``TemplateURL`` is read from S3 in every form S3 gives an object's URL.

CloudFormation reads a template (CreateStack, CreateChangeSet, UpdateStack,
GetTemplateSummary, ValidateTemplate) from an S3 URL, path-style
(``https://s3.<region>.amazonaws.com/<bucket>/<key>``) or virtual-hosted
(``https://<bucket>.s3.<region>.amazonaws.com/<key>``), with ``?versionId=``. Against a local
endpoint, the SAM CLI and the AWS CLI build the path-style URL on the endpoint
(``http://127.0.0.1:4566/<bucket>/<key>``): moto took ``127`` for the bucket (NoSuchBucket), and
ignored the version. A URL whose object does not exist is refused as CloudFormation refuses
it (ValidationError "S3 error: ...").
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from moto.cloudformation.exceptions import ValidationError
from moto.cloudformation.responses import CloudFormationResponse
from moto.s3.models import s3_backends

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "s3_location"]

_LOCAL = ("localhost", "127.0.0.1", "::1")


def s3_location(url: str) -> tuple[str, str, str | None]:
    """(bucket, key, version id) of an S3 object URL; ValidationError if it is none."""
    parts = urlparse(url)
    host, path = (parts.hostname or "").lower(), unquote(parts.path).lstrip("/")
    version = next(iter(parse_qs(parts.query).get("versionId", [])), None)
    path_style = host in _LOCAL or host.startswith(("s3.", "s3-")) or host == "s3.amazonaws.com"
    if path_style and "/" in path:
        bucket, key = path.split("/", 1)
    elif ".s3." in host or ".s3-" in host:
        bucket, key = host.split(".s3", 1)[0], path
    elif host.endswith(".localhost"):
        bucket, key = host[: -len(".localhost")], path
    else:
        bucket = key = ""
    if not bucket or not key:
        raise ValidationError(message="TemplateURL must be a supported URL.")
    return bucket, key, version


def _get_stack_from_s3_url(self: CloudFormationResponse, template_url: str) -> Any:
    bucket, key, version = s3_location(template_url)
    backend = s3_backends[self.current_account][self.partition]
    found = None
    if bucket in backend.buckets:
        found = backend.get_object(bucket, key, version_id=version)
    if found is None:
        raise ValidationError(
            message=f"S3 error: The specified key does not exist. ({bucket}/{key})"
        )
    return found.value.decode("utf-8")


def _build(rt: Runtime) -> Targets:
    return {(CloudFormationResponse, "_get_stack_from_s3_url"): _get_stack_from_s3_url}


PATCHES = [
    Patch(
        name="cloudformation-template-url",
        kind=Kind.FIX,
        reason="A TemplateURL is read from S3 in every URL form (path-style on a local "
        "endpoint, as the SAM CLI sends it; virtual-hosted; versionId); moto took the "
        "endpoint's host for the bucket.",
        test="localcloud/tests/test_sam_cli_deploy.py"
        "::test_a_template_url_on_the_local_endpoint_is_read",
        build=_build,
        upstream="not reported yet (moto cloudformation/utils.py get_stack_from_s3_url)",
    ),
]
