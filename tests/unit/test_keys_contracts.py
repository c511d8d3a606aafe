from __future__ import annotations

import pytest

from ingest_pipeline.errors import UnknownDatasetError
from ingest_pipeline.logic import keys
from ingest_pipeline.logic.contracts import known_datasets, load_contract

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("key", "dataset", "output", "quarantine"),
    [
        ("incoming/orders/a.csv", "orders", "processed/orders/a.jsonl", "quarantine/orders/a.csv"),
        (
            "incoming/orders/2026/11/my file+1%.CSV",
            "orders",
            "processed/orders/2026/11/my file+1%.jsonl",
            "quarantine/orders/2026/11/my file+1%.CSV",
        ),
        (
            "incoming/orders/d\u00e9j\u00e0 vu.txt",
            "orders",
            "processed/orders/d\u00e9j\u00e0 vu.txt.jsonl",
            "quarantine/orders/d\u00e9j\u00e0 vu.txt",
        ),
        (
            "incoming/orders/a.csv.gz",
            "orders",
            "processed/orders/a.jsonl",
            "quarantine/orders/a.csv.gz",
        ),
        (
            "incoming/orders/a.jsonl",
            "orders",
            "processed/orders/a.jsonl",
            "quarantine/orders/a.jsonl",
        ),
        (
            "incoming/orders/a.JSONL.GZ",
            "orders",
            "processed/orders/a.jsonl",
            "quarantine/orders/a.JSONL.GZ",
        ),
        (
            "incoming/orders/a.ndjson",
            "orders",
            "processed/orders/a.jsonl",
            "quarantine/orders/a.ndjson",
        ),
        (
            "incoming/orders/a.txt.gz",
            "orders",
            "processed/orders/a.txt.jsonl",
            "quarantine/orders/a.txt.gz",
        ),
    ],
)
def test_key_mapping(key: str, dataset: str, output: str, quarantine: str) -> None:
    assert keys.dataset_of(key) == dataset
    assert keys.output_key(key) == output
    assert keys.quarantine_key(key) == quarantine


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
