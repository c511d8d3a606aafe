"""What an SDK call asks IAM for: the actions, resources and condition keys AWS authorizes.

``required(service, operation, params, region, account)`` maps one botocore operation and
its parameters to the :class:`Need` list the Service Authorization Reference gives for it
(e.g. S3 ``HeadObject`` with a version id needs ``s3:GetObjectVersion`` on the object,
``CopyObject`` needs ``s3:GetObject`` on the source and ``s3:PutObject`` on the target,
DynamoDB ``Query`` on an index needs ``dynamodb:Query`` on ``table/T/index/I``). An operation
not in the tables needs ``<prefix>:<Operation>`` on ``*``: a statement scoped to resources
then does not match it, so an unmapped call is refused visibly rather than allowed.

``KNOWN_CONDITION_KEYS`` are the keys the local cloud puts in a request's context; a policy
using any other key is refused at deploy time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

__all__ = ["KNOWN_CONDITION_KEYS", "Need", "arn_of_queue_url", "required"]

#: condition keys the local cloud supplies (global keys, and the service keys below)
KNOWN_CONDITION_KEYS = frozenset(
    {
        "aws:SecureTransport",
        "aws:SourceArn",
        "aws:SourceAccount",
        "aws:SourceOwner",
        "aws:PrincipalArn",
        "aws:PrincipalAccount",
        "aws:PrincipalServiceName",
        "s3:prefix",
        "s3:delimiter",
        "kms:ViaService",
        "kms:CallerAccount",
        "sts:RoleSessionName",  # AssumeRole (a role's trust policy)
        "sts:ExternalId",
        "iam:AWSServiceName",  # iam:CreateServiceLinkedRole's AWSServiceName
        # Only in iam:PassRole requests, which AWS makes when a call hands a role to a service
        # (CreateFunction, CreateStateMachine, a task starting an ECS task ...): the local
        # cloud never checks iam:PassRole, so a statement conditioned on these never decides.
        "iam:PassedToService",
        "iam:AssociatedResourceArn",
    }
)
# botocore signing name -> IAM action prefix, where they differ
_PREFIX = {"monitoring": "cloudwatch", "email": "ses"}


@dataclass(frozen=True)
class Need:
    action: str
    resource: str
    context: Mapping[str, Any] = field(default_factory=dict)


def arn_of_queue_url(url: str, region: str, account: str) -> str:
    path = urlparse(url).path.strip("/").split("/")
    owner, name = (path[0], path[1]) if len(path) >= 2 else (account, path[-1])
    return f"arn:aws:sqs:{region}:{owner}:{name}"


def _s3(operation: str, params: Mapping[str, Any]) -> list[Need]:  # noqa: PLR0911 - a table
    bucket = str(params.get("Bucket", ""))
    bucket_arn = f"arn:aws:s3:::{bucket}"
    key = params.get("Key")
    obj = f"{bucket_arn}/{key}" if key is not None else bucket_arn
    versioned = bool(params.get("VersionId"))
    listing = {"s3:prefix": params.get("Prefix", ""), "s3:delimiter": params.get("Delimiter")}
    listing = {k: v for k, v in listing.items() if v is not None}
    # with a VersionId, the version's action: s3:GetObjectVersion, s3:GetObjectVersionTagging
    version = "ObjectVersion" if versioned else "Object"
    simple = {
        "GetObject": f"s3:Get{version}",
        "HeadObject": f"s3:Get{version}",
        "GetObjectAttributes": f"s3:Get{version}Attributes",
        "GetObjectTagging": f"s3:Get{version}Tagging",
        "PutObjectTagging": f"s3:Put{version}Tagging",
        "DeleteObject": f"s3:Delete{version}",
        "PutObject": "s3:PutObject",
        "CreateMultipartUpload": "s3:PutObject",
        "UploadPart": "s3:PutObject",
        "CompleteMultipartUpload": "s3:PutObject",
        "AbortMultipartUpload": "s3:AbortMultipartUpload",
        "ListParts": "s3:ListMultipartUploadParts",
    }
    if operation in simple:
        return [Need(simple[operation], obj)]
    if operation in ("CopyObject", "UploadPartCopy"):
        return [Need("s3:PutObject", obj), _copy_source(params.get("CopySource"))]
    if operation in ("ListObjects", "ListObjectsV2", "HeadBucket"):
        return [Need("s3:ListBucket", bucket_arn, listing)]
    if operation == "ListObjectVersions":
        return [Need("s3:ListBucketVersions", bucket_arn, listing)]
    if operation == "ListMultipartUploads":
        return [Need("s3:ListBucketMultipartUploads", bucket_arn, listing)]
    if operation == "DeleteObjects":
        objects = (params.get("Delete") or {}).get("Objects") or []
        return [
            Need(
                "s3:DeleteObjectVersion" if o.get("VersionId") else "s3:DeleteObject",
                f"{bucket_arn}/{o.get('Key')}",
            )
            for o in objects
        ]
    if operation == "ListBuckets":
        return [Need("s3:ListAllMyBuckets", "*")]
    # bucket configuration: GetBucketVersioning -> s3:GetBucketVersioning on the bucket
    return [Need(f"s3:{operation}", obj if key is not None else bucket_arn)]


def _copy_source(source: Any) -> Need:
    if isinstance(source, Mapping):
        bucket, key, version = source.get("Bucket"), source.get("Key"), source.get("VersionId")
    else:
        text = str(source or "").lstrip("/")
        path, _, query = text.partition("?")
        bucket, _, key = unquote(path).partition("/")
        version = next(iter(parse_qs(query).get("versionId") or []), None)
    action = "s3:GetObjectVersion" if version else "s3:GetObject"
    return Need(action, f"arn:aws:s3:::{bucket}/{key}")


def _dynamodb(operation: str, params: Mapping[str, Any], region: str, account: str) -> list[Need]:
    tables = f"arn:aws:dynamodb:{region}:{account}:table/"

    def table(name: Any) -> str:
        return str(name) if str(name).startswith("arn:") else f"{tables}{name}"

    if operation in ("BatchGetItem", "BatchWriteItem"):
        names = params.get("RequestItems") or {}
        return [Need(f"dynamodb:{operation}", table(name)) for name in names]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        verbs = {
            "Put": "PutItem",
            "Update": "UpdateItem",
            "Delete": "DeleteItem",
            "ConditionCheck": "ConditionCheckItem",
            "Get": "GetItem",
        }
        items = params.get("TransactItems") or []
        pairs = [pair for item in items for pair in item.items()]
        return [Need(f"dynamodb:{verbs[k]}", table(body.get("TableName"))) for k, body in pairs]
    if operation in ("DescribeStream", "GetShardIterator"):  # DynamoDB Streams
        return [Need(f"dynamodb:{operation}", str(params["StreamArn"]))]
    if operation == "GetRecords":  # moto's shard iterator is "<stream ARN>|1|<id>"
        return [Need(f"dynamodb:{operation}", str(params.get("ShardIterator")).split("|")[0])]
    resource = table(params.get("TableName", "*"))
    if params.get("IndexName"):
        resource = f"{resource}/index/{params['IndexName']}"
    return [Need(f"dynamodb:{operation}", resource)]


def _arn_param(params: Mapping[str, Any], *names: str) -> str:
    return next((str(params[name]) for name in names if params.get(name)), "*")


def _function_arn(name: str, qualifier: Any, region: str, account: str) -> str:
    """Invoke's FunctionName: a name, ``name:qualifier``, a partial ARN
    (``123456789012:function:name[:qualifier]``) or an ARN; the ARN IAM checks."""
    if not name.startswith("arn:"):
        parts = name.split(":")
        if parts[0].isdigit() and len(parts) >= 3:  # partial ARN
            name, qualifier = parts[2], qualifier or (parts[3] if len(parts) > 3 else None)
        else:
            name, qualifier = parts[0], qualifier or (parts[1] if len(parts) > 1 else None)
        name = f"arn:aws:lambda:{region}:{account}:function:{name}"
    return f"{name}:{qualifier}" if qualifier and name.count(":") == 6 else name


def _glue(operation: str, params: Mapping[str, Any], region: str, account: str) -> list[Need]:
    """Data Catalog calls need their action on the catalog and each resource below it that
    they name: ``GetTable`` on the catalog, ``database/D`` and ``table/D/T`` (AWS Glue's
    "Specifying AWS Glue resource ARNs"); a listing (``GetTables``) on ``table/D/*``."""
    catalog = f"arn:aws:glue:{region}:{params.get('CatalogId') or account}:catalog"
    database = params.get("DatabaseName")
    if database is None and "Database" in operation:
        database = params.get("Name") or (params.get("DatabaseInput") or {}).get("Name")
    arns = [catalog]
    if database is not None:
        arns.append(f"{catalog[: -len('catalog')]}database/{database}")
        if "Table" in operation or "Partition" in operation:
            table = (
                params.get("TableName")
                or (params.get("Name") if "Table" in operation else None)
                or (params.get("TableInput") or {}).get("Name")
                or "*"
            )
            arns.append(f"{catalog[: -len('catalog')]}table/{database}/{table}")
    return [Need(f"glue:{operation}", arn) for arn in arns]


def required(  # noqa: PLR0911, PLR0912 - one branch per service
    signing_name: str, operation: str, params: Mapping[str, Any], region: str, account: str
) -> list[Need]:
    """The authorizations AWS checks for ``operation`` of the service ``signing_name``."""
    prefix = _PREFIX.get(signing_name, signing_name)
    if prefix == "s3":
        return _s3(operation, params)
    if prefix == "dynamodb":
        return _dynamodb(operation, params, region, account)
    if prefix == "sqs":
        action = f"sqs:{operation.removesuffix('Batch')}"
        if operation == "GetQueueUrl":
            owner = params.get("QueueOwnerAWSAccountId") or account
            return [Need(action, f"arn:aws:sqs:{region}:{owner}:{params.get('QueueName')}")]
        url = params.get("QueueUrl")
        return [Need(action, arn_of_queue_url(str(url), region, account) if url else "*")]
    if prefix == "sns":
        action = "sns:Publish" if operation == "PublishBatch" else f"sns:{operation}"
        return [Need(action, _arn_param(params, "TopicArn", "TargetArn", "ResourceArn"))]
    if prefix == "states":
        arn = _arn_param(params, "stateMachineArn", "executionArn", "mapRunArn", "resourceArn")
        return [Need(f"states:{operation}", arn.split("#", 1)[0])]
    if prefix == "lambda":
        verb = "InvokeFunction" if operation in ("Invoke", "InvokeAsync") else operation
        name = params.get("FunctionName")
        if name:
            resource = _function_arn(str(name), params.get("Qualifier"), region, account)
        else:  # a function version's sub-resource, or none
            resource = str(params.get("DurableExecutionArn") or "*")
        return [Need(f"lambda:{verb}", resource)]
    if prefix == "iam" and operation == "CreateServiceLinkedRole":
        service = {"iam:AWSServiceName": params.get("AWSServiceName", "")}
        return [Need("iam:CreateServiceLinkedRole", "*", service)]
    if prefix == "kms":
        key = str(params.get("KeyId", "*"))
        if not key.startswith("arn:") and key != "*":
            name = key if key.startswith("alias/") else f"key/{key}"
            key = f"arn:aws:kms:{region}:{account}:{name}"
        return [Need(f"kms:{operation}", key)]
    if prefix == "events" and operation == "PutEvents":
        buses = {str(e.get("EventBusName") or "default") for e in params.get("Entries") or []}
        bus = f"arn:aws:events:{region}:{account}:event-bus/"
        return [
            Need("events:PutEvents", b if b.startswith("arn:") else bus + b) for b in sorted(buses)
        ]
    if prefix == "glue":
        return _glue(operation, params, region, account)
    if prefix == "sts" and operation == "GetCallerIdentity":
        return []  # needs no permission
    if prefix == "sts" and operation == "AssumeRole":  # judged with the role's trust policy
        context = {"sts:RoleSessionName": params.get("RoleSessionName")}
        if params.get("ExternalId") is not None:
            context["sts:ExternalId"] = params["ExternalId"]
        return [Need("sts:AssumeRole", str(params.get("RoleArn") or "*"), context)]
    if prefix == "scheduler" and operation.endswith("Schedule"):
        # resource type schedule: arn:aws:scheduler:<region>:<account>:schedule/<group>/<name>
        group = params.get("GroupName") or "default"
        resource = f"arn:aws:scheduler:{region}:{account}:schedule/{group}/{params.get('Name')}"
        return [Need(f"scheduler:{operation}", resource)]
    return [Need(f"{prefix}:{operation}", "*")]
