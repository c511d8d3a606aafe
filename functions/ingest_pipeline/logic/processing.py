"""Your own processing: a dataset's contract may name a processor (``"processor":
"mask_emails"``), a function in ``ingest_pipeline/processors/<name>.py`` that every record of
the dataset goes through after it was validated and converted, before it is written.

The protocol (docs/your-own-processing.md)::

    def process(record: dict[str, Any]) -> dict[str, Any] | None

``record`` has the contract's columns, in order, with their converted values (str, int, bool,
None; a decimal, date and datetime as its string). Return the record to write (changed or
not), or None to leave it out. Raise ``ingest_pipeline.errors.ValueTypeError`` (or another
DataError) for bad data: the file is quarantined with that message and the record's number.

Both paths call it: ProcessObject for a whole file and ProcessChunk for each chunk of a large
one (``transform.convert`` applies it), so a processor sees one record at a time and keeps no
state between records. Around it nothing changes: the newest version wins, the output is
written with one conditional write, a bad file writes nothing, any other exception is a
CONFIGURATION error (the processor's bug: recorded, operations told, retried after a fix).
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable, Iterator
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from ingest_pipeline.errors import ConfigurationError, DataError

if TYPE_CHECKING:
    from ingest_pipeline.logic.contracts import Contract
    from ingest_pipeline.logic.summary import Summary

__all__ = ["PACKAGE", "Processor", "load_processor", "processed"]

PACKAGE = "ingest_pipeline.processors"


class Processor(Protocol):
    def __call__(self, record: dict[str, Any], /) -> dict[str, Any] | None: ...


@cache
def load_processor(name: str) -> Processor:
    """``ingest_pipeline.processors.<name>.process``; ConfigurationError when there is none
    (only modules of that package: a contract cannot name any other code)."""
    try:
        module = importlib.import_module(f"{PACKAGE}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{PACKAGE}.{name}":
            raise ConfigurationError(f"processor {name!r} cannot be imported: {exc}") from exc
        raise ConfigurationError(
            f"no processor {name!r}: add functions/ingest_pipeline/processors/{name}.py "
            "with a process(record) function, and deploy it"
        ) from None
    process: Callable[[dict[str, Any]], dict[str, Any] | None] | None = getattr(
        module, "process", None
    )
    if not callable(process):
        raise ConfigurationError(f"processor {name!r} has no process(record) function")
    return process


def processed(
    lines: Iterator[bytes], name: str, contract: Contract, summary: Summary
) -> Iterator[bytes]:
    """``lines`` (converted records, one JSON object each) through the processor ``name``;
    the summary then counts what is written, not what was read."""
    process = load_processor(name)
    columns = contract.header
    digest = hashlib.sha256()
    rows = size = 0
    for number, line in enumerate(lines, 1):
        try:
            record = process(json.loads(line))
        except DataError as exc:
            exc.message = f"record {number}: {exc.message} (processor {name!r})"
            raise
        except Exception as exc:
            raise ConfigurationError(
                f"processor {name!r} failed on record {number}: {type(exc).__name__}: {exc}"
            ) from exc
        if record is None:
            continue
        if list(record) != columns:
            raise ConfigurationError(
                f"processor {name!r} returned the keys {list(record)} for record {number}; "
                f"a record keeps the contract's columns, in order: {columns}"
            )
        out = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        rows += 1
        size += len(out)
        digest.update(out)
        yield out
    summary.rows, summary.bytes_out, summary.sha256 = rows, size, digest.hexdigest()
