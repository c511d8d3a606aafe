"""Shims for resource types moto's CloudFormation does not create (``SHIMS``), and public
layer versions moto has never seen."""

from __future__ import annotations

import copy
import json
from typing import Any

from moto.awslambda.utils import get_backend as get_lambda_backend
from moto.backends import get_backend
from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

from localcloud.stack.base import _PARTITION, PUBLIC_LAYER_ACCOUNTS, StackDeployError


class _Shim:
    """Duck-typed like moto's CloudFormationModel (not a subclass: moto's model map is built
    from CloudFormationModel.__subclasses__(), and must keep saying what moto itself does)."""

    TYPE = ""
    SERVICE = ""  # whose moto backend the shim calls (moto.backends.get_backend)
    PROPERTIES: frozenset[str] = frozenset()
    ATTRIBUTES: frozenset[str] = frozenset()

    def __init__(self, physical_resource_id: str, account_id: str, region: str, **kw: Any) -> None:
        self.physical_resource_id = physical_resource_id
        self.account_id, self.region = account_id, region
        vars(self).update(kw)  # the shim's own: arn, function, targets...

    @classmethod
    def backend(cls, account_id: str, region: str) -> Any:
        if cls.SERVICE == "lambda":  # moto's Lambda backend, or lambda-simple's
            return get_lambda_backend(account_id, region)
        return get_backend(cls.SERVICE)[account_id][region]

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in cls.ATTRIBUTES

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        """Fn::GetAtt: a declared attribute is the shim's attribute of that name ("Arn" -> arn)."""
        if attribute_name in self.ATTRIBUTES:
            return getattr(self, attribute_name.lower())
        raise UnformattedGetAttTemplateException()

    def is_created(self) -> bool:
        return True

    @classmethod
    def create_from_cloudformation_json(
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> _Shim:
        # unsupported_properties() has checked the property names against PROPERTIES
        return cls.create(resource_name, cloudformation_json.get("Properties") or {}, account_id,
                          region_name)  # fmt: skip

    @classmethod
    def update_from_cloudformation_json(
        cls,
        original_resource: _Shim,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> _Shim:
        """A stack update of changed properties: the resource made again with them (what
        CloudFormation does where a property needs replacement; for the rest the outcome is
        the same configuration)."""
        original_resource.delete(account_id, region_name)
        return cls.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        raise NotImplementedError

    def delete(self, account_id: str, region_name: str) -> None:
        raise NotImplementedError


class _BucketPolicy(_Shim):
    TYPE, SERVICE = "AWS::S3::BucketPolicy", "s3"
    PROPERTIES = frozenset({"Bucket", "PolicyDocument"})
    bucket: str

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        document = props["PolicyDocument"]
        if isinstance(document, str):
            document = json.loads(document)
        # Stored as written; the local cloud's IAM evaluates it (conditions included) on
        # every call made by a principal (iam/enforcement.py).
        backend = cls.backend(account_id, _PARTITION)
        backend.put_bucket_policy(props["Bucket"], json.dumps(document).encode())
        return cls(name, account_id, region, bucket=props["Bucket"])

    def delete(self, account_id: str, region_name: str) -> None:
        self.backend(account_id, _PARTITION).delete_bucket_policy(self.bucket)


class _ResourcePolicy(_Shim):
    """A resource policy set on each resource a property lists (QueuePolicy, TopicPolicy),
    and taken back on delete."""

    LISTED = ""  # the property listing the resources
    targets: list[str]

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        document = props["PolicyDocument"]
        policy = document if isinstance(document, str) else json.dumps(document)
        targets = list(props[cls.LISTED])
        for target in targets:
            cls._set(account_id, region, target, policy)
        return cls(name, account_id, region, targets=targets)

    def delete(self, account_id: str, region_name: str) -> None:
        for target in self.targets:
            self._set(account_id, region_name, target, None)

    @classmethod
    def _set(cls, account_id: str, region: str, target: str, policy: str | None) -> None:
        raise NotImplementedError


class _QueuePolicy(_ResourcePolicy):
    TYPE, SERVICE, LISTED = "AWS::SQS::QueuePolicy", "sqs", "Queues"
    PROPERTIES = frozenset({"Queues", "PolicyDocument"})

    @classmethod
    def _set(cls, account_id: str, region: str, target: str, policy: str | None) -> None:
        name = target.rstrip("/").rsplit("/", 1)[-1]  # a queue URL -> its name
        cls.backend(account_id, region).set_queue_attributes(name, {"Policy": policy or ""})


class _TopicPolicy(_ResourcePolicy):
    TYPE, SERVICE, LISTED = "AWS::SNS::TopicPolicy", "sns", "Topics"
    PROPERTIES = frozenset({"Topics", "PolicyDocument"})

    @classmethod
    def _set(cls, account_id: str, region: str, target: str, policy: str | None) -> None:
        backend = cls.backend(account_id, region)
        if policy is not None:
            backend.set_topic_attribute(target, "policy", policy)  # as SetTopicAttributes does
        elif (topic := backend.topics.get(target)) is not None:  # the default policy again
            topic._policy_json = topic._create_default_topic_policy(region, account_id, topic.name)


class _Alias(_Shim):
    """AWS::Lambda::Alias (what SAM's AutoPublishAlias makes): Ref is the alias ARN."""

    TYPE, SERVICE = "AWS::Lambda::Alias", "lambda"
    PROPERTIES = frozenset({"FunctionName", "FunctionVersion", "Name", "Description",
                            "RoutingConfig", "ProvisionedConcurrencyConfig"})  # fmt: skip
    ATTRIBUTES = frozenset({"AliasArn"})
    function: str
    name: str

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        backend = cls.backend(account_id, region)
        function = backend.get_function(props["FunctionName"]).function_name
        alias = backend.create_alias(
            name=props["Name"],
            function_name=function,
            function_version=str(props["FunctionVersion"]),
            description=props.get("Description", ""),
            routing_config=props.get("RoutingConfig"),
        )
        return cls(
            alias.arn, account_id, region, aliasarn=alias.arn, function=function, name=props["Name"]
        )

    def delete(self, account_id: str, region_name: str) -> None:
        self.backend(account_id, region_name).delete_alias(self.name, self.function)


class _Subscription(_Shim):
    TYPE, SERVICE = "AWS::SNS::Subscription", "sns"
    _ATTRIBUTES = ("DeliveryPolicy", "FilterPolicy", "FilterPolicyScope", "RawMessageDelivery",
                   "RedrivePolicy", "ReplayPolicy", "SubscriptionRoleArn")  # fmt: skip
    PROPERTIES = frozenset({"TopicArn", "Protocol", "Endpoint", "Region", *_ATTRIBUTES})

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        if props.get("Region", region) != region:
            raise StackDeployError(f"{cls.TYPE} {name}: cross-region subscriptions are not local")
        backend = cls.backend(account_id, region)
        subscription = backend.subscribe(props["TopicArn"], props["Endpoint"], props["Protocol"])
        for attribute in cls._ATTRIBUTES:
            if attribute in props:
                value = props[attribute]
                if isinstance(value, dict | list | bool):  # a bool as "true" / "false"
                    value = json.dumps(value)
                backend.set_subscription_attributes(subscription.arn, attribute, value)
        return cls(subscription.arn, account_id, region)

    def delete(self, account_id: str, region_name: str) -> None:
        self.backend(account_id, region_name).unsubscribe(self.physical_resource_id)


class _Alarm(_Shim):
    TYPE, SERVICE = "AWS::CloudWatch::Alarm", "cloudwatch"
    PROPERTIES = frozenset({
        "ActionsEnabled", "AlarmActions", "AlarmDescription", "AlarmName", "ComparisonOperator",
        "DatapointsToAlarm", "Dimensions", "EvaluateLowSampleCountPercentile",
        "EvaluationPeriods", "ExtendedStatistic", "InsufficientDataActions", "MetricName",
        "Namespace", "OKActions", "Period", "Statistic", "Tags", "Threshold", "ThresholdMetricId",
        "TreatMissingData", "Unit",
    })  # fmt: skip
    ATTRIBUTES = frozenset({"Arn"})

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        def number(key: str, kind: type = int) -> Any:
            return kind(props[key]) if key in props else None

        alarm = cls.backend(account_id, region).put_metric_alarm(
            name=props.get("AlarmName", name),
            namespace=props.get("Namespace"),
            metric_name=props.get("MetricName"),
            comparison_operator=props["ComparisonOperator"],
            evaluation_periods=number("EvaluationPeriods"),
            period=number("Period"),
            threshold=number("Threshold", float),
            statistic=props.get("Statistic"),
            description=props.get("AlarmDescription"),
            dimensions=props.get("Dimensions", []),
            alarm_actions=props.get("AlarmActions", []),
            datapoints_to_alarm=number("DatapointsToAlarm"),
            extended_statistic=props.get("ExtendedStatistic"),
            ok_actions=props.get("OKActions", []),
            insufficient_data_actions=props.get("InsufficientDataActions", []),
            unit=props.get("Unit"),
            actions_enabled=str(props.get("ActionsEnabled", True)).lower() == "true",
            treat_missing_data=props.get("TreatMissingData"),
            evaluate_low_sample_count_percentile=props.get("EvaluateLowSampleCountPercentile"),
            threshold_metric_id=props.get("ThresholdMetricId"),
            tags=props.get("Tags"),
        )
        return cls(alarm.name, account_id, region, arn=alarm.alarm_arn)

    def delete(self, account_id: str, region_name: str) -> None:
        self.backend(account_id, region_name).delete_alarms([self.physical_resource_id])


class _QueryDefinition(_Shim):
    """AWS::Logs::QueryDefinition -> CloudWatch Logs saved queries (Ref: its id), kept by the
    local cloud's query-definitions feature (features/logs_query_definitions.py)."""

    TYPE, SERVICE = "AWS::Logs::QueryDefinition", "logs"
    PROPERTIES = frozenset({"Name", "QueryString", "LogGroupNames", "QueryLanguage"})
    ATTRIBUTES = frozenset({"QueryDefinitionId"})

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        from localcloud.features.logs_query_definitions import put_query_definition

        definition_id = put_query_definition(
            cls.backend(account_id, region),
            props["Name"],
            props["QueryString"],
            props.get("LogGroupNames"),
            query_language=props.get("QueryLanguage", "CWLI"),
        )
        return cls(definition_id, account_id, region, querydefinitionid=definition_id)

    def delete(self, account_id: str, region_name: str) -> None:
        from localcloud.features.logs_query_definitions import delete_query_definition

        delete_query_definition(self.backend(account_id, region_name), self.physical_resource_id)


class _ScheduleGroup(_Shim):
    """AWS::Scheduler::ScheduleGroup -> moto's Scheduler backend (Ref: the group's name)."""

    TYPE, SERVICE = "AWS::Scheduler::ScheduleGroup", "scheduler"
    PROPERTIES = frozenset({"Name", "Tags"})
    ATTRIBUTES = frozenset({"Arn"})

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        group = cls.backend(account_id, region).create_schedule_group(
            name=props.get("Name", name)[:64], tags=props.get("Tags", [])
        )
        return cls(group.name, account_id, region, arn=group.arn)

    def delete(self, account_id: str, region_name: str) -> None:
        self.backend(account_id, region_name).delete_schedule_group(self.physical_resource_id)


class _Schedule(_Shim):
    """AWS::Scheduler::Schedule -> moto's Scheduler backend (fired by scheduler.Schedules)."""

    TYPE, SERVICE = "AWS::Scheduler::Schedule", "scheduler"
    PROPERTIES = frozenset({
        "Name", "GroupName", "Description", "ScheduleExpression", "ScheduleExpressionTimezone",
        "FlexibleTimeWindow", "Target", "State", "KmsKeyArn", "StartDate", "EndDate",
    })  # fmt: skip
    ATTRIBUTES = frozenset({"Arn"})
    group: str

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        # Absent optional properties stay None, as moto's own CreateSchedule passes them:
        # GetSchedule leaves None out, while "" for StartDate/EndDate is an unparseable
        # timestamp to every SDK.
        schedule = cls.backend(account_id, region).create_schedule(
            description=props.get("Description"),
            end_date=props.get("EndDate"),
            flexible_time_window=props["FlexibleTimeWindow"],
            group_name=props.get("GroupName", "default"),
            kms_key_arn=props.get("KmsKeyArn"),
            name=props.get("Name", name),
            schedule_expression=props["ScheduleExpression"],
            schedule_expression_timezone=props.get("ScheduleExpressionTimezone", "UTC"),
            start_date=props.get("StartDate"),
            state=props.get("State", "ENABLED"),
            target=copy.deepcopy(props["Target"]),
            action_after_completion=None,
        )
        return cls(schedule.name, account_id, region, arn=schedule.arn, group=schedule.group_name)

    def delete(self, account_id: str, region_name: str) -> None:
        self.backend(account_id, region_name).delete_schedule(self.group, self.physical_resource_id)


class _EventInvokeConfig(_Shim):
    """AWS::Lambda::EventInvokeConfig (SAM's EventInvokeConfig) -> PutFunctionEventInvokeConfig,
    checked as Lambda checks it (features/lambda_async_config.py: ranges, destinations the execution
    role may write); the asynchronous invocations honour it."""

    TYPE, SERVICE = "AWS::Lambda::EventInvokeConfig", "lambda"
    PROPERTIES = frozenset({"FunctionName", "Qualifier", "MaximumRetryAttempts",
                            "MaximumEventAgeInSeconds", "DestinationConfig"})  # fmt: skip
    function: str

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        backend = cls.backend(account_id, region)
        function = backend.get_function(props["FunctionName"]).function_name
        config = {k: props[k] for k in ("MaximumRetryAttempts", "MaximumEventAgeInSeconds",
                                        "DestinationConfig") if k in props}  # fmt: skip
        backend.put_function_event_invoke_config(function, config)
        qualifier = props.get("Qualifier", "$LATEST")
        return cls(f"{function}:{qualifier}", account_id, region, function=function)

    def delete(self, account_id: str, region_name: str) -> None:
        self.backend(account_id, region_name).delete_function_event_invoke_config(self.function)


class _GlueDatabase(_Shim):
    """AWS::Glue::Database -> moto's Data Catalog (Ref: the database's name)."""

    TYPE, SERVICE = "AWS::Glue::Database", "glue"
    PROPERTIES = frozenset({"CatalogId", "DatabaseInput", "DatabaseName"})

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        given = copy.deepcopy(props["DatabaseInput"])
        given.setdefault("Name", props.get("DatabaseName") or name.lower())
        cls.backend(account_id, region).create_database(given["Name"], given)
        return cls(given["Name"], account_id, region)

    def delete(self, account_id: str, region_name: str) -> None:
        self.backend(account_id, region_name).delete_database(self.physical_resource_id)


class _GlueTable(_Shim):
    """AWS::Glue::Table -> moto's Data Catalog (Ref: the table's name)."""

    TYPE, SERVICE = "AWS::Glue::Table", "glue"
    PROPERTIES = frozenset({"CatalogId", "DatabaseName", "TableInput"})
    database: str

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        given = copy.deepcopy(props["TableInput"])
        given.setdefault("Name", name.lower())
        database = props["DatabaseName"]
        cls.backend(account_id, region).create_table(database, given["Name"], given)
        return cls(given["Name"], account_id, region, database=database)

    def delete(self, account_id: str, region_name: str) -> None:
        self.backend(account_id, region_name).delete_table(self.database, self.physical_resource_id)


SHIMS: dict[str, type[_Shim]] = {
    shim.TYPE: shim
    for shim in (
        _BucketPolicy,
        _QueuePolicy,
        _TopicPolicy,
        _Alias,
        _Subscription,
        _Alarm,
        _QueryDefinition,
        _ScheduleGroup,
        _Schedule,
        _EventInvokeConfig,
        _GlueDatabase,
        _GlueTable,
    )
}


class _PublicLayer:
    """Stand-in for a public layer version moto has never seen (the local cloud stands in for
    its content)."""

    def __init__(self, arn: str) -> None:
        self.arn, self.code_size, self.code_bytes = arn, 0, b""


def _is_public_layer(arn: str) -> bool:
    parts = arn.split(":")
    return len(parts) == 8 and parts[2] == "lambda" and parts[4] in PUBLIC_LAYER_ACCOUNTS
