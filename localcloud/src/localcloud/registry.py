"""The local cloud's patches, by kind (patching.Kind): one list, installed as one ``PatchSet``.

Speedups are on when ``LOCALCLOUD_SPEEDUPS=1`` (set by ``make test``, ``make demo`` and the
benchmarks) or when a ``LocalCloud`` is made with ``speedups=True``.
"""

from __future__ import annotations

from localcloud.features import (
    alarm_actions,
    clock,
    cloudformation_custom_resources,
    cloudformation_stack_api,
    delivery,
    dynamodb_streams,
    event_source_mappings,
    execution_metrics,
    faults,
    iam,
    lambda_async,
    lambda_async_config,
    lambda_durable,
    lambda_runtime,
    lambda_tenancy,
    logs_query_definitions,
    mock_config,
    role_sessions,
    s3_replication,
    service_scope,
    sqs_message_move_tasks,
    sync_execution,
    test_state,
)
from localcloud.fixes import (
    cloudformation_attributes,
    cloudformation_layer_version_ref,
    cloudformation_ssm_parameter_values,
    cloudformation_template_url,
    cloudformation_updates,
    cloudwatch_alarm_initial_state,
    dynamodb_atomic_items,
    eventbridge_put_events_entries,
    eventbridge_put_events_size,
    events_test_event_pattern,
    kms_cloudformation_key_policy,
    lambda_invoke_payload_quotas,
    lambda_invoke_qualifier,
    lambda_invoke_request_id,
    s3_bucket_policy_conditions,
    s3_cloudformation_bucket_update,
    s3_conditional_complete_multipart,
    s3_eventbridge_events,
    s3_get_delete_marker,
    s3_multipart_one_event,
    s3_notification_eventbridge,
    s3_notification_records,
    s3_server_header,
    service_routers,
    sfn_branch_states_errors,
    sfn_cloudformation_state_machine,
    sfn_compact_json_bodies,
    sfn_context_timestamps,
    sfn_dynamodb_string_attribute_values,
    sfn_execution_input_quota,
    sfn_execution_logs,
    sfn_express_definitions,
    sfn_express_executions,
    sfn_failure_passthrough,
    sfn_jsonata,
    sfn_jsonpath_member_of_item,
    sfn_map_express_children,
    sfn_map_result_writer,
    sfn_map_tolerated_failures,
    sfn_no_choice_matched,
    sfn_sdk_error_names,
    sfn_sdk_json_text_members,
    sfn_start_execution_task,
    sqs_concurrent_receive,
    sqs_dead_letter_source,
    sqs_message_size,
)
from localcloud.patching import (
    SPEEDUPS_VARIABLE,
    WITHOUT_VARIABLE,
    Kind,
    Patch,
    PatchSet,
    speedups_enabled,
    without_from_environment,
)
from localcloud.speedups import (
    dynamodb_update_expressions,
    execution_ended,
    kms_lazy_private_key,
    request_path,
    sfn_parsed_definitions,
    sfn_paths_and_clients,
    sqs_bookkeeping,
)
from localcloud.stack import deploy_patch_set
from localcloud.stack import patches as stack_patches
from localcloud.stack import snapshot as stack_snapshot
from localcloud.stack import speedups as stack_speedups

__all__ = [
    "ALL",
    "SPEEDUPS_VARIABLE",
    "WITHOUT_VARIABLE",
    "deploy_patch_set",  # the stack's own (stack/patches.py, stack/speedups.py)
    "patch_set",
    "speedups_enabled",
]


FIXES: list[Patch] = [
    *cloudformation_attributes.PATCHES,
    *cloudformation_layer_version_ref.PATCHES,
    *cloudformation_ssm_parameter_values.PATCHES,
    *s3_cloudformation_bucket_update.PATCHES,
    *cloudformation_template_url.PATCHES,
    *cloudformation_updates.PATCHES,
    *cloudwatch_alarm_initial_state.PATCHES,
    *dynamodb_atomic_items.PATCHES,
    *eventbridge_put_events_entries.PATCHES,
    *eventbridge_put_events_size.PATCHES,
    *events_test_event_pattern.PATCHES,
    *kms_cloudformation_key_policy.PATCHES,
    *lambda_invoke_payload_quotas.PATCHES,
    *lambda_invoke_qualifier.PATCHES,
    *lambda_invoke_request_id.PATCHES,
    *s3_bucket_policy_conditions.PATCHES,
    *s3_conditional_complete_multipart.PATCHES,
    *s3_eventbridge_events.PATCHES,
    *s3_get_delete_marker.PATCHES,
    *s3_multipart_one_event.PATCHES,
    *s3_notification_eventbridge.PATCHES,
    *s3_notification_records.PATCHES,
    *service_routers.PATCHES,
    *s3_server_header.PATCHES,
    *sfn_branch_states_errors.PATCHES,
    *sfn_cloudformation_state_machine.PATCHES,
    *sfn_compact_json_bodies.PATCHES,
    *sfn_context_timestamps.PATCHES,
    *sfn_dynamodb_string_attribute_values.PATCHES,
    *sfn_execution_input_quota.PATCHES,
    *sfn_execution_logs.PATCHES,
    *sfn_express_definitions.PATCHES,
    *sfn_express_executions.PATCHES,
    *sfn_failure_passthrough.PATCHES,
    *sfn_jsonata.PATCHES,
    *sfn_jsonpath_member_of_item.PATCHES,
    *sfn_map_express_children.PATCHES,
    *sfn_map_result_writer.PATCHES,
    *sfn_map_tolerated_failures.PATCHES,
    *sfn_no_choice_matched.PATCHES,
    *sfn_sdk_error_names.PATCHES,
    *sfn_sdk_json_text_members.PATCHES,
    *sfn_start_execution_task.PATCHES,
    *sqs_concurrent_receive.PATCHES,
    *sqs_dead_letter_source.PATCHES,
    *sqs_message_size.PATCHES,
]
FEATURES: list[Patch] = [
    *lambda_runtime.PATCHES,
    *lambda_async.PATCHES,
    *lambda_async_config.PATCHES,
    *lambda_durable.PATCHES,
    *s3_replication.PATCHES,
    *lambda_tenancy.PATCHES,
    *clock.PATCHES,
    *faults.PATCHES,
    *mock_config.PATCHES,
    *test_state.PATCHES,
    *sync_execution.PATCHES,
    *delivery.PATCHES,
    *event_source_mappings.PATCHES,
    *dynamodb_streams.PATCHES,
    *sqs_message_move_tasks.PATCHES,
    *stack_patches.PATCHES,
    *cloudformation_custom_resources.PATCHES,
    *cloudformation_stack_api.PATCHES,
    *alarm_actions.PATCHES,
    *logs_query_definitions.PATCHES,
    *execution_metrics.PATCHES,
    *iam.PATCHES,
    *role_sessions.PATCHES,
    *service_scope.PATCHES,
]
SPEEDUPS: list[Patch] = [
    *stack_speedups.PATCHES,
    *dynamodb_update_expressions.PATCHES,
    *execution_ended.PATCHES,
    *kms_lazy_private_key.PATCHES,
    *request_path.PATCHES,
    *sfn_parsed_definitions.PATCHES,
    *sfn_paths_and_clients.PATCHES,
    *sqs_bookkeeping.PATCHES,
]
ALL: list[Patch] = [*FIXES, *FEATURES, *SPEEDUPS]


def patch_set(
    *,
    speedups: bool | None = None,
    enabled: frozenset[str] = frozenset({"event_delivery", "iam"}),
    without: frozenset[str] | None = None,
) -> PatchSet:
    """The patches a cloud installs: every fix and feature (those with ``when`` only when
    enabled), the speedups when asked for, minus ``without`` (names; to show what a patch
    does by running its test without it)."""
    if speedups is None:
        speedups = speedups_enabled()
    if without is None:
        without = without_from_environment()
    unknown = without - {p.name for p in ALL} - {stack_snapshot.NAME}  # a deploy speedup
    if unknown:
        raise ValueError(f"no such patches: {sorted(unknown)}")
    chosen = [
        p
        for p in ALL
        if (speedups or p.kind is not Kind.SPEEDUP)
        and (not p.when or p.when in enabled)
        and p.name not in without
    ]
    return PatchSet(chosen)
