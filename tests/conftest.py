"""Suite-wide hooks."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcloud import gc_tuning


@pytest.fixture(autouse=True)
def _environment_of_the_test() -> Iterator[None]:
    """What a command run in-process put into ``os.environ`` ends with the test: ``ingestctl
    --outputs`` sets AWS_ENDPOINT_URL for every client of its process (a served local cloud's,
    gone once that cloud stops), and the next test's clients must not call it: neither the
    ones the DAL keeps per process (made by that command), which are dropped with it."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)
        from ingest_pipeline.dal import aws, s3

        aws.client.cache_clear()
        s3.s3_client.cache_clear()


# Modules of tests/e2e and tests/statemachine whose outcome cannot depend on the template's
# WorkflowType, so `make pytest-express` (LOCALCLOUD_PARAMETER_OVERRIDES=WorkflowType=EXPRESS)
# does not run them again: every other test of those two folders is marked ``workflow_type``
# and runs once more as EXPRESS. A module belongs here only when the override cannot reach what
# it asserts: it deploys no LocalCloud of template.yaml (its own template without that
# parameter, moto directly, or localcloud.stack.deploy, which reads no override), or it uses
# the app's stack only for services that WorkflowType does not change and starts no execution
# of the per-object workflow. A new module runs in both passes until it is listed here.
WORKFLOW_INDEPENDENT = {
    # standalone SAM templates of their own, without a WorkflowType parameter
    "tests/e2e/test_localcloud_execution_metrics.py",
    "tests/e2e/test_localcloud_express.py",  # its own EXPRESS and STANDARD machines, both passes
    # the app's stack, but only S3 (dal.s3.upload_stream), SQS/DynamoDB calls of its own, or
    # EventBridge's TestEventPattern against the rule's pattern and an empty DLQ's move task
    "tests/e2e/test_s3_upload.py",
    "tests/e2e/test_localcloud_moto_speedups.py",
    "tests/e2e/test_localcloud_fidelity_event_patterns.py",
    # a stack deployed elsewhere (skipped unless named; test_local_up.py runs it as EXPRESS)
    "tests/e2e/test_external_endpoint.py",
    # moto directly: the ASL as a STANDARD machine with a MockConfigFile
    "tests/statemachine/test_mock_config.py",
    "tests/statemachine/test_mock_config_http.py",  # its own STANDARD machine, every task mocked
    # TestState takes each state's definition, not a deployed stack (a cloud of one topic)
    "tests/statemachine/test_test_state_cli.py",
    # localcloud.stack.deploy with explicit parameters (not a LocalCloud: no override)
    "tests/statemachine/test_stack_deploy.py",
    # asserts only what the large-object workflow (always STANDARD) and S3 made of 6 MiB
    # chunks; the hand-over from an EXPRESS per-object workflow is test_large_file_path.py's
    "tests/statemachine/test_large_file_parts.py",
    # asserts what ProcessFunction's conversion made of published files (the same code in both
    # workflow types); the contract version passed through the workflow is test_datasets.py's
    "tests/e2e/test_published_datasets.py",
    # the dead-letter tools on queues (the reconcile run they put back is test_reconcile.py's),
    # and a processor the functions run (the contract version is test_datasets.py's)
    "tests/e2e/test_redrive_queue_sources.py",
    "tests/e2e/test_your_own_processing.py",
    # sets WorkflowType itself (STANDARD, then an update to EXPRESS)
    "tests/e2e/test_stack_update.py",
    # the functions' own code on the README's sample events, no execution
    "tests/e2e/test_local_invoke.py",
    # sam deploy of its own stack: STANDARD, then an update to EXPRESS
    "tests/e2e/test_sam_deploy.py",
    # Glue tables and the outputs DuckDB reads (the same in both workflow types)
    "tests/e2e/test_glue_tables.py",
    # what the large-object workflow (always STANDARD) makes of each format; the hand-over
    # from an EXPRESS per-object workflow is test_large_file_path.py's
    "tests/e2e/test_large_formats.py",
}
# Modules that run in both passes, but where only the named tests start executions of the
# per-object workflow whose outcome may differ with WorkflowType: what the template changes with
# it is the machine's type (STANDARD or EXPRESS: where an execution's history is read, whether
# StartExecution's name makes it idempotent, DescribeExecution and redrive), LeaseSeconds, the
# log level, the classify function's timeout and an alarm's threshold. So the named tests are
# the ASL's outcomes as seen by S3, DynamoDB and SNS; duplicates and concurrent copies (names);
# the tools that read executions (reprocess, the reconciler, doctor, console); the lease; the
# hand-over to the STANDARD large-object workflow; the roles of the workflow. The others drive
# S3 and EventBridge delivery, the functions' own code, IAM of functions, keys and queues, and
# the dead-letter tools, which no WorkflowType reaches (every path is also tests/statemachine's).
WORKFLOW_TYPE_TESTS = {
    "tests/e2e/test_event_graph.py": {
        "test_upload_runs_the_happy_path",
        "test_bad_data_is_quarantined_and_reported",
        "test_transient_errors_recover_with_retries",
        "test_transient_errors_that_exhaust_leave_a_retryable_failure",
        "test_configuration_error_escalates_to_operations",
        "test_throttled_claim_is_retried_by_the_workflow",
        "test_duplicate_delivered_in_sequence_processes_once",
        "test_ten_concurrent_copies_process_exactly_once",
        "test_a_duplicate_execution_of_one_event_processes_once",
    },
    "tests/e2e/test_no_event_lost.py": {
        "test_event_without_version_id_resolves_the_version_before_claiming",
        "test_reprocessing_an_older_version_is_superseded_too",
        "test_cloudtrail_dead_letter_is_redriven_to_a_processed_object",
    },
    "tests/e2e/test_localcloud_iam.py": {
        "test_a_state_machine_without_its_table_grant_fails_its_claim",
        "test_a_workflow_whose_role_cannot_deliver_its_logs_is_not_created",
        "test_a_rule_whose_role_cannot_start_the_workflow_dead_letters_no_permissions",
    },
    "tests/e2e/test_localcloud_fidelity.py": {
        "test_a_start_execution_task_starts_the_execution",
        "test_context_timestamps_are_formatted_as_aws_formats_them",
        "test_a_tasks_timeout_does_not_count_the_wait_for_the_functions_environment",
    },
    "tests/e2e/test_recovery.py": {
        "test_reprocess_a_configuration_failure_after_the_fix",
        "test_reprocess_a_dead_claim_redrives_or_takes_it_over",
    },
    "tests/e2e/test_datasets.py": {"test_each_object_uses_the_version_current_when_it_was_claimed"},
    "tests/e2e/test_console_app.py": {
        "test_the_app_s_console_shows_paths_quarantines_and_dead_letters"
    },
    "tests/statemachine/test_large_file_path.py": {
        "test_several_chunks_make_the_single_paths_output",
        "test_a_duplicate_during_a_running_large_execution_is_absorbed",
        "test_a_stale_large_execution_is_fenced_off",
        "test_a_chunk_failure_is_raised_by_its_name_and_routed_by_the_taxonomy",
        "test_a_published_object_created_event_for_a_large_object",
    },
}
# Tests, in modules that otherwise run in both passes, that start no execution of the per-object
# workflow and assert nothing the template changes with WorkflowType (lease, timeouts, log level,
# the workflow check): doctor checks of the event path, the AWS CLI over `local up`.
WORKFLOW_INDEPENDENT_TESTS = {
    "tests/e2e/test_doctor.py": {
        "test_a_disabled_rule_fails",
        "test_bucket_notifications_off_fail",
        "test_a_dead_letter_fails_at_once_and_is_left_in_its_queue",
        "test_a_target_without_its_retry_policy_and_dlq_fails",
        "test_a_deleted_queue_policy_fails",
        "test_a_queue_policy_for_another_rule_fails",
        "test_a_disabled_schedule_fails",
        "test_an_unreadable_stack_exits_2",
    },
    # the AWS CLI against the stack over HTTP: the next test (the whole external suite, which
    # reads executions over HTTP) is what runs again as EXPRESS
    "tests/e2e/test_local_up.py": {"test_local_up_serves_the_pipeline_to_the_aws_cli"},
}
EXPRESS_FOLDERS = ("tests/e2e/", "tests/statemachine/")
_ROOT = Path(__file__).resolve().parent.parent
_LISTED = WORKFLOW_INDEPENDENT | WORKFLOW_TYPE_TESTS.keys() | WORKFLOW_INDEPENDENT_TESTS.keys()
if missing := sorted(m for m in _LISTED if not (_ROOT / m).is_file()):
    raise pytest.UsageError(f"tests/conftest.py WORKFLOW_INDEPENDENT: no such module {missing}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks ``workflow_type`` every test of tests/e2e and tests/statemachine outside
    WORKFLOW_INDEPENDENT and WORKFLOW_INDEPENDENT_TESTS (`make pytest-express` selects them).
    Then tests marked ``slow`` run first: under ``make test`` (pytest-xdist, one worker per
    core) the 100-object burst runs beside the rest of the suite instead of after it. The
    order within each group is unchanged."""
    for item in items:
        module = item.path.relative_to(_ROOT).as_posix() if item.path.is_relative_to(_ROOT) else ""
        name = item.originalname if isinstance(item, pytest.Function) else item.name
        named = WORKFLOW_TYPE_TESTS.get(module)
        if (
            module.startswith(EXPRESS_FOLDERS)
            and module not in WORKFLOW_INDEPENDENT
            and (name in named if named is not None else True)
            and name not in WORKFLOW_INDEPENDENT_TESTS.get(module, ())
        ):
            item.add_marker(pytest.mark.workflow_type)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# Calls the suite provokes to be refused in clouds of the unchanged template.yaml, each for a
# reason a test asserts. Any other refusal means the template lacks a grant its code uses.
EXPECTED_REFUSALS = {
    # test_localcloud_iam.py: a handler's thread acts as its function's role (no S3 access)
    "ClassifyErrorFunctionRole s3:GetObject",
    # test_localcloud_iam.py: the rule's role loses its policy (deleted at run time)
    "PipelineStateMachineObjectCreatedRole states:StartExecution",
    # test_doctor.py: ReconcileQueue's policy denies the schedule's role (a ReconcileScheduleDLQ
    # dead letter made the way AWS makes one)
    "ReconcileSchedulerRole sqs:SendMessage",
    # test_local_invoke.py: the README's sample events name example-ingest-bucket, a bucket
    # the stack's roles have no grant on (as on AWS)
    "ResolveObjectFunctionRole s3:GetObject",
    "QuarantineFunctionRole s3:GetObjectVersion",
    "ProcessFunctionRole s3:GetObject",
}


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection loaded (moto, botocore's models, the test modules) stays for the whole
    run: out of every garbage collection from now on (localcloud/gc_tuning.py)."""
    gc_tuning.freeze()


_CHECK = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    """Every process of the suite (each xdist worker too) runs local clouds: the garbage
    collector is tuned for that before collection loads them (localcloud/gc_tuning.py: 4 to
    12 % less CPU by module, and 15 % of collection). The check below belongs to the run
    ``make pytest`` starts: taken out of the environment, so that a pytest this suite runs in
    a subprocess does not repeat it."""
    gc_tuning.tune()
    if not hasattr(config, "workerinput"):
        config.stash[_CHECK] = os.environ.pop("LOCALCLOUD_IAM_CHECK", "") == "1"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """``make test``: the suite proves template.yaml's permissions. Each local cloud logged
    its IAM decisions to LOCALCLOUD_IAM_LOG; in clouds of the unchanged template, (1) no call
    of the stack's principals was refused beyond EXPECTED_REFUSALS (so removing a statement
    that something used fails the run), and (2) every Allow statement was needed by a call
    (re-evaluated with it removed) or is justified in Metadata.LocalCloud.UnusedGrants.
    Runs once, in the controlling process, after every xdist worker has finished."""
    log = os.environ.get("LOCALCLOUD_IAM_LOG")
    if not log or not session.config.stash.get(_CHECK, False) or exitstatus != 0:
        return
    from ingest_tools.local_pipeline import TEMPLATE
    from localcloud.iam import report
    from localcloud.stack import load_template

    merged = report.merge(Path(log), TEMPLATE)
    problems = [
        f"refused: {r}" for r in report.refused(Path(log), TEMPLATE) if r not in EXPECTED_REFUSALS
    ]
    problems += [f"unused: {u}" for u in report.unused(merged, load_template(TEMPLATE))]
    if not merged:
        problems.append(f"no IAM decisions logged in {log}")
    writer = session.config.pluginmanager.get_plugin("terminalreporter")
    if problems:
        writer.write_line(
            "least privilege: template.yaml's grants do not match what the suite did "
            f"(ingestctl local iam-report {log}):",
            red=True,
        )
        for problem in problems:
            writer.write_line(f"  {problem}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    else:
        needed = sum(1 for e in merged.values() if e["needed"])
        writer.write_line(
            f"least privilege: {needed} grants of template.yaml needed, the rest justified; "
            "no unexpected refusal"
        )
