"""``ingestctl dataset add FILE | list | show NAME``: the contracts a stack reads at run time
(``ingest_pipeline.dal.contracts``: ``contracts/<dataset>.json`` in the ingest bucket, one
S3 object version per contract version), without a redeploy.

``add`` refuses a contract that is not one (the problem and where it is, exit 2), registers
the next version otherwise (exit 0; an unchanged contract is not registered again). Objects
claimed after it use it; objects claimed before keep the version they were claimed with.

With the stack's Glue database (its ``GlueDatabaseName`` output through ``--stack`` /
``--outputs``, or ``--glue-database``) ``add`` also creates or updates the dataset's Data
Catalog table (glue_catalog.py), and refuses, before registering anything, a contract the
table cannot take compatibly (a removed column, a changed type, a new required column: exit
2, naming the column and why).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ingest_pipeline.dal import contracts as store
from ingest_pipeline.dal.aws import is_error
from ingest_pipeline.dal.s3 import s3_client
from ingest_pipeline.errors import ConfigurationError, PipelineError
from ingest_pipeline.logic.contracts import known_datasets, load_contract, parse_contract
from ingest_pipeline.logic.processing import load_processor
from ingest_tools import glue_catalog
from localcloud.usage import read_json

__all__ = ["add_registry_commands"]

_ATTEMPTS = 3  # a registration racing another one reads the new latest and tries again
_RACED = ("PreconditionFailed", "ConditionalRequestConflict")

Resolve = Callable[[argparse.Namespace], str]
GLUE_DATABASE_OUTPUT = "GlueDatabaseName"  # template.yaml's output


def _glue_database(args: argparse.Namespace) -> str | None:
    """The stack's Glue database: --glue-database, else the stack's output (None: no table)."""
    if args.glue_database:
        return str(args.glue_database)
    if args.outputs:
        described = read_json(args.outputs, "--outputs")
        outputs = described.get("outputs", described) if isinstance(described, dict) else {}
        return outputs.get(GLUE_DATABASE_OUTPUT)
    if args.stack:  # the client reaches what --endpoint-url / --region named (cli._aws)
        import boto3

        stack = boto3.client("cloudformation").describe_stacks(StackName=args.stack)
        found = {o["OutputKey"]: o["OutputValue"] for o in stack["Stacks"][0].get("Outputs", [])}
        return found.get(GLUE_DATABASE_OUTPUT)
    return None


def _catalog(args: argparse.Namespace, bucket: str, contract: Any, *, apply: bool) -> str | None:
    """Check or write the dataset's Glue table (None: no database named)."""
    database = _glue_database(args)
    if database is None:
        return None
    import boto3

    glue = boto3.client("glue")
    return glue_catalog.register(glue, database, contract, bucket, apply=apply)


def _add(args: argparse.Namespace, bucket: str) -> int:
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
        contract = parse_contract(text)
        if contract.processor is not None:
            load_processor(contract.processor)  # the one the functions would run
    except OSError as exc:
        print(f"ingestctl dataset add: {path}: {exc.strerror or exc}")
        return 2
    except ConfigurationError as exc:
        print(f"ingestctl dataset add: {path}: refused: {exc.message}")
        return 2
    try:
        _catalog(args, bucket, contract, apply=False)  # before anything is registered
    except glue_catalog.SchemaChangeError as exc:
        print(f"ingestctl dataset add: {path}: refused: {exc}")
        return 2
    current = store.latest(bucket, contract.dataset)
    if current is not None and current[0] == text:
        print(f"{contract.dataset}: unchanged, version {current[1]} stays current")
        return _write_catalog(args, bucket, contract)
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            number = store.register(bucket, contract, text)
        except PipelineError as exc:
            if attempt < _ATTEMPTS and is_error(exc, *_RACED):
                continue
            print(f"ingestctl dataset add: {exc.message}")
            return 2
        break
    print(
        f"{contract.dataset}: registered version {number} "
        f"(s3://{bucket}/{store.contract_key(contract.dataset)}); "
        "objects claimed from now on use it"
    )
    return _write_catalog(args, bucket, contract)


def _write_catalog(args: argparse.Namespace, bucket: str, contract: Any) -> int:
    """The table, once the contract is registered (a table changed since the check, by
    another registration: exit 2, the contract stays registered)."""
    try:
        done = _catalog(args, bucket, contract, apply=True)
    except glue_catalog.SchemaChangeError as exc:
        print(f"ingestctl dataset add: the table was not updated: {exc}")
        return 2
    if done is not None:
        print(done)
    return 0


def _registered_names(bucket: str) -> list[str]:
    paginator = s3_client().get_paginator("list_objects_v2")
    names = []
    for page in paginator.paginate(Bucket=bucket, Prefix=store.CONTRACTS_PREFIX):
        for item in page.get("Contents", []):
            name = item["Key"][len(store.CONTRACTS_PREFIX) :]
            if name.endswith(".json") and "/" not in name:
                names.append(name[: -len(".json")])
    return names


def _versions(bucket: str, dataset: str) -> list[dict[str, Any]]:
    """Each registered version, newest first: number, when, S3 version id (deletions too)."""
    rows = []
    for when, version_id in store.history(bucket, dataset):
        number: Any = "deleted"
        if version_id is not None:
            head = s3_client().head_object(
                Bucket=bucket, Key=store.contract_key(dataset), VersionId=version_id
            )
            number = int(head.get("Metadata", {}).get(store.VERSION_METADATA) or 0)
        rows.append({"version": number, "registered": when.isoformat(), "versionId": version_id})
    return rows


def _list(args: argparse.Namespace, bucket: str) -> int:
    rows = []
    registered = set(_registered_names(bucket))
    for name in sorted(registered | set(known_datasets())):
        latest = _versions(bucket, name)[:1] if name in registered else []
        if latest:
            rows.append(
                {"dataset": name, "version": latest[0]["version"], "since": latest[0]["registered"]}
            )
        else:
            rows.append({"dataset": name, "version": 0, "since": "packaged"})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'DATASET':24} {'VERSION':>7}  SINCE")
    for row in rows:
        print(f"{row['dataset']:24} {row['version']!s:>7}  {row['since']}")
    return 0


def _show(args: argparse.Namespace, bucket: str) -> int:
    history = _versions(bucket, args.name)
    current = next((row for row in history if row["versionId"]), None)
    if history and history[0]["versionId"] is None:
        current = None  # deleted: the packaged contract, if any, applies again
    if current is not None:
        answer = s3_client().get_object(
            Bucket=bucket, Key=store.contract_key(args.name), VersionId=current["versionId"]
        )
        contract = json.loads(answer["Body"].read())
        version: Any = current["version"]
    else:
        try:
            contract = json.loads(_packaged_text(args.name))
        except PipelineError as exc:
            print(f"ingestctl dataset show: {exc.message}")
            return 2
        version = 0
    shown = {"dataset": args.name, "version": version, "contract": contract, "versions": history}
    print(json.dumps(shown, indent=2))
    return 0


def _packaged_text(dataset: str) -> str:
    from importlib import resources

    load_contract(dataset)  # UnknownDatasetError with the names known
    return resources.files("ingest_pipeline.contracts").joinpath(f"{dataset}.json").read_text()


def add_registry_commands(
    verbs: Any, aws_arguments: Callable[[argparse.ArgumentParser], None], bucket: Resolve
) -> None:
    """``add``, ``list``, ``show`` under ``ingestctl dataset``; ``bucket(args)`` names the
    stack's ingest bucket (--stack / --outputs / --bucket)."""

    def run(
        command: Callable[[argparse.Namespace, str], int],
    ) -> Callable[[argparse.Namespace], int]:
        return lambda args: command(args, bucket(args))

    add = verbs.add_parser("add", help="register a contract (its next version), no redeploy")
    add.add_argument("file", help="the contract, a JSON file")
    listing = verbs.add_parser("list", help="the datasets and their current contract versions")
    listing.add_argument("--json", action="store_true")
    show = verbs.add_parser("show", help="a dataset's current contract and its versions")
    show.add_argument("name")
    check = verbs.choices["check"]
    offline = check.get_default("func")

    def check_registered(args: argparse.Namespace) -> int:
        """``--dataset NAME`` with a stack: the contract registered there, if any."""
        if args.dataset and not args.contract and (args.stack or args.outputs or args.bucket):
            current = store.latest(bucket(args), args.dataset)
            if current is not None:
                args.registered = current[0]
                print(f"{args.dataset}: the stack's contract version {current[1]}")
        return int(offline(args))

    check.add_argument("--bucket", help="the ingest bucket (else from --stack / --outputs)")
    aws_arguments(check)
    check.set_defaults(func=check_registered)
    add.add_argument(
        "--glue-database",
        help=f"the Glue database of the dataset's table (else the stack's {GLUE_DATABASE_OUTPUT}"
        " output; neither: no table)",
    )
    for parser, command in ((add, _add), (listing, _list), (show, _show)):
        parser.add_argument("--bucket", help="the ingest bucket (else from --stack / --outputs)")
        aws_arguments(parser)
        parser.set_defaults(func=run(command))
