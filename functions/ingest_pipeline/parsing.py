"""msgspec's validation errors as ``ParseError``: every problem, each with its location.

The Lambdas' inputs (``models``, ``large_models``), their settings (``config``) and the dataset
contracts (``logic.contracts``) are ``msgspec.Struct`` classes: field rules are
``Annotated[int, Meta(ge=1)]``, wire names ``rename=``, checks across fields
``__post_init__`` (ValueError), unknown keys refused with ``forbid_unknown_fields=True``.
``parse(cls, data)`` is ``msgspec.convert(data, cls, strict=False)`` (lax: an int field takes
a whole float or a string of digits; a bool is never an int). msgspec stops at the first
problem; when it refuses a value, ``parse`` converts each field of the record on its own to
report every problem at once (nested records too), then raises ``ParseError``:
``object.size: Expected `int` >= 0``, ``object.key: Field required``.

Why msgspec (it replaced a 325-line dataclass parser of this module; pydantic, the
powertools parser's engine, costs about 90 ms of every cold start and stays out:
``tests/unit/test_cold_start.py``). Measured on Python 3.13, x86_64, on a loaded 2-core
machine (medians of 31-41 fresh interpreters; ``scripts/bench_cold_start.py`` and the
commands in docs/performance.md):

* import: ``import msgspec`` after a handler's own imports 5-10 ms (min 4.9, median 10.0);
  the old parser's module 3-8 ms (min 2.8, median 8.0). Its dependencies (typing_extensions,
  inspect, decimal, uuid, datetime) are already loaded by Powertools and boto3;
* the request models: defining the 8 event records and parsing one event of each of three
  handlers, 16 ms as Structs (import of msgspec included; min 5.3) against 31 ms as
  dataclasses (min 16.7): the ``@dataclass`` decorator ``exec``\\s code per class;
* per call: ProcessRequest 0.8 µs (was 58), FailureRequest 1.1 µs (was 144), ReconcileRequest
  4.7 µs (was 63);
* package: msgspec 0.22.0's manylinux2014_aarch64 cp313 wheel is 219 KB, 611 KB unpacked
  (504 KB of it the C extension), shipped beside ``ingest_pipeline`` (245 KB) by
  ``functions/Makefile``;
* the handlers, old parser vs msgspec, paired under the same load (``bench_cold_start.py
  --baseline``, Python 3.13, 7 rounds; the VM's floor was 1,150 ms, not 250-490): process
  1,466 vs 1,483 ms, reconcile 1,520 vs 1,520, classify_error 923 vs 942. Not worse: adopted.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")
Location = tuple[str | int, ...]

# msgspec's messages, read only on the error path: patterns, not compiled at import (the
# re module compiles and caches each one when a refusal is first read).
# "Expected `int`, got `str` - at `$.object.size`", "... - at `$.columns[0].type`"
_AT = r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$"
_STEP = r"\.([^.\[]+)|\[(\d+)\]"
_MISSING = r"^Object missing required field `(?P<name>[^`]+)`$"
_UNKNOWN = r"^Object contains unknown field `(?P<name>[^`]+)`$"


class Problem(msgspec.Struct, frozen=True):
    """One reason a value was refused: where, what (missing, unknown, invalid) and why.
    (A Struct: a dataclass compiles its generated methods at every import.)"""

    loc: Location
    type: str
    msg: str

    @property
    def path(self) -> str:
        """``object.key``, ``columns.2.name``; ``<root>`` for a check across fields."""
        return ".".join(str(part) for part in self.loc) or "<root>"


class ParseError(ValueError):
    """Every problem found parsing one value into ``model``."""

    def __init__(self, model: str, problems: list[Problem]) -> None:
        self.model = model
        self.problems = problems
        count = len(problems)
        lines = [f"{count} validation error{'s' if count != 1 else ''} for {model}"]
        lines += [f"{p.path}\n  {p.msg}" for p in problems]
        super().__init__("\n".join(lines))

    def summary(self) -> str:
        """``object.key: Field required; attempt: Expected `int` >= 1``, on one line."""
        return "; ".join(f"{p.path}: {p.msg}" for p in self.problems)


def parse(cls: type[T], data: Any) -> T:
    """``data`` (a mapping keyed by the fields' wire names) as a ``cls``; ParseError else."""
    try:
        return msgspec.convert(data, cls, strict=False)
    except msgspec.ValidationError as exc:
        problems = _every_problem(cls, data, ()) or [problem(exc, ())]
        raise ParseError(cls.__name__, problems) from exc


def problem(exc: msgspec.ValidationError, loc: Location) -> Problem:
    """msgspec's message as a Problem located below ``loc``."""
    found = re.match(_AT, str(exc), re.S)
    msg, path = (found["msg"], found["path"] or "") if found else (str(exc), "")
    where = (*loc, *(int(index) if index else key for key, index in re.findall(_STEP, path)))
    if missing := re.match(_MISSING, msg):
        return Problem((*where, missing["name"]), "missing", "Field required")
    if unknown := re.match(_UNKNOWN, msg):
        return Problem((*where, unknown["name"]), "unknown", "Unknown field")
    return Problem(where, "invalid", msg)


def _every_problem(cls: Any, data: Any, loc: Location) -> list[Problem]:
    """The problems of each field of a record (only on the error path: msgspec stops at the
    first one). Empty when only the record as a whole is refused (__post_init__)."""
    if not isinstance(data, dict) or not isinstance(cls, type):
        return []
    if not issubclass(cls, msgspec.Struct):
        return []
    problems: list[Problem] = []
    for field in msgspec.structs.fields(cls):
        where = (*loc, field.encode_name)
        if field.encode_name not in data:
            if field.required:
                problems.append(Problem(where, "missing", "Field required"))
            continue
        value = data[field.encode_name]
        try:
            msgspec.convert(value, field.type, strict=False)
        except msgspec.ValidationError as exc:
            nested = _every_problem(_record_of(field.type), value, where)
            problems += nested or [problem(exc, where)]
    if cls.__struct_config__.forbid_unknown_fields:
        known = {field.encode_name for field in msgspec.structs.fields(cls)}
        problems += [Problem((*loc, k), "unknown", "Unknown field") for k in data if k not in known]
    return problems


def _record_of(hint: Any) -> Any:
    """The Struct of a field typed ``Record`` or ``Record | None``, else None."""
    options = getattr(hint, "__args__", (hint,))
    records = [o for o in options if isinstance(o, type) and issubclass(o, msgspec.Struct)]
    return records[0] if len(records) == 1 else None
