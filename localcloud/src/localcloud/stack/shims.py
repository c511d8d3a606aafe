"""Shims for resource types moto's CloudFormation does not create (BucketPolicy, QueuePolicy,
TopicPolicy, Lambda Alias, Subscription, Alarm, QueryDefinition, ScheduleGroup, Schedule, Glue
Database and Table), and public layer versions moto has never seen."""

from __future__ import annotations

import copy
import json
from typing import Any

from moto.cloudwatch.models import cloudwatch_backends
from moto.s3.models import s3_backends
from moto.sns.models import sns_backends
from moto.sqs.models import sqs_backends

from localcloud.stack.base import (
    _PARTITION,
    PUBLIC_LAYER_ACCOUNTS,
    StackDeployError,
)


# ------------------------------------------------------------------ shims
class _Shim:
    """Duck-typed like moto's CloudFormationModel (not a subclass: moto's model map is built
    from CloudFormationModel.__subclasses__(), and must keep saying what moto itself does)."""

    TYPE = ""
    PROPERTIES: frozenset[str] = frozenset()
    ATTRIBUTES: frozenset[str] = frozenset()

    def __init__(self, physical_resource_id: str, account_id: str, region: str) -> None:
        self.physical_resource_id = physical_resource_id
        self.account_id, self.region = account_id, region

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in cls.ATTRIBUTES

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        """Fn::GetAtt: a declared attribute is the shim's attribute of that name ("Arn" -> arn)."""
        from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

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
    TYPE = "AWS::S3::BucketPolicy"
    PROPERTIES = frozenset({"Bucket", "PolicyDocument"})

    def __init__(self, name: str, account_id: str, region: str, bucket: str, document: Any) -> None:
        super().__init__(name, account_id, region)
        self.bucket, self.document = bucket, document  # document: as written in the template

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        document = props["PolicyDocument"]
        if isinstance(document, str):
            document = json.loads(document)
        # Stored as written; the local cloud's IAM evaluates it (conditions included) on
        # every call made by a principal (iam/enforcement.py).
        backend = s3_backends[account_id][_PARTITION]
        backend.put_bucket_policy(props["Bucket"], json.dumps(document).encode())
        return cls(name, account_id, region, props["Bucket"], document)

    def delete(self, account_id: str, region_name: str) -> None:
        s3_backends[account_id][_PARTITION].delete_bucket_policy(self.bucket)


class _ResourcePolicy(_Shim):
    """A resource policy set on each resource a property lists (QueuePolicy, TopicPolicy),
    and taken back on delete."""

    LISTED = ""  # the property listing the resources

    def __init__(self, name: str, account_id: str, region: str, targets: list[str]) -> None:
        super().__init__(name, account_id, region)
        self.targets = targets

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        document = props["PolicyDocument"]
        policy = document if isinstance(document, str) else json.dumps(document)
        targets = [cls._target(listed) for listed in props[cls.LISTED]]
        for target in targets:
            cls._set(account_id, region, target, policy)
        return cls(name, account_id, region, targets)

    def delete(self, account_id: str, region_name: str) -> None:
        for target in self.targets:
            self._set(account_id, region_name, target, None)

    @staticmethod
    def _target(listed: str) -> str:
        return listed

    @staticmethod
    def _set(account_id: str, region: str, target: str, policy: str | None) -> None:
        raise NotImplementedError


class _QueuePolicy(_ResourcePolicy):
    TYPE = "AWS::SQS::QueuePolicy"
    PROPERTIES = frozenset({"Queues", "PolicyDocument"})
    LISTED = "Queues"

    @staticmethod
    def _target(listed: str) -> str:
        return listed.rstrip("/").rsplit("/", 1)[-1]  # a queue URL -> its name

    @staticmethod
    def _set(account_id: str, region: str, target: str, policy: str | None) -> None:
        sqs_backends[account_id][region].set_queue_attributes(target, {"Policy": policy or ""})


class _TopicPolicy(_ResourcePolicy):
    TYPE = "AWS::SNS::TopicPolicy"
    PROPERTIES = frozenset({"Topics", "PolicyDocument"})
    LISTED = "Topics"

    @staticmethod
    def _set(account_id: str, region: str, target: str, policy: str | None) -> None:
        backend = sns_backends[account_id][region]
        if policy is not None:
            backend.set_topic_attribute(target, "policy", policy)  # as SetTopicAttributes does
        elif (topic := backend.topics.get(target)) is not None:  # the default policy again
            topic._policy_json = topic._create_default_topic_policy(region, account_id, topic.name)


class _Alias(_Shim):
    """AWS::Lambda::Alias (what SAM's AutoPublishAlias makes): Ref is the alias ARN."""

    TYPE = "AWS::Lambda::Alias"
    PROPERTIES = frozenset({"FunctionName", "FunctionVersion", "Name", "Description",
                            "RoutingConfig", "ProvisionedConcurrencyConfig"})  # fmt: skip
    ATTRIBUTES = frozenset({"AliasArn"})

    def __init__(self, arn: str, account_id: str, region: str, function: str, name: str) -> None:
        super().__init__(arn, account_id, region)
        self.aliasarn, self.function, self.name = arn, function, name

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        from moto.awslambda.utils import get_backend

        backend = get_backend(account_id, region)
        function = backend.get_function(props["FunctionName"]).function_name
        alias = backend.create_alias(
            name=props["Name"],
            function_name=function,
            function_version=str(props["FunctionVersion"]),
            description=props.get("Description", ""),
            routing_config=props.get("RoutingConfig"),
        )
        return cls(alias.arn, account_id, region, function, props["Name"])

    def delete(self, account_id: str, region_name: str) -> None:
        from moto.awslambda.utils import get_backend

        get_backend(account_id, region_name).delete_alias(self.name, self.function)


class _Subscription(_Shim):
    TYPE = "AWS::SNS::Subscription"
    _ATTRIBUTES = ("DeliveryPolicy", "FilterPolicy", "FilterPolicyScope", "RawMessageDelivery",
                   "RedrivePolicy", "ReplayPolicy", "SubscriptionRoleArn")  # fmt: skip
    PROPERTIES = frozenset({"TopicArn", "Protocol", "Endpoint", "Region", *_ATTRIBUTES})

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        if props.get("Region", region) != region:
            raise StackDeployError(f"{cls.TYPE} {name}: cross-region subscriptions are not local")
        backend = sns_backends[account_id][region]
        subscription = backend.subscribe(props["TopicArn"], props["Endpoint"], props["Protocol"])
        for attribute in cls._ATTRIBUTES:
            if attribute in props:
                value = props[attribute]
                if isinstance(value, dict | list):
                    value = json.dumps(value)
                elif isinstance(value, bool):
                    value = str(value).lower()
                backend.set_subscription_attributes(subscription.arn, attribute, value)
        return cls(subscription.arn, account_id, region)

    def delete(self, account_id: str, region_name: str) -> None:
        sns_backends[account_id][region_name].unsubscribe(self.physical_resource_id)


class _Alarm(_Shim):
    TYPE = "AWS::CloudWatch::Alarm"
    PROPERTIES = frozenset({
        "ActionsEnabled", "AlarmActions", "AlarmDescription", "AlarmName", "ComparisonOperator",
        "DatapointsToAlarm", "Dimensions", "EvaluateLowSampleCountPercentile",
        "EvaluationPeriods", "ExtendedStatistic", "InsufficientDataActions", "MetricName",
        "Namespace", "OKActions", "Period", "Statistic", "Tags", "Threshold", "ThresholdMetricId",
        "TreatMissingData", "Unit",
    })  # fmt: skip
    ATTRIBUTES = frozenset({"Arn"})

    def __init__(self, name: str, account_id: str, region: str, arn: str) -> None:
        super().__init__(name, account_id, region)
        self.arn = arn

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        def number(key: str, kind: type = int) -> Any:
            return kind(props[key]) if key in props else None

        alarm = cloudwatch_backends[account_id][region].put_metric_alarm(
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
        return cls(alarm.name, account_id, region, alarm.alarm_arn)

    def delete(self, account_id: str, region_name: str) -> None:
        cloudwatch_backends[account_id][region_name].delete_alarms([self.physical_resource_id])


class _QueryDefinition(_Shim):
    """AWS::Logs::QueryDefinition -> CloudWatch Logs saved queries (Ref: its id), kept by the
    local cloud's query-definitions feature (features/logs_query_definitions.py)."""

    TYPE = "AWS::Logs::QueryDefinition"
    PROPERTIES = frozenset({"Name", "QueryString", "LogGroupNames", "QueryLanguage"})
    ATTRIBUTES = frozenset({"QueryDefinitionId"})

    @property
    def querydefinitionid(self) -> str:
        return self.physical_resource_id

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        from moto.logs.models import logs_backends

        from localcloud.features.logs_query_definitions import (
            put_query_definition,
        )

        definition_id = put_query_definition(
            logs_backends[account_id][region],
            props["Name"],
            props["QueryString"],
            props.get("LogGroupNames"),
            query_language=props.get("QueryLanguage", "CWLI"),
        )
        return cls(definition_id, account_id, region)

    def delete(self, account_id: str, region_name: str) -> None:
        from moto.logs.models import logs_backends

        from localcloud.features.logs_query_definitions import (
            delete_query_definition,
        )

        delete_query_definition(logs_backends[account_id][region_name], self.physical_resource_id)


class _ScheduleGroup(_Shim):
    """AWS::Scheduler::ScheduleGroup -> moto's Scheduler backend (Ref: the group's name)."""

    TYPE = "AWS::Scheduler::ScheduleGroup"
    PROPERTIES = frozenset({"Name", "Tags"})
    ATTRIBUTES = frozenset({"Arn"})

    def __init__(self, name: str, account_id: str, region: str, arn: str) -> None:
        super().__init__(name, account_id, region)
        self.arn = arn

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        from moto.scheduler.models import scheduler_backends

        group = scheduler_backends[account_id][region].create_schedule_group(
            name=props.get("Name", name)[:64], tags=props.get("Tags", [])
        )
        return cls(group.name, account_id, region, group.arn)

    def delete(self, account_id: str, region_name: str) -> None:
        from moto.scheduler.models import scheduler_backends

        scheduler_backends[account_id][region_name].delete_schedule_group(self.physical_resource_id)


class _Schedule(_Shim):
    """AWS::Scheduler::Schedule -> moto's Scheduler backend (fired by scheduler.Schedules)."""

    TYPE = "AWS::Scheduler::Schedule"
    PROPERTIES = frozenset({
        "Name", "GroupName", "Description", "ScheduleExpression", "ScheduleExpressionTimezone",
        "FlexibleTimeWindow", "Target", "State", "KmsKeyArn", "StartDate", "EndDate",
    })  # fmt: skip
    ATTRIBUTES = frozenset({"Arn"})

    def __init__(self, name: str, account_id: str, region: str, arn: str, group: str) -> None:
        super().__init__(name, account_id, region)
        self.arn, self.group = arn, group

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        from moto.scheduler.models import scheduler_backends

        # Absent optional properties stay None, as moto's own CreateSchedule passes them:
        # GetSchedule leaves None out, while "" for StartDate/EndDate is an unparseable
        # timestamp to every SDK.
        schedule = scheduler_backends[account_id][region].create_schedule(
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
        return cls(schedule.name, account_id, region, schedule.arn, schedule.group_name)

    def delete(self, account_id: str, region_name: str) -> None:
        from moto.scheduler.models import scheduler_backends

        scheduler_backends[account_id][region_name].delete_schedule(
            self.group, self.physical_resource_id
        )


class _EventInvokeConfig(_Shim):
    """AWS::Lambda::EventInvokeConfig (SAM's EventInvokeConfig) -> PutFunctionEventInvokeConfig,
    checked as Lambda checks it (features/lambda_async_config.py: ranges, destinations the execution
    role may write); the asynchronous invocations honour it."""

    TYPE = "AWS::Lambda::EventInvokeConfig"
    PROPERTIES = frozenset({"FunctionName", "Qualifier", "MaximumRetryAttempts",
                            "MaximumEventAgeInSeconds", "DestinationConfig"})  # fmt: skip

    def __init__(self, name: str, account_id: str, region: str, function: str) -> None:
        super().__init__(name, account_id, region)
        self.function = function

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        from moto.awslambda.utils import get_backend

        backend = get_backend(account_id, region)
        function = backend.get_function(props["FunctionName"]).function_name
        config = {k: props[k] for k in ("MaximumRetryAttempts", "MaximumEventAgeInSeconds",
                                        "DestinationConfig") if k in props}  # fmt: skip
        backend.put_function_event_invoke_config(function, config)
        qualifier = props.get("Qualifier", "$LATEST")
        return cls(f"{function}:{qualifier}", account_id, region, function)

    def delete(self, account_id: str, region_name: str) -> None:
        from moto.awslambda.utils import get_backend

        get_backend(account_id, region_name).delete_function_event_invoke_config(self.function)


class _GlueDatabase(_Shim):
    """AWS::Glue::Database -> moto's Data Catalog (Ref: the database's name)."""

    TYPE = "AWS::Glue::Database"
    PROPERTIES = frozenset({"CatalogId", "DatabaseInput", "DatabaseName"})

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        from moto.glue.models import glue_backends

        given = copy.deepcopy(props["DatabaseInput"])
        given.setdefault("Name", props.get("DatabaseName") or name.lower())
        glue_backends[account_id][region].create_database(given["Name"], given)
        return cls(given["Name"], account_id, region)

    def delete(self, account_id: str, region_name: str) -> None:
        from moto.glue.models import glue_backends

        glue_backends[account_id][region_name].delete_database(self.physical_resource_id)


class _GlueTable(_Shim):
    """AWS::Glue::Table -> moto's Data Catalog (Ref: the table's name)."""

    TYPE = "AWS::Glue::Table"
    PROPERTIES = frozenset({"CatalogId", "DatabaseName", "TableInput"})

    def __init__(self, name: str, account_id: str, region: str, database: str) -> None:
        super().__init__(name, account_id, region)
        self.database = database

    @classmethod
    def create(cls, name: str, props: dict[str, Any], account_id: str, region: str) -> _Shim:
        from moto.glue.models import glue_backends

        given = copy.deepcopy(props["TableInput"])
        given.setdefault("Name", name.lower())
        database = props["DatabaseName"]
        glue_backends[account_id][region].create_table(database, given["Name"], given)
        return cls(given["Name"], account_id, region, database)

    def delete(self, account_id: str, region_name: str) -> None:
        from moto.glue.models import glue_backends

        glue_backends[account_id][region_name].delete_table(
            self.database, self.physical_resource_id
        )


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
