"""Where an object lives and where its results go: pure functions of the object key."""

from __future__ import annotations

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


def output_key(key: str, suffix: str = ".jsonl") -> str:
    """``incoming/orders/a.csv`` -> ``processed/orders/a.jsonl`` (same relative key).

    ``.gz`` and then a known input suffix (``.csv``, ``.jsonl``, ``.ndjson``, any case) are
    replaced: ``a.csv.gz`` and ``a.ndjson`` are written as ``a.jsonl``. Any other name keeps
    its suffix (``a.txt`` -> ``a.txt.jsonl``), as it always has: outputs already written
    keep their keys. ``suffix``: the output format's (``.parquet``)."""
    stem = relative_key(key)
    stem = stem[: -len(".gz")] if stem.lower().endswith(".gz") else stem
    for known in _INPUT_SUFFIXES:
        if stem.lower().endswith(known):
            stem = stem[: -len(known)]
            break
    return f"{PROCESSED_PREFIX}{stem}{suffix}"


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


def part_key(execution_arn: str, round_: int, index: int) -> str:
    return f"{work_prefix(execution_arn, round_)}part-{index:05d}.jsonl"
