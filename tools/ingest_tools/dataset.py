"""``ingestctl dataset check FILE --dataset NAME``: a local file through the conversion
ProcessObject runs (``logic/transform.convert`` with the dataset's contract), offline.

It prints the problems ProcessObject would record, with their line numbers (value errors: up to
the first ten; a structural error stops at its line), and exits 0 when the file would be
processed, 1 when it would be quarantined, 2 when the check could not run (no such file,
no such dataset, a contract file that is not one). ``--contract FILE`` checks against a
contract that is not packaged yet.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ingest_pipeline.errors import ConfigurationError, DataError
from ingest_pipeline.logic.contracts import Contract, load_contract, parse_contract
from ingest_pipeline.logic.transform import Summary, convert

__all__ = ["add_commands", "check_file"]


class CheckError(Exception):
    """The check could not run (exit 2)."""


def _contract(args: argparse.Namespace) -> Contract:
    registered = getattr(args, "registered", None)  # the stack's version (dataset_registry)
    if registered is not None:
        return parse_contract(registered)
    if args.contract:
        path = Path(args.contract)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CheckError(f"--contract {path}: {exc.strerror or exc}") from exc
        try:
            return parse_contract(text)
        except ConfigurationError as exc:
            raise CheckError(f"--contract {path}: {exc.message}") from exc
    if not args.dataset:
        raise CheckError("name the dataset (--dataset NAME) or its contract (--contract FILE)")
    try:
        return load_contract(args.dataset)
    except DataError as exc:  # UnknownDatasetError: the names known are in its message
        raise CheckError(exc.message) from exc


def check_file(path: Path, contract: Contract) -> tuple[Summary, DataError | None]:
    """What ProcessObject's conversion makes of ``path``: its summary, and the DataError that
    would quarantine it (None when it would be processed)."""
    summary = Summary(dataset=contract.dataset)
    with path.open("rb") as source:
        try:
            for _ in convert(source, contract, summary):
                pass
        except DataError as exc:
            return summary, exc
    return summary, None


def _check(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        contract = _contract(args)
        if not path.is_file():
            raise CheckError(f"{path}: no such file")
    except CheckError as exc:
        print(f"ingestctl dataset check: {exc}")
        return 2
    summary, error = check_file(path, contract)
    if error is None:
        print(f"{path}: would be processed: {summary.rows} rows for dataset {contract.dataset!r}")
        return 0
    print(f"{path}: would be quarantined: {error.code}")
    problems: list[dict[str, Any]] = list(error.details.get("errors") or [])
    if not problems:
        print(f"  line {error.line}: {error.message}" if error.line else f"  {error.message}")
    for problem in problems:
        print(f"  line {problem['line']}: column {problem['column']!r}: {problem['error']}")
    return 1


def add_commands(commands: Any) -> Any:
    dataset = commands.add_parser("dataset", help="the datasets' contracts and their files")
    verbs = dataset.add_subparsers(dest="dataset_command", required=True)
    check = verbs.add_parser(
        "check", help="would this local file be processed? (the Lambda's conversion, offline)"
    )
    check.add_argument("file", help="a local file, as it would be uploaded")
    check.add_argument(
        "--dataset",
        help="the dataset's name: its packaged contract, or the stack's current one with "
        "--stack / --outputs / --bucket",
    )
    check.add_argument("--contract", help="a contract file to check against instead")
    check.set_defaults(func=_check)
    return verbs
