"""Frozen dataclasses parsed from JSON-like data, with field rules.

The Lambdas' inputs (``models``), their settings (``config``) and the dataset contracts
(``logic.contracts``) are dataclasses whose fields carry their rules in ``field(metadata=
rules(...))``; ``parse(cls, data)`` checks a mapping against them and builds the instance, or
raises ``ParseError`` listing every problem with its location, in pydantic's words ("Field
required", "Input should be greater than 0", ...).

Why not pydantic (the engine of the powertools parser): importing it and building the models
cost about 90 ms of every cold start, most of what a handler added to bare boto3 + one client
(issue 12's target is +100 ms; ``scripts/bench_cold_start.py`` measures it, and
``tests/unit/test_cold_start.py`` keeps pydantic out of the handlers). These inputs need
little: str, int, bool, enums, nested records, ``X | None`` and ``tuple[X, ...]``; bounds,
lengths, patterns, aliases, defaults, a check before a field's type and one across fields
(``__post_init__`` raising ValueError).

Conversions follow pydantic's lax mode where the inputs need it: an int field takes an int or
a string of digits (environment variables, DefinitionSubstitutions), never a bool; a float
only when it is whole.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from functools import cache
from typing import Any, Literal, TypeVar

T = TypeVar("T")
Extra = Literal["ignore", "forbid"]
Location = tuple[str | int, ...]

_RULES = "ingest_pipeline.parsing"  # the metadata key of a field's rules
_INTEGER = re.compile(r"[+-]?\d+")


@dataclasses.dataclass(frozen=True)
class Rules:
    """What a field accepts beyond its type (None: no limit)."""

    alias: str | None = None
    ge: int | None = None
    gt: int | None = None
    le: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    # Runs on the raw value before the type check; a ValueError is the field's problem.
    before: Callable[[Any], Any] | None = None


def rules(
    *,
    alias: str | None = None,
    ge: int | None = None,
    gt: int | None = None,
    le: int | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    pattern: str | None = None,
    before: Callable[[Any], Any] | None = None,
) -> dict[str, Rules]:
    """A field's rules, for ``dataclasses.field(metadata=rules(...))``."""
    return {
        _RULES: Rules(alias, ge, gt, le, min_length, max_length, pattern, before),
    }


def alias_of(field: dataclasses.Field[Any]) -> str:
    """The name a field is read by: its alias, else its own name."""
    found: Rules | None = field.metadata.get(_RULES)
    return found.alias if found and found.alias else field.name


def is_required(field: dataclasses.Field[Any]) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


@dataclasses.dataclass(frozen=True)
class Problem:
    """One reason a value was refused: where, what (pydantic's error type) and why."""

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
        """``object.key: Field required; attempt: Input should be ...``, on one line."""
        return "; ".join(f"{p.path}: {p.msg}" for p in self.problems)


def parse(cls: type[T], data: Any, *, extra: Extra = "ignore", strip_whitespace: bool = False) -> T:
    """``data`` (a mapping, keys by alias or field name) as a ``cls``; ParseError otherwise.

    ``extra="forbid"`` refuses keys no field reads (here and in nested records);
    ``strip_whitespace`` strips strings before they are checked (values from the environment).
    """
    problems: list[Problem] = []
    result = _Parser(extra, strip_whitespace).record(cls, data, (), problems)
    if problems:
        raise ParseError(cls.__name__, problems)
    return typing.cast(T, result)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


class _Refused(Exception):
    """A value is not what its field accepts (``kind``: pydantic's error type)."""

    def __init__(self, kind: str, msg: str) -> None:
        self.kind, self.msg = kind, msg


class _Nested(Exception):
    """Problems inside a nested record or list (locations relative to it)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems


@dataclasses.dataclass(frozen=True)
class _Parser:
    extra: Extra
    strip: bool

    def record(self, cls: type, data: Any, loc: Location, problems: list[Problem]) -> Any:
        if not isinstance(data, Mapping):
            problems.append(
                Problem(loc, "model_type", f"Input should be an object ({cls.__name__})")
            )
            return None
        hints, found = _hints(cls), len(problems)
        values: dict[str, Any] = {}
        read: set[Any] = set()
        for field in dataclasses.fields(cls):
            name = alias_of(field)
            key = name if name in data else field.name if field.name in data else None
            if key is None:
                if is_required(field):
                    problems.append(Problem((*loc, name), "missing", "Field required"))
                continue
            read.add(key)
            try:
                values[field.name] = self.field(hints[field.name], field, data[key])
            except _Refused as refused:
                problems.append(Problem((*loc, name), refused.kind, refused.msg))
            except _Nested as nested:
                problems.extend(
                    Problem((*loc, name, *p.loc), p.type, p.msg) for p in nested.problems
                )
        if self.extra == "forbid":
            problems.extend(
                Problem((*loc, str(key)), "extra_forbidden", "Extra inputs are not permitted")
                for key in data
                if key not in read
            )
        if len(problems) > found:
            return None
        try:
            return cls(**values)
        except ValueError as exc:  # __post_init__: a check across fields
            problems.append(Problem(loc, "value_error", str(exc)))
            return None

    def field(self, hint: Any, field: dataclasses.Field[Any], raw: Any) -> Any:
        found: Rules = field.metadata.get(_RULES) or Rules()
        if found.before is not None:
            try:
                raw = found.before(raw)
            except ValueError as exc:
                raise _Refused("value_error", f"Value error, {exc}") from None
        value = self.typed(hint, raw)
        if value is not None:
            _check(found, value)
        return value

    def typed(self, hint: Any, raw: Any) -> Any:
        """``raw`` converted to ``hint``; _Refused or _Nested when it is not one."""
        origin = typing.get_origin(hint)
        if origin in (types.UnionType, typing.Union):
            options = [a for a in typing.get_args(hint) if a is not type(None)]
            if len(options) != 1:
                raise TypeError(f"unsupported field type {hint!r}")
            return None if raw is None else self.typed(options[0], raw)
        if origin is tuple:
            return self.items(hint, raw)
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            problems: list[Problem] = []
            value = self.record(hint, raw, (), problems)  # the same policy as the top level
            if problems:
                raise _Nested(problems)
            return value
        if isinstance(raw, str) and self.strip:
            raw = raw.strip()
        if isinstance(hint, type) and issubclass(hint, Enum):
            return _enum(hint, raw)
        scalar = _SCALARS.get(hint)
        if scalar is None:
            raise TypeError(f"unsupported field type {hint!r}")
        return scalar(raw)

    def items(self, hint: Any, raw: Any) -> tuple[Any, ...]:
        item, *rest = typing.get_args(hint)
        if rest != [Ellipsis]:
            raise TypeError(f"unsupported field type {hint!r}; use tuple[X, ...]")
        if not isinstance(raw, list | tuple):
            raise _Refused("tuple_type", "Input should be a valid list")
        items: list[Any] = []
        problems: list[Problem] = []
        for index, element in enumerate(raw):
            try:
                items.append(self.typed(item, element))
            except _Refused as refused:
                problems.append(Problem((index,), refused.kind, refused.msg))
            except _Nested as nested:
                problems.extend(Problem((index, *p.loc), p.type, p.msg) for p in nested.problems)
        if problems:
            raise _Nested(problems)
        return tuple(items)


def _enum(hint: type[Enum], raw: Any) -> Enum:
    try:
        return hint(raw)
    except ValueError:
        choices = [repr(member.value) for member in hint]
        listed = ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]
        raise _Refused("enum", f"Input should be {listed}") from None


def _str(raw: Any) -> str:
    if not isinstance(raw, str):
        raise _Refused("string_type", "Input should be a valid string")
    return raw


def _bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in _TRUE | _FALSE:
        return raw.lower() in _TRUE
    raise _Refused("bool_parsing", "Input should be a valid boolean")


def _int(raw: Any) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, float):
        raise _Refused(
            "int_from_float", "Input should be a valid integer, got a number with a fractional part"
        )
    if isinstance(raw, str) and _INTEGER.fullmatch(raw):
        return int(raw)
    if isinstance(raw, str):
        raise _Refused(
            "int_parsing", "Input should be a valid integer, unable to parse string as an integer"
        )
    raise _Refused("int_type", "Input should be a valid integer")


_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_SCALARS: dict[Any, Callable[[Any], Any]] = {
    str: _str,
    bool: _bool,
    int: _int,
    Any: lambda raw: raw,
}


def _check(found: Rules, value: Any) -> None:
    """The field's bounds, lengths and pattern (after its type)."""
    if isinstance(value, int) and not isinstance(value, bool):
        _bounds(found, value)
    if isinstance(value, str | tuple):
        _lengths(found, value)
    if found.pattern is not None and isinstance(value, str) and not re.search(found.pattern, value):
        raise _Refused("string_pattern_mismatch", f"String should match pattern '{found.pattern}'")


def _bounds(found: Rules, value: int) -> None:
    if found.gt is not None and not value > found.gt:
        raise _Refused("greater_than", f"Input should be greater than {found.gt}")
    if found.ge is not None and not value >= found.ge:
        raise _Refused("greater_than_equal", f"Input should be greater than or equal to {found.ge}")
    if found.le is not None and not value <= found.le:
        raise _Refused("less_than_equal", f"Input should be less than or equal to {found.le}")


def _lengths(found: Rules, value: str | tuple[Any, ...]) -> None:
    what, unit = ("String", "character") if isinstance(value, str) else ("List", "item")
    if found.min_length is not None and len(value) < found.min_length:
        plural = "s" if found.min_length != 1 else ""
        raise _Refused(
            "too_short", f"{what} should have at least {found.min_length} {unit}{plural}"
        )
    if found.max_length is not None and len(value) > found.max_length:
        plural = "s" if found.max_length != 1 else ""
        raise _Refused("too_long", f"{what} should have at most {found.max_length} {unit}{plural}")
