"""Properties moto's models ignore, applied after create_stack (S3, DynamoDB, Lambda)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

from localcloud.stack.base import StackDeployError
from localcloud.stack.clients import DeployClients
from localcloud.stack.support import PROPERTY_SUPPORT


def _bool(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).lower() == "true"


def _only(mapping: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(mapping) - allowed)
    if extra:
        raise StackDeployError(f"{where}: {', '.join(extra)} not applied locally")


def _notification_configuration(cfg: dict[str, Any], where: str) -> dict[str, Any]:
    """CloudFormation NotificationConfiguration -> PutBucketNotificationConfiguration shape."""
    kinds = (
        ("QueueConfigurations", "QueueConfigurations", "Queue", "QueueArn"),
        ("TopicConfigurations", "TopicConfigurations", "Topic", "TopicArn"),
        ("LambdaConfigurations", "LambdaFunctionConfigurations", "Function", "LambdaFunctionArn"),
    )
    _only(cfg, {k[0] for k in kinds} | {"EventBridgeConfiguration"}, where)
    out: dict[str, Any] = {}
    for cfn_key, api_key, cfn_arn, api_arn in kinds:
        for item in cfg.get(cfn_key) or []:
            entry: dict[str, Any] = {api_arn: item[cfn_arn], "Events": [item["Event"]]}
            rules = ((item.get("Filter") or {}).get("S3Key") or {}).get("Rules")
            if rules:
                entry["Filter"] = {"Key": {"FilterRules": rules}}
            out.setdefault(api_key, []).append(entry)
    eventbridge = cfg.get("EventBridgeConfiguration")
    if eventbridge is not None and _bool(eventbridge.get("EventBridgeEnabled", True)):
        out["EventBridgeConfiguration"] = {}
    return out


_LIFECYCLE_KEYS = {
    "Id", "Status", "Prefix", "ExpirationInDays", "ExpirationDate", "ExpiredObjectDeleteMarker",
    "NoncurrentVersionExpiration", "NoncurrentVersionExpirationInDays",
    "AbortIncompleteMultipartUpload",
}  # fmt: skip


def _lifecycle_rule(rule: dict[str, Any], where: str) -> dict[str, Any]:
    """One CloudFormation lifecycle rule -> PutBucketLifecycleConfiguration shape."""
    _only(rule, _LIFECYCLE_KEYS, where)
    prefix = {"Prefix": rule["Prefix"]} if rule.get("Prefix") else {}
    out: dict[str, Any] = {"Status": rule["Status"], "Filter": prefix}
    if "Id" in rule:
        out["ID"] = rule["Id"]
    expiration: dict[str, Any] = {}
    if "ExpirationInDays" in rule:
        expiration["Days"] = int(rule["ExpirationInDays"])
    if "ExpirationDate" in rule:
        expiration["Date"] = rule["ExpirationDate"]
    if "ExpiredObjectDeleteMarker" in rule:
        expiration["ExpiredObjectDeleteMarker"] = _bool(rule["ExpiredObjectDeleteMarker"])
    if expiration:
        out["Expiration"] = expiration
    noncurrent = dict(rule.get("NoncurrentVersionExpiration") or {})
    if "NoncurrentVersionExpirationInDays" in rule:
        noncurrent["NoncurrentDays"] = rule["NoncurrentVersionExpirationInDays"]
    if noncurrent:
        out["NoncurrentVersionExpiration"] = {k: int(v) for k, v in noncurrent.items()}
    if "AbortIncompleteMultipartUpload" in rule:
        days = rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"]
        out["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": int(days)}
    return out


_REPLICATION_RULE_KEYS = {
    "Id", "Prefix", "Filter", "Status", "Priority", "Destination", "DeleteMarkerReplication",
}  # fmt: skip


def _replication_configuration(cfg: dict[str, Any], where: str) -> dict[str, Any]:
    """CloudFormation ReplicationConfiguration -> PutBucketReplication shape; what the
    local cloud does not run (features/s3_replication.py) is refused by name."""
    _only(cfg, {"Role", "Rules"}, where)
    rules = []
    for rule in cfg["Rules"]:
        _only(rule, _REPLICATION_RULE_KEYS, f"{where} rule")
        _only(rule["Destination"], {"Bucket", "StorageClass"}, f"{where} rule Destination")
        out: dict[str, Any] = {"Status": rule["Status"], "Destination": rule["Destination"]}
        if "Id" in rule:
            out["ID"] = rule["Id"]
        if "Priority" in rule:
            out["Priority"] = int(rule["Priority"])
        if "Prefix" in rule:
            out["Prefix"] = rule["Prefix"]
        if "Filter" in rule:
            filt = rule["Filter"]
            _only(filt, {"Prefix", "TagFilter", "And"}, f"{where} rule Filter")
            out["Filter"] = {k: v for k, v in filt.items() if k == "Prefix"}
            if "TagFilter" in filt:
                out["Filter"]["Tag"] = filt["TagFilter"]
            if "And" in filt:
                both = filt["And"]
                out["Filter"]["And"] = {k: v for k, v in both.items() if k == "Prefix"}
                out["Filter"]["And"]["Tags"] = both.get("TagFilters") or []
            marker = rule.get("DeleteMarkerReplication") or {"Status": "Disabled"}
            out["DeleteMarkerReplication"] = marker
        elif "DeleteMarkerReplication" in rule:
            out["DeleteMarkerReplication"] = rule["DeleteMarkerReplication"]
        rules.append(out)
    return {"Role": cfg["Role"], "Rules": rules}


# CloudFormation's CorsRule property names -> PutBucketCors's, where they differ
_CORS_NAMES = {"Id": "ID", "ExposedHeaders": "ExposeHeaders", "MaxAge": "MaxAgeSeconds"}


def _apply_bucket(name: str, props: dict[str, Any], resource: Any, clients: DeployClients) -> None:
    s3 = clients("s3")
    if "VersioningConfiguration" in props:
        status = props["VersioningConfiguration"]["Status"]
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": status})
    if "NotificationConfiguration" in props:
        config = _notification_configuration(
            props["NotificationConfiguration"], f"{name} NotificationConfiguration"
        )
        s3.put_bucket_notification_configuration(Bucket=name, NotificationConfiguration=config)
    if "PublicAccessBlockConfiguration" in props:
        block = {k: _bool(v) for k, v in props["PublicAccessBlockConfiguration"].items()}
        s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration=block)
    if "OwnershipControls" in props:
        s3.put_bucket_ownership_controls(Bucket=name, OwnershipControls=props["OwnershipControls"])
    if "LoggingConfiguration" in props:
        # Server access logging: moto checks the destination exists and its policy (or ACL)
        # lets the logging service write, as S3 does; it delivers no log records.
        config = props["LoggingConfiguration"]
        _only(config, {"DestinationBucketName", "LogFilePrefix"}, f"{name} LoggingConfiguration")
        enabled = {
            "TargetBucket": config.get("DestinationBucketName", name),
            "TargetPrefix": config.get("LogFilePrefix", ""),
        }
        s3.put_bucket_logging(Bucket=name, BucketLoggingStatus={"LoggingEnabled": enabled})
    if "CorsConfiguration" in props:  # served by bucket_cors.py to the origins it allows
        s3.put_bucket_cors(Bucket=name, CORSConfiguration={"CORSRules": [
            {_CORS_NAMES.get(k, k): int(v) if k == "MaxAge" else v for k, v in rule.items()}
            for rule in props["CorsConfiguration"]["CorsRules"]
        ]})  # fmt: skip
    if "ReplicationConfiguration" in props:  # run by features/s3_replication.py
        config = _replication_configuration(
            props["ReplicationConfiguration"], f"{name} ReplicationConfiguration"
        )
        s3.put_bucket_replication(Bucket=name, ReplicationConfiguration=config)
    if "LifecycleConfiguration" in props:
        lifecycle = props["LifecycleConfiguration"]
        _only(lifecycle, {"Rules"}, f"{name} LifecycleConfiguration")
        rules = [_lifecycle_rule(r, f"{name} lifecycle rule") for r in lifecycle["Rules"]]
        s3.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration={"Rules": rules})


def _apply_table(name: str, props: dict[str, Any], resource: Any, clients: DeployClients) -> None:
    ddb = clients("dynamodb")
    ttl = props.get("TimeToLiveSpecification")
    if ttl and _bool(ttl.get("Enabled", False)):
        ddb.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
        )
    pitr = props.get("PointInTimeRecoverySpecification")
    if pitr and _bool(pitr.get("PointInTimeRecoveryEnabled", False)):
        spec: dict[str, Any] = {"PointInTimeRecoveryEnabled": True}
        if "RecoveryPeriodInDays" in pitr:
            spec["RecoveryPeriodInDays"] = int(pitr["RecoveryPeriodInDays"])
        ddb.update_continuous_backups(TableName=name, PointInTimeRecoverySpecification=spec)


def _apply_function(name: str, props: dict[str, Any], fn: Any, clients: DeployClients) -> None:
    # moto's UpdateFunctionConfiguration ignores TracingConfig: set them on moto's model, as
    # its own CreateFunction does from the same keys (awslambda/models.py LambdaFunction).
    # CloudFormation gives Lambda every variable as a string (a Number parameter's Ref too)
    fn.environment_vars = {
        key: json.dumps(value) if isinstance(value, bool) else str(value)
        for key, value in (fn.environment_vars or {}).items()
    }
    if "Layers" in props:
        fn.layers = fn._get_layers_data(props["Layers"])  # public layers: stand-in (patches)
    if "TracingConfig" in props:
        fn.tracing_config = props["TracingConfig"]
    if "Architectures" in props:
        fn.architectures = props["Architectures"]
    if "EphemeralStorage" in props:
        fn.ephemeral_storage = int(props["EphemeralStorage"]["Size"])
    if "Tags" in props:
        fn.tags = {tag["Key"]: tag["Value"] for tag in props["Tags"]}
    if "TenancyConfig" in props:  # run by features/lambda_tenancy.py
        fn.tenancy_config = dict(props["TenancyConfig"])
    if "LoggingConfig" in props:  # its LogGroup: features/lambda_logs.py (LogFormat: text here)
        fn.logging_config = dict(props["LoggingConfig"])
    if "DeadLetterConfig" in props:  # checked as Lambda checks it (features/lambda_async_config.py)
        from localcloud.features.lambda_async_config import set_dead_letter_config

        set_dead_letter_config(fn, props["DeadLetterConfig"])
    if "DurableConfig" in props:  # run by features/lambda_durable.py
        from localcloud.features.lambda_durable import set_durable_config

        set_durable_config(fn, props["DurableConfig"])


_APPLIERS: dict[str, Callable[[str, dict[str, Any], Any, DeployClients], None]] = {
    "AWS::S3::Bucket": _apply_bucket,
    "AWS::DynamoDB::Table": _apply_table,
    "AWS::Lambda::Function": _apply_function,
}


class _Created(NamedTuple):
    logical_id: str
    rtype: str
    props: dict[str, Any]  # resolved (Ref, GetAtt, Sub ...)
    resource: Any


def _apply_ignored_properties(created: list[_Created], clients: DeployClients) -> None:
    for item in created:
        support = PROPERTY_SUPPORT[item.rtype]
        props = {k: v for k, v in item.props.items() if k in support.applied}
        if not props:
            continue
        try:
            _APPLIERS[item.rtype](item.resource.physical_resource_id, props, item.resource, clients)
        except StackDeployError:
            raise
        except Exception as exc:
            raise StackDeployError(
                f"{item.logical_id} ({item.rtype}): applying {', '.join(sorted(props))} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
