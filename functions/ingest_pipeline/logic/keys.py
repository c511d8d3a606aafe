"""Where an object lives and where its results go: pure functions of the object key."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from ingest_pipeline.errors import UnknownDatasetError

INCOMING_PREFIX = "incoming/"
PROCESSED_PREFIX = "processed/"
QUARANTINE_PREFIX = "quarantine/"
# The large-file path's working files (plans, chunk outputs, Map Run results); the bucket's
# lifecycle deletes what a failed execution leaves there.
WORK_PREFIX = "work/"
MAP_RESULTS_PREFIX = f"{WORK_PREFIX}map-results"


def relative_key(key: str) -> str:
    """The key below ``incoming/``: ``incoming/orders/2026/a.csv`` -> ``orders/2026/a.csv``."""
    if not key.startswith(INCOMING_PREFIX) or len(key) == len(INCOMING_PREFIX):
        raise UnknownDatasetError(
            f"object key {key!r} is not under {INCOMING_PREFIX!r}; nothing else is processed"
        )
    return key[len(INCOMING_PREFIX) :]


def dataset_of(key: str) -> str:
    """The dataset is the first folder below ``incoming/``."""
    rel = relative_key(key)
    dataset, sep, rest = rel.partition("/")
    if not sep or not dataset or not rest:
        raise UnknownDatasetError(
            f"object key {key!r} names no dataset: expected incoming/<dataset>/<file>"
        )
    return dataset


# Suffixes of the input formats (logic/contracts.py Input), replaced by the output's.
_INPUT_SUFFIXES = (".csv", ".jsonl", ".ndjson")
INGEST_DATE_PARTITION = "ingest_date"
PARQUET_SUFFIX = ".parquet"
MANIFEST_NAME = "_manifest.json"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def ingest_date(last_modified: datetime) -> str:
    """The partition of an object version: the UTC date it landed (its S3 Last-Modified,
    which never changes for a version, so reprocessing it later writes the same keys)."""
    if last_modified.tzinfo is None:
        last_modified = last_modified.replace(tzinfo=UTC)
    return last_modified.astimezone(UTC).date().isoformat()


def content_version_date(version_id: str | None) -> str | None:
    """The ingest date a content version (``null.<YYYYmmddTHHMMSSZ>.<ETag>``, an unversioned
    bucket's write: ``ingest_pipeline.versions``) carries: its Last-Modified; else None."""
    if not version_id or not version_id.startswith("null."):
        return None
    stamp = version_id[len("null.") :].partition(".")[0]
    if len(stamp) < 8 or not stamp[:8].isdigit():
        return None
    return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}"


def output_key(key: str, ingest_date: str, suffix: str = ".jsonl") -> str:
    """``incoming/orders/2026/a.csv`` landed on 2026-11-30 ->
    ``processed/orders/ingest_date=2026-11-30/2026/a.jsonl``: a Hive-style partition of
    the date the object landed (``ingest_date``), then the key below the dataset.

    ``.gz`` and then a known input suffix (``.csv``, ``.jsonl``, ``.ndjson``, any case) are
    replaced: ``a.csv.gz`` and ``a.ndjson`` are written as ``a.jsonl``. Any other name keeps
    its suffix (``a.txt`` -> ``a.txt.jsonl``). ``suffix``: the output format's; Parquet
    output is a directory (``.parquet``) of parts (``parquet_part_key``)."""
    if not _DATE.match(ingest_date):
        raise ValueError(f"ingest_date must be YYYY-MM-DD, not {ingest_date!r}")
    dataset = dataset_of(key)
    stem = relative_key(key)[len(dataset) + 1 :]
    stem = stem[: -len(".gz")] if stem.lower().endswith(".gz") else stem
    for known in _INPUT_SUFFIXES:
        if stem.lower().endswith(known):
            stem = stem[: -len(known)]
            break
    partition = f"{INGEST_DATE_PARTITION}={ingest_date}"
    return f"{PROCESSED_PREFIX}{dataset}/{partition}/{stem}{suffix}"


def parquet_part_key(directory: str, index: int) -> str:
    """Part ``index`` of a Parquet output directory: ``<dir>/part-00000.parquet``."""
    return f"{directory}/part-{index:05d}{PARQUET_SUFFIX}"


def manifest_key(directory: str) -> str:
    """A Parquet output directory's manifest, written last: the commit of the directory
    (``_``-prefixed: Hive, Spark, Athena and Glue skip it as a data file)."""
    return f"{directory}/{MANIFEST_NAME}"


def quarantine_key(key: str) -> str:
    """``incoming/orders/a.csv`` -> ``quarantine/orders/a.csv`` (keys outside incoming/ kept)."""
    rel = key[len(INCOMING_PREFIX) :] if key.startswith(INCOMING_PREFIX) else key
    return f"{QUARANTINE_PREFIX}{rel}"


def correlation_id(bucket: str, key: str, version_id: str | None) -> str:
    """One id for every log line about one object version."""
    return f"s3://{bucket}/{key}#{version_id or 'null'}"


def execution_name(execution_arn: str) -> str:
    """The execution's name: the last part of its ARN (``...:execution:<machine>:<name>``)."""
    return execution_arn.rsplit(":", 1)[-1] or "local"


def work_prefix(execution_arn: str, round_: int) -> str:
    """Where one round of an execution's large-file work lives."""
    return f"{WORK_PREFIX}{execution_name(execution_arn)}/r{round_}/"


def plan_key(execution_arn: str, round_: int) -> str:
    return f"{work_prefix(execution_arn, round_)}plan.json"


def part_key(execution_arn: str, round_: int, index: int, suffix: str = ".jsonl") -> str:
    """A chunk's output under the execution's working files."""
    return f"{work_prefix(execution_arn, round_)}part-{index:05d}{suffix}"


def piece_key(execution_arn: str, round_: int, index: int) -> str:
    """A piece of the object as UTF-8 text, written by SplitObject's single pass (gzip,
    other encodings): what chunk ``index`` converts."""
    return f"{work_prefix(execution_arn, round_)}piece-{index:05d}"


def header_key(execution_arn: str, round_: int) -> str:
    """The header (as UTF-8) of an object that SplitObject cut into pieces."""
    return f"{work_prefix(execution_arn, round_)}header"
