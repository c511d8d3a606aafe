"""The output under ``processed/``: its content type, the summary a superseded version
reports, the logs and metrics of a written or rejected object, and the commit of a Parquet
output directory. Shared by ProcessObject (one Lambda) and AssembleOutput (the large-file
path); which version may write the output is ``ingest_pipeline.versions``.

**A Parquet output is a directory** (``processed/<dataset>/ingest_date=<date>/<stem>.parquet/``)
of parts ``part-00000.parquet``, ``part-00001.parquet``, ... (one per chunk; one on the
single-Lambda path), committed by its manifest ``_manifest.json``, written last:

1. ``before_write`` is asked about the manifest (it carries the source's identity, as a
   JSON Lines output does): a newer version's directory is never touched.
2. Each part is written conditionally on what the directory held when it was listed
   (If-Match on the part there, If-None-Match where there was none): a writer racing
   another one loses on its first part the other wrote, and writes nothing more.
3. The manifest (parts, rows, sizes, SHA-256 and each part's ETag) is written with the
   verdict's condition: the one PUT that commits the directory.
4. Parts of an earlier, bigger output the manifest does not name are deleted.

Why a manifest, not a copy or rename: S3 has no rename, and copying N parts into place is
N writes a reader can see one by one, as the parts themselves are; a manifest is one PUT,
atomic, conditional, and names exactly the parts (and their ETags) of one version.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from msgspec import Struct

from ingest_pipeline.config import Settings
from ingest_pipeline.dal import s3
from ingest_pipeline.errors import DataError, ErrorClass
from ingest_pipeline.logic import keys
from ingest_pipeline.logic.contracts import Contract, Registered
from ingest_pipeline.logic.summary import Summary
from ingest_pipeline.models import ObjectRef, Outcome
from ingest_pipeline.observability import logger, metrics

CONTENT_TYPE = "application/x-ndjson"
MANIFEST_VERSION = 1


class WrittenPart(Struct, frozen=True):
    """One part of a Parquet output directory, as written."""

    key: str
    rows: int
    bytes: int
    sha256: str
    etag: str = ""


def part_condition(existing: Mapping[str, str], key: str) -> dict[str, Any]:
    """``upload_stream``'s condition for a part: still the ETag listed, or still absent."""
    if key in existing:
        return {"if_match": existing[key]}
    return {"if_none_match": True}


def commit_parquet(
    obj: ObjectRef,
    directory: str,
    parts: Sequence[WrittenPart],
    *,
    contract: Contract,
    verdict: Any,
    existing: Mapping[str, str],
) -> None:
    """Write the directory's manifest (the commit, conditional as ``verdict`` says: raises
    ``s3.OutputChangedError`` when it lost), then delete the parts it does not name."""
    manifest = {
        "format": "parquet",
        "manifestVersion": MANIFEST_VERSION,
        "rows": sum(part.rows for part in parts),
        "columns": contract.header,
        "source": {"bucket": obj.bucket, "key": obj.key, "versionId": obj.version_id},
        "parts": [
            {
                "key": part.key.rsplit("/", 1)[-1],
                "rows": part.rows,
                "bytes": part.bytes,
                "sha256": part.sha256,
                "etag": part.etag,
            }
            for part in parts
        ],
    }
    s3.upload_stream(
        obj.bucket,
        keys.manifest_key(directory),
        iter([json.dumps(manifest, ensure_ascii=False).encode()]),
        content_type="application/json",
        metadata=verdict.metadata,
        if_match=verdict.if_match,
        if_none_match=verdict.if_none_match,
    )
    named = {part.key for part in parts}
    stale = sorted(
        key for key in existing if key.startswith(f"{directory}/part-") and key not in named
    )
    if stale:
        s3.delete_keys(obj.bucket, stale)
        logger.info("stale parts deleted", directory=directory, count=len(stale))


def superseded(
    obj: ObjectRef, settings: Settings, out_key: str, newer_version: str, registered: Registered
) -> dict[str, Any]:
    logger.info("object superseded", output_key=out_key, superseded_by=newer_version)
    metrics.add_metric(name="ObjectsSuperseded", unit=MetricUnit.Count, value=1)
    return {
        **Summary(dataset=registered.contract.dataset).to_dict(),
        "sourceKey": obj.key,
        "outputKey": out_key,
        "outcome": Outcome.SUPERSEDED.value,
        "supersededBy": newer_version,
        "expiresAt": expires_at(settings),
        "contractVersion": registered.version,
    }


def expires_at(settings: Settings) -> str:
    """The state record's TTL (epoch seconds, a string as DynamoDB's N type wants it)."""
    moment = datetime.now(UTC) + timedelta(days=settings.failure_policy.record_retention_days)
    return str(int(moment.timestamp()))


def log_rejected(exc: DataError) -> None:
    """Bad data: the metric and the log line the dashboard and the saved queries read."""
    metrics.add_metric(name="ObjectsRejected", unit=MetricUnit.Count, value=1)
    logger.warning(
        "object rejected",
        error=type(exc).__name__,
        error_class=ErrorClass.PERMANENT.value,
        error_code=exc.code,
        line=exc.line,
        cause=exc.message,
    )


def log_processed(summary: dict[str, Any], started: float) -> None:
    """A written output: its metrics and the log line (``duration_ms``: the saved query
    "slowest objects" sorts on it) since ``started`` (``time.monotonic()``)."""
    if summary["outcome"] != Outcome.PROCESSED:
        return
    metrics.add_metric(name="ObjectsProcessed", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="RowsProcessed", unit=MetricUnit.Count, value=summary["rows"])
    duration_ms = round((time.monotonic() - started) * 1000)
    fields = {k: v for k, v in summary.items() if k != "plan"}
    logger.info("object processed", duration_ms=duration_ms, **fields)
