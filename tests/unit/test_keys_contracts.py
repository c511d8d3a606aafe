from __future__ import annotations

import pytest

from ingest_pipeline.errors import UnknownDatasetError
from ingest_pipeline.logic import keys
from ingest_pipeline.logic.contracts import known_datasets, load_contract

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("key", "dataset", "output", "quarantine"),
    [
        (
            "incoming/orders/a.csv",
            "orders",
            "processed/orders/ingest_date=2026-11-30/a.jsonl",
            "quarantine/orders/a.csv",
        ),
        (
            "incoming/orders/2026/11/my file+1%.CSV",
            "orders",
            "processed/orders/ingest_date=2026-11-30/2026/11/my file+1%.jsonl",
            "quarantine/orders/2026/11/my file+1%.CSV",
        ),
        (
            "incoming/orders/d\u00e9j\u00e0 vu.txt",
            "orders",
            "processed/orders/ingest_date=2026-11-30/d\u00e9j\u00e0 vu.txt.jsonl",
            "quarantine/orders/d\u00e9j\u00e0 vu.txt",
        ),
        (
            "incoming/orders/a.csv.gz",
            "orders",
            "processed/orders/ingest_date=2026-11-30/a.jsonl",
            "quarantine/orders/a.csv.gz",
        ),
        (
            "incoming/orders/a.jsonl",
            "orders",
            "processed/orders/ingest_date=2026-11-30/a.jsonl",
            "quarantine/orders/a.jsonl",
        ),
        (
            "incoming/orders/a.JSONL.GZ",
            "orders",
            "processed/orders/ingest_date=2026-11-30/a.jsonl",
            "quarantine/orders/a.JSONL.GZ",
        ),
        (
            "incoming/orders/a.ndjson",
            "orders",
            "processed/orders/ingest_date=2026-11-30/a.jsonl",
            "quarantine/orders/a.ndjson",
        ),
        (
            "incoming/orders/a.txt.gz",
            "orders",
            "processed/orders/ingest_date=2026-11-30/a.txt.jsonl",
            "quarantine/orders/a.txt.gz",
        ),
    ],
)
def test_key_mapping(key: str, dataset: str, output: str, quarantine: str) -> None:
    assert keys.dataset_of(key) == dataset
    assert keys.output_key(key, "2026-11-30") == output
    assert keys.quarantine_key(key) == quarantine


def test_the_partition_is_the_utc_date_the_version_landed() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    landed = datetime(2026, 11, 30, 23, 30, tzinfo=timezone(timedelta(hours=-2)))
    assert keys.ingest_date(landed) == "2026-12-01"  # 01:30 UTC
    assert keys.ingest_date(datetime(2026, 11, 30, 23, 30)) == "2026-11-30"  # naive: UTC
    assert keys.ingest_date(datetime(2026, 1, 2, tzinfo=UTC)) == "2026-01-02"
    assert keys.content_version_date("null.20261130T235959Z.abc") == "2026-11-30"
    assert keys.content_version_date("3HL4kqtJlcpXroDTDmJ") is None
    directory = keys.output_key("incoming/orders/2026/a.csv.gz", "2026-11-30", ".parquet")
    assert directory == "processed/orders/ingest_date=2026-11-30/2026/a.parquet"
    assert keys.parquet_part_key(directory, 1) == f"{directory}/part-00001.parquet"
    assert keys.manifest_key(directory) == f"{directory}/_manifest.json"
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        keys.output_key("incoming/orders/a.csv", "2026/11/30")


@pytest.mark.parametrize(
    "key", ["incoming/a.csv", "incoming/", "other/orders/a.csv", "incoming//a.csv"]
)
def test_keys_without_a_dataset_are_data_errors(key: str) -> None:
    with pytest.raises(UnknownDatasetError):
        keys.dataset_of(key)


def test_unknown_dataset_lists_known_ones() -> None:
    with pytest.raises(UnknownDatasetError, match="orders"):
        load_contract("invoices")


def test_dataset_names_cannot_escape_the_contract_folder() -> None:
    with pytest.raises(UnknownDatasetError):
        load_contract("../errors")


def test_packaged_contracts_load() -> None:
    assert set(known_datasets()) >= {"orders", "customers"}
    for name in known_datasets():
        assert load_contract(name).dataset == name
