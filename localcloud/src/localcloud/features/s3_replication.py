"""S3 live replication (same account), as S3 runs it.

AWS (S3 User Guide, "Replicating objects within and across Regions", "Setting up permissions
for live replication", "Getting replication status information", "Replicating delete
markers between buckets"):

* with a replication configuration on a versioned bucket, each object version written *after*
  the configuration is set (PutObject, CopyObject, CompleteMultipartUpload, a POST upload)
  whose key matches an enabled rule is copied asynchronously to the rule's destination bucket
  (same key, same version id, body, metadata, tags; the rule's ``StorageClass`` or the
  source's). Objects that were there before are not replicated (that is Batch Replication),
  nor are replicas (a chain A -> B -> C leaves B's replicas in B), nor SSE-KMS objects
  unless the rule selects them (``SourceSelectionCriteria``, refused at deploy here);
* a rule matches by its V1 ``Prefix`` or its V2 ``Filter`` (``Prefix``, ``Tag``, ``And``);
  of several rules with one destination, the one of highest ``Priority`` applies;
* S3 replicates by assuming the configuration's ``Role``: it needs
  ``s3:GetObjectVersionForReplication`` on the source object and ``s3:ReplicateObject`` on
  the destination object (``arn:aws:s3:::bucket/key``; a statement naming the bucket ARN
  does not grant them), evaluated with the buckets' policies. Without them the object's
  replication FAILED (it is not retried: "you must upload the object again"). Tags need
  ``s3:GetObjectVersionTagging`` and ``s3:ReplicateTags``; without them the object is
  replicated without its tags;
* GetObject / HeadObject of an eligible source object answer ``x-amz-replication-status``
  PENDING, then COMPLETED or FAILED (with several destinations: COMPLETED once every one is,
  FAILED if one failed); a replica answers REPLICA;
* a DeleteObject without a version id adds a delete marker, which is replicated (with
  ``s3:ReplicateDelete`` on the destination object) by a V1 rule, or by a V2 rule whose
  ``DeleteMarkerReplication`` is Enabled (never by a tag-based rule). A delete of a version
  id is never replicated.

moto 5.2.5 stores PutBucketReplication's configuration and nothing more. Here every S3
request that changes a bucket with a configuration is watched: the versions it added are
scheduled once the request has finished (so its metadata and tags are set), and copied on
the ``Replications`` pool, which ``LocalCloud.settle()`` drains. Not emulated: replication
metrics and S3 Replication Time Control, cross-account ownership translation, replica
modification sync, the ``s3:Replication:*`` event notifications (refused at deploy where a
template sets them: stack/properties.py).
"""

from __future__ import annotations

import functools
import logging
from typing import Any, NamedTuple

from moto.s3.models import FakeDeleteMarker, FakeKey, s3_backends
from moto.s3.responses import S3Response

from localcloud.iam import enforcement as iam
from localcloud.iam.actions import Need
from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Replication, Replications, Runtime

__all__ = ["PATCHES"]

LOG = logging.getLogger(__name__)
STATUS_HEADER = "x-amz-replication-status"
SESSION = "s3-replication"


# ------------------------------------------------------------------ the configuration
class Rule(NamedTuple):
    id: str
    priority: int
    enabled: bool
    prefix: str
    tags: dict[str, str]
    v2: bool  # a Filter: delete markers only with DeleteMarkerReplication Enabled
    delete_markers: bool
    destination: str  # bucket name
    storage_class: str | None


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]


def _tag_map(tags: Any) -> dict[str, str]:
    return {_text(t.get("Key")): _text(t.get("Value")) for t in _listed(tags)}


def rules(config: dict[str, Any]) -> list[Rule]:
    """The rules of moto's stored configuration (PutBucketReplication's XML, parsed)."""
    found = []
    for raw in _listed(config.get("Rule")):
        prefix, tags, v2 = _text(raw.get("Prefix")), {}, "Filter" in raw
        if v2:
            filt = raw.get("Filter") or {}
            both = filt.get("And") or {}
            prefix = _text(filt.get("Prefix") or both.get("Prefix"))
            tags = _tag_map(filt.get("Tag")) | _tag_map(both.get("Tag"))
        marker = _text((raw.get("DeleteMarkerReplication") or {}).get("Status")) == "Enabled"
        destination = raw.get("Destination") or {}
        found.append(
            Rule(
                id=_text(raw.get("ID")),
                priority=int(raw.get("Priority") or 0),
                enabled=_text(raw.get("Status")) == "Enabled",
                prefix=prefix,
                tags=tags,
                v2=v2,
                delete_markers=(marker and not tags) if v2 else True,
                destination=_text(destination.get("Bucket")).rsplit(":", 1)[-1],
                storage_class=destination.get("StorageClass") or None,
            )
        )
    return found


def applicable(config: dict[str, Any], key: str, tags: dict[str, str] | None) -> list[Rule]:
    """The rule that applies per destination (highest priority) to a new object version
    with ``tags``, or to a delete marker (``tags`` None) of ``key``."""
    best: dict[str, Rule] = {}
    for rule in rules(config):
        if not rule.enabled or not key.startswith(rule.prefix):
            continue
        if tags is None and not rule.delete_markers:
            continue
        if tags is not None and any(tags.get(k) != v for k, v in rule.tags.items()):
            continue
        if rule.destination not in best or rule.priority > best[rule.destination].priority:
            best[rule.destination] = rule
    return list(best.values())


# ------------------------------------------------------------------ copying
def _overall(key: FakeKey) -> str:
    statuses = set(key.localcloud_replications.values())  # type: ignore[attr-defined]
    return "FAILED" if "FAILED" in statuses else "PENDING" if "PENDING" in statuses else "COMPLETED"


class _Copier:
    def __init__(self, rt: Runtime, log: Replications) -> None:
        self.rt, self.log = rt, log

    def backend(self, account: str) -> Any:
        return s3_backends[account]["aws"]

    def schedule(self, bucket: Any, version: Any) -> None:
        """A version the finished request added to ``bucket``: replicate it where a rule says."""
        config = getattr(bucket, "replication", None)
        if not config or not bucket.is_versioned:
            return
        backend = self.backend(bucket.account_id)
        marker = isinstance(version, FakeDeleteMarker)
        if not marker and (
            getattr(version, "replication_status", None) == "REPLICA"
            or version.encryption == "aws:kms"  # only with SseKmsEncryptedObjects
        ):
            return
        tags = None if marker else backend.tagger.get_tag_dict_for_resource(version.arn)
        chosen = applicable(config, version.name, tags)
        if not chosen:
            return
        if not marker:
            version.localcloud_replications = {r.destination: "PENDING" for r in chosen}
            version.replication_status = "PENDING"
        role = _text(config.get("Role"))
        for rule in chosen:
            item = Replication(
                bucket.name, version.name, version.version_id, rule.destination, rule.id, marker
            )
            self.log.submit(item, functools.partial(self.copy, bucket, version, role, rule))

    def denied(self, role: str, region: str, *needs: tuple[str, str]) -> str:
        """Why ``role`` may not do all ``needs`` (action, resource): the first denied, or ""."""
        authorizer = self.rt.authorizer
        for action, resource in needs if authorizer.enabled else ():
            need = Need(action, resource)
            if not authorizer.check(iam.role(role, SESSION), need, region, True).allowed:
                return f"{role} is not allowed {action} on {resource}"
        return ""

    def copy(self, bucket: Any, version: Any, role: str, rule: Rule, item: Replication) -> None:
        try:
            self._copy(item, bucket, version, role, rule)
        finally:
            if not item.delete_marker:
                version.localcloud_replications[item.destination] = item.status
                version.replication_status = _overall(version)

    def _copy(self, item: Replication, bucket: Any, version: Any, role: str, rule: Rule) -> None:
        backend = self.backend(bucket.account_id)
        dest = backend.buckets.get(rule.destination)
        if dest is None or not dest.is_versioned:
            item.status, item.error = "FAILED", f"{rule.destination}: no versioned bucket"
            return
        source_arn = f"arn:aws:s3:::{bucket.name}/{version.name}"
        dest_arn = f"arn:aws:s3:::{dest.name}/{version.name}"
        needs = (
            [("s3:ReplicateDelete", dest_arn)]
            if item.delete_marker
            else [
                ("s3:GetObjectVersionForReplication", source_arn),
                ("s3:ReplicateObject", dest_arn),
            ]
        )
        item.error = self.denied(role, dest.region_name, *needs)
        if item.error:
            item.status = "FAILED"
            return
        if item.delete_marker:
            replica: Any = FakeDeleteMarker(key=dest.keys.get(version.name) or version.key)
            replica._version_id = version.version_id
        else:
            replica = self._replica(version, dest, rule)
            tags = backend.tagger.get_tag_dict_for_resource(version.arn)
            reading = ("s3:GetObjectVersionTagging", source_arn)
            if tags and not self.denied(
                role, dest.region_name, reading, ("s3:ReplicateTags", dest_arn)
            ):
                backend.tagger.copy_tags(version.arn, replica.arn)
        dest.keys[version.name] = replica  # appended: the key's newest version
        item.status = "COMPLETED"

    def _replica(self, version: FakeKey, dest: Any, rule: Rule) -> FakeKey:
        replica = FakeKey(
            name=version.name,
            value=version.value,
            account_id=dest.account_id,
            region_name=dest.region_name,
            storage=rule.storage_class or version.storage_class,
            is_versioned=True,
            version_id=version.version_id,
            bucket_name=dest.name,
            encryption=version.encryption,
            checksum_value=version.checksum_value,
        )
        replica.set_metadata(dict(version.metadata), replace=True)
        replica.checksum_algorithm = version.checksum_algorithm
        replica.last_modified = version.last_modified
        replica.replication_status = "REPLICA"  # type: ignore[attr-defined]
        return replica


# ------------------------------------------------------------------ patches
def _versions(bucket: Any, names: list[str] | None) -> dict[str, list[Any]]:
    keys = bucket.keys
    return {n: list(keys.getlist(n, [])) for n in (list(dict(keys)) if names is None else names)}


_KEY_RESPONSE = S3Response._key_response
_BUCKET_RESPONSE = S3Response._bucket_response
_RESPONSE_DICT = FakeKey.response_dict


def _build(rt: Runtime) -> Targets:
    copier = _Copier(rt, rt.s3_replications)
    rt.on_close(rt.s3_replications.shutdown)

    def watching(respond: Any, key: bool) -> Any:
        def response(self: S3Response, request: Any, full_url: str) -> Any:
            """``respond``; then schedule the versions it added to a replicated bucket."""
            if request.method not in ("PUT", "POST", "DELETE"):
                return respond(self, request, full_url)
            try:
                bucket_name = self.parse_bucket_name_from_url(request, full_url)
                bucket = self.backend.buckets.get(bucket_name)
            except Exception:  # not a bucket request moto can parse: nothing to watch
                bucket = None
            if bucket is None or not getattr(bucket, "replication", None):
                return respond(self, request, full_url)
            names = [self.parse_key_name()] if key else None
            before = _versions(bucket, names)
            answer = respond(self, request, full_url)
            for name, versions in _versions(bucket, names).items():
                old = before.get(name, [])
                for version in versions:
                    if not any(version is o for o in old):
                        copier.schedule(bucket, version)
            return answer

        return response

    def response_dict(self: FakeKey) -> dict[str, Any]:
        headers: dict[str, Any] = _RESPONSE_DICT.fget(self)  # type: ignore[attr-defined]
        status = getattr(self, "replication_status", None)
        if status:
            headers[STATUS_HEADER] = status
        return headers

    return {
        (S3Response, "_key_response"): watching(_KEY_RESPONSE, True),
        (S3Response, "_bucket_response"): watching(_BUCKET_RESPONSE, False),
        (FakeKey, "response_dict"): property(response_dict),
    }


PATCHES = [
    Patch(
        name="s3-replication",
        kind=Kind.FEATURE,
        reason="A bucket's replication configuration copies each new object version (and "
        "delete marker, where its rule says) to the destination bucket in the background, "
        "as its role is allowed to, with x-amz-replication-status PENDING, COMPLETED, "
        "FAILED or REPLICA (moto stores the configuration and replicates nothing).",
        test="localcloud/tests/test_s3_replication.py"
        "::test_a_permitted_role_replicates_each_new_version",
        build=_build,
    ),
]
