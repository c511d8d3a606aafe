"""One object identity for every trigger shape (``logic.identity``), property-based.

Any key (space, '+', '%', non-ASCII, up to 1,024 bytes), with or without a version id, in
any of the shapes that can start the pipeline, normalises to the identity the upload
produced: the native S3 -> EventBridge event, the execution input the rule's
InputTransformer builds from it, CloudTrail's data events (in EventBridge's envelope and as
raw log records), S3 notifications (``Records``, URL-encoded keys) and the redrive's
conversion of every one of them.
"""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import quote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest_pipeline.errors import InvalidEventError
from ingest_pipeline.logic import identity
from ingest_pipeline.logic.identity import ObjectIdentity
from ingest_tools.recovery.formats import replay_event
from localcloud.features.transformer import apply_input_transformer
from localcloud.stack import load_template
from tests.support import AWKWARD_KEYS, TEMPLATE, load_event

pytestmark = pytest.mark.unit


def _rule_transformer() -> dict[str, Any]:
    template = load_template(TEMPLATE)
    events = template["Resources"]["PipelineStateMachine"]["Properties"]["Events"]
    return dict(events["ObjectCreated"]["Properties"]["InputTransformer"])


TRANSFORMER = _rule_transformer()
NATIVE = load_event("eventbridge/s3-object-created.json")
CLOUDTRAIL = json.loads(load_event("dlq/rule-cloudtrail-putobject.json")["Body"])

buckets = st.from_regex(r"\A[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
key_chars = st.characters(
    blacklist_categories=("Cs", "Cc"),  # S3 keys are UTF-8; control characters need XML 1.1
)
keys = (
    st.text(key_chars, min_size=1, max_size=300)
    .map(lambda k: "incoming/" + k)
    .filter(lambda k: len(k.encode()) <= identity.MAX_KEY_BYTES)
) | st.sampled_from([*AWKWARD_KEYS, "incoming/" + "k" * (identity.MAX_KEY_BYTES - 9)])
versions = st.none() | st.from_regex(r"\A[A-Za-z0-9._]{32}\Z")
api_calls = st.sampled_from(sorted(identity.CREATING_API_CALLS))


def native_event(bucket: str, key: str, version: str | None) -> dict[str, Any]:
    event = copy.deepcopy(NATIVE)
    event["detail"]["bucket"]["name"] = bucket
    obj = event["detail"]["object"]
    obj["key"] = key
    obj.pop("version-id")
    if version is not None:
        obj["version-id"] = version
    return event


def cloudtrail_event(bucket: str, key: str, version: str | None, call: str) -> dict[str, Any]:
    event = copy.deepcopy(CLOUDTRAIL)
    detail = event["detail"]
    detail["eventName"] = call
    detail["requestParameters"].update({"bucketName": bucket, "key": key})
    detail["responseElements"].pop("x-amz-version-id")
    if version is not None:
        detail["responseElements"]["x-amz-version-id"] = version
    return event


def notification(bucket: str, key: str, version: str | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"key": quote_plus(key, safe="/"), "size": 12, "eTag": "abc"}
    if version is not None:
        obj["versionId"] = version
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "eventName": "ObjectCreated:Put",
                "s3": {"bucket": {"name": bucket}, "object": obj},
            }
        ]
    }


def same(found: ObjectIdentity, bucket: str, key: str, version: str | None) -> bool:
    return (found.bucket, found.key, found.version_id) == (bucket, key, version)


@settings(max_examples=150, deadline=None)
@given(buckets, keys, versions, api_calls)
def test_every_shape_normalises_to_the_uploaded_identity(
    bucket: str, key: str, version: str | None, call: str
) -> None:
    native = native_event(bucket, key, version)
    trail = cloudtrail_event(bucket, key, version, call)
    shapes = {
        "native": native,
        "rule input": json.loads(apply_input_transformer(native, TRANSFORMER)),
        "cloudtrail": trail,
        "cloudtrail record": trail["detail"],
        "notification": notification(bucket, key, version),
        "redriven cloudtrail": replay_event(trail),
        "redriven notification": replay_event(notification(bucket, key, version)),
        "redriven native": replay_event(native),
    }
    for name, shape in shapes.items():
        found = identity.from_trigger(shape)
        assert same(found, bucket, key, version), name


@given(buckets, keys, st.sampled_from([None, "", "null"]))
def test_no_version_is_unknown_never_a_null_key(bucket: str, key: str, version: Any) -> None:
    event = native_event(bucket, key, None)
    if version is not None:
        event["detail"]["object"]["version-id"] = version
    found = identity.from_trigger(event)
    assert found.version_id is None and not found.resolved
    rule_input = json.loads(apply_input_transformer(event, TRANSFORMER))
    assert identity.from_trigger(rule_input).version_id is None


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ([], "must be a JSON object"),
        ({"foo": 1}, "unrecognised trigger"),
        ({"object": {"bucket": "b", "key": "k"}}, "bucket name"),
        ({"object": {"bucket": "bucket-1"}}, "object key missing"),
        ({"Records": []}, "0 records"),
        (
            {"Records": [{"eventName": "ObjectRemoved:Delete", "s3": {}}]},
            "names no new object version",
        ),
        ({**NATIVE, "detail-type": "Object Deleted"}, "names no new object version"),
        (
            {**CLOUDTRAIL, "detail": {**CLOUDTRAIL["detail"], "eventName": "DeleteObject"}},
            "creates no object version",
        ),
        (
            {**CLOUDTRAIL, "detail": {**CLOUDTRAIL["detail"], "errorCode": "AccessDenied"}},
            "no object was written",
        ),
        (native_event("bucket-1", "incoming/" + "x" * 1100, None), "longer than 1024 bytes"),
    ],
)
def test_anything_else_is_a_typed_error_naming_the_problem(document: Any, problem: str) -> None:
    with pytest.raises(InvalidEventError, match=problem):
        identity.from_trigger(document)
