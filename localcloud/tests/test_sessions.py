"""One boto3 default session per process (cloud.py ``_default_session``): clients made while
one cloud ran are authorized by the running cloud's rules, a cloud without IAM gets a session
without the IAM hooks, and a call from a stopped cloud's execution is refused."""

from __future__ import annotations

import threading

import boto3
import pytest
from botocore.exceptions import ClientError
from test_published_patterns import PATTERN

from localcloud.cloud import LocalCloud
from localcloud.features import iam as iam_feature
from localcloud.features.iam import StoppedCloudError
from localcloud.iam.enforcement import acting_as, role

pytestmark = [pytest.mark.e2e]

STACK = "s3-eventbridge-sfn"
TEMPLATE = PATTERN / "template.yaml"
NOBODY = "arn:aws:iam::123456789012:role/NoPolicies"  # no such role: no policy allows it


def test_a_client_of_an_earlier_cloud_is_judged_by_the_running_clouds_rules() -> None:
    with LocalCloud(TEMPLATE, stack_name=STACK, iam=True) as first:
        session = boto3.DEFAULT_SESSION
        s3 = boto3.client("s3")
        assert s3.list_buckets()["Buckets"]  # the administrator
    with LocalCloud(TEMPLATE, stack_name=STACK, iam=True) as second:
        assert boto3.DEFAULT_SESSION is session  # the same session for a cloud like the first
        with acting_as(role(NOBODY)), pytest.raises(ClientError) as refused:
            s3.list_buckets()
        assert refused.value.response["Error"]["Code"] == "AccessDenied"
        refusals = [d for d in second.runtime.authorizer.decisions if not d.get("allowed")]
        assert refusals, "the running cloud made (and logged) the decision"
        assert not [d for d in first.runtime.authorizer.decisions if not d.get("allowed")]
    with LocalCloud(TEMPLATE, stack_name=STACK, iam=False):
        assert boto3.DEFAULT_SESSION is not session  # no IAM hooks among its handlers
        with acting_as(role(NOBODY)):
            assert boto3.client("s3").list_buckets()["Buckets"]


def test_a_call_from_a_stopped_clouds_execution_is_refused() -> None:
    with LocalCloud(TEMPLATE, stack_name=STACK, iam=True) as first:
        owner = first.runtime.authorizer
    errors: list[BaseException] = []

    def late_execution_thread() -> None:  # as Step Functions' worker thread of ``first``
        token = iam_feature._OWNER.set(owner)
        try:
            boto3.client("s3").list_buckets()
        except BaseException as exc:  # the test reads what was raised
            errors.append(exc)
        finally:
            iam_feature._OWNER.reset(token)

    with LocalCloud(TEMPLATE, stack_name=STACK, iam=True):
        thread = threading.Thread(target=late_execution_thread)
        thread.start()
        thread.join(timeout=30)
    assert len(errors) == 1 and isinstance(errors[0], StoppedCloudError), errors
