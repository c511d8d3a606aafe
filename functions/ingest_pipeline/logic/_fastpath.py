"""The fast path of ``logic.transform``: a contract's values as JSON text, made by C code.

``row_format`` gives, for a contract, the pieces of its JSON lines around the values (the
keys as ``json.dumps`` writes them) and, per column, two converters from raw CSV values
(not yet stripped) to their JSON texts: ``one`` for a value, ``bulk`` for the column of a
batch of records (``map`` over C functions, one regular expression over the whole column,
Python only where a value needs it). A text is exactly what ``json.dumps(row,
ensure_ascii=False, separators=(",", ":"))`` writes for the value the contract's converter
(``logic.contracts.CONVERTERS``) makes of the stripped value:

* strings: ``json.encoder.encode_basestring``, the very function ``json.dumps`` uses when
  ``ensure_ascii=False``;
* integers, decimals and datetimes in their plain spelling (``-12``, ``12.50``,
  ``2026-11-01T10:00:00+01:00``), which their converter gives back unchanged: the value
  itself, once a regular expression over the column has checked that every value has that
  spelling (and, for datetimes, that each date and offset is one the converter gave back
  unchanged before);
* any other value: by its converter. Booleans, dates and these other values go through a
  memo (a dict) of the texts of the values seen so far, kept for a bounded number of short
  values; datetimes are built from the converter's text of their date and offset.

What the plain spellings rest on is checked when the converters are made (``row_format``
probes the contract's converters) or learnt from them (datetimes), so a converter that
changes makes the fast path use it, not diverge from it. A converter gives None where it
cannot tell the exact text (an empty required value, a bad value, a type whose JSON form it
does not know): ``transform`` then converts that record with the original per-value code,
which reports the problems.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, repeat
from json.encoder import encode_basestring
from operator import itemgetter
from typing import cast

from msgspec import Struct

from ingest_pipeline.logic.contracts import CONVERTERS, Column, ColumnType, Contract

MEMO_ENTRIES = 4096  # texts of values kept per column
MEMO_KEY_CHARS = 64  # longer values are converted each time
KNOWN_DATES = 8192  # dates (and offsets) of datetimes kept per column: 22 years

One = Callable[[str], str | None]
Bulk = Callable[[Sequence[str]], Sequence[str | None]]
Convert = Callable[[str], object]


class RowFormat(Struct, frozen=True):  # a Struct: a dataclass compiles at every import
    columns: tuple[Column, ...]
    pieces: tuple[str, ...]  # '{"key":', ',"key":', ..., '}\n': a row is them and its texts
    one: tuple[One, ...]  # per column: a raw value -> its JSON text, or None
    bulk: tuple[Bulk, ...]  # per column: the raw values of a batch -> their texts / None

    @property
    def template(self) -> str:
        """A row's ``%`` template: '{"key":%s,...}\\n'."""
        return "%s".join(piece.replace("%", "%%") for piece in self.pieces)

    def rows(self, texts: Sequence[Sequence[str | None]]) -> str:
        """The JSON lines of a batch, from the texts of its columns (none of them None):
        the pieces and the texts interleaved, and joined at once (faster than a ``%``
        format per row)."""
        interleaved: list[Iterable[str | None]] = []
        for piece, column in zip(self.pieces, texts, strict=False):
            interleaved += (repeat(piece), column)
        interleaved.append(repeat(self.pieces[-1]))
        return "".join(cast(Iterable[str], chain.from_iterable(zip(*interleaved, strict=False))))


def row_format(contract: Contract) -> RowFormat:
    """The fast path for ``contract``'s rows (its memos start empty: make one per file)."""
    keys = [json.dumps(c.name, ensure_ascii=False) for c in contract.columns]
    pieces = tuple([f"{{{keys[0]}:"] + [f",{key}:" for key in keys[1:]] + ["}\n"])
    converters = [_converters(column) for column in contract.columns]
    return RowFormat(
        contract.columns,
        pieces,
        tuple(one for one, _ in converters),
        tuple(bulk for _, bulk in converters),
    )


def json_text(value: object) -> str | None:
    """``value`` as ``json.dumps(value, ensure_ascii=False)`` writes it, for the types the
    contract converters return; None for any other."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return int.__repr__(value)
    if type(value) is str:
        return encode_basestring(value)
    return None


def _converters(column: Column) -> tuple[One, Bulk]:
    optional = not column.required
    if column.type == ColumnType.STRING:
        return _string_converters(optional=optional)
    convert = CONVERTERS[column.type]
    if column.type == ColumnType.DATETIME:
        return _datetime_converters(convert, optional=optional)
    memo = _Memo(_text(convert, optional=optional))
    lookup = memo.__getitem__

    def by_memo(values: Sequence[str]) -> list[str | None]:
        return list(map(lookup, values))

    if column.type == ColumnType.INTEGER and _gives_back(convert, _INTEGER_PROBES, quoted=False):
        return lookup, _plain_bulk(_PLAIN_INTEGERS, by_memo, quoted=False)
    if column.type == ColumnType.DECIMAL and _gives_back(convert, _DECIMAL_PROBES, quoted=True):
        return lookup, _plain_bulk(_PLAIN_DECIMALS, by_memo, quoted=True)
    return lookup, by_memo


def _string_converters(*, optional: bool) -> tuple[One, Bulk]:
    strip = str.strip
    nulls: dict[str | None, str | None] = {encode_basestring(""): "null" if optional else None}
    empty = cast(Callable[[str | None, str | None], str | None], nulls.get)  # get(text, text)

    def one(raw: str) -> str | None:
        value = raw.strip()
        if value:
            return encode_basestring(value)
        return "null" if optional else None

    def bulk(raw: Sequence[str]) -> list[str | None]:
        values = list(map(strip, raw))
        texts: list[str | None] = list(map(encode_basestring, values))
        if "" in values:  # '""' is the text of "" only
            texts = list(map(empty, texts, texts))
        return texts

    return one, bulk


def _text(convert: Convert, *, optional: bool) -> One:
    """A typed raw value's JSON text, by the contract's converter."""

    def text(raw: str) -> str | None:
        value = raw.strip()
        if not value:
            return "null" if optional else None
        try:
            return json_text(convert(value))
        except Exception:  # a bad value (ValueError), or worse: the precise code decides
            return None

    return text


class _Memo(dict[str, str | None]):
    """JSON texts of a column's raw values; a lookup of a new value converts it (C speed
    when the value was seen: ``dict.__getitem__`` calls ``__missing__`` only on a miss)."""

    def __init__(self, text: One) -> None:
        super().__init__()
        self._text = text

    def __missing__(self, raw: str) -> str | None:
        text = self._text(raw)
        if text is not None and len(self) < MEMO_ENTRIES and len(raw) <= MEMO_KEY_CHARS:
            self[raw] = text
        return text


# --- plain spellings ---------------------------------------------------------------------
# Each line of the joined column must be a plain spelling, which the converter gives back
# unchanged (the probes below check it). At most 18 digits: int() converts any of them.
_PLAIN_INTEGERS = re.compile(r"(?:(?:0|-?[1-9][0-9]{0,17})\n)*", re.ASCII)
_INTEGER_PROBES = ("0", "7", "-12", "100", "123456789012345678", "-999999999999999999")
# No exponent; an integer part without leading zeros; below 1, at most 6 decimals (1E-7
# is how 0.0000001 comes back).
_PLAIN_DECIMALS = re.compile(
    r"(?:(?:-?[1-9][0-9]*(?:\.[0-9]+)?|-?0(?:\.[0-9]{1,6})?)\n)*", re.ASCII
)
_DECIMAL_PROBES = ("0", "-0", "12.50", "-7.25", "100", "0.000001", "-0.000", "0.100000")


def _gives_back(convert: Convert, probes: tuple[str, ...], *, quoted: bool) -> bool:
    """Does the contract's converter give these plain spellings back unchanged?"""
    try:
        texts = [json_text(convert(probe)) for probe in probes]
    except Exception:  # the converter changed
        return False
    return texts == [encode_basestring(p) if quoted else p for p in probes]


def _all_match(plain: re.Pattern[str], raw: Sequence[str]) -> bool:
    """Is every value of ``raw`` a line ``plain`` matches (and none more than one line)?"""
    lines = "\n".join(raw)
    return lines.count("\n") == len(raw) - 1 and plain.fullmatch(lines + "\n") is not None


def _plain_bulk(plain: re.Pattern[str], slow: Bulk, *, quoted: bool) -> Bulk:
    def bulk(raw: Sequence[str]) -> Sequence[str | None]:
        if not _all_match(plain, raw):
            return slow(raw)
        return list(map(encode_basestring, raw)) if quoted else raw

    return bulk


# --- datetimes ---------------------------------------------------------------------------
_HHMMSS = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
_DATETIME = re.compile(
    rf"([0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}})T{_HHMMSS}(Z|[+-][0-9]{{2}}:[0-9]{{2}})?", re.ASCII
)
_PLAIN_DATETIMES = re.compile(
    rf"(?:[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}T{_HHMMSS}(?:Z|[+-][0-9]{{2}}:[0-9]{{2}})?\n)*",
    re.ASCII,
)
_NOON = "T12:00:00"
_EPOCH = "2000-01-01T00:00:00"
_day = itemgetter(slice(0, 10))  # YYYY-MM-DD
_local = itemgetter(slice(0, 19))  # YYYY-MM-DDTHH:MM:SS
_offset = itemgetter(slice(19, None))  # "", Z, +HH:MM
_quoted_pair = '"%s%s"'.__mod__


def _datetime_converters(convert: Convert, *, optional: bool) -> tuple[One, Bulk]:
    datetimes = _DateTimes(convert, optional=optional)
    return datetimes.one, datetimes.bulk


class _DateTimes:
    """``YYYY-MM-DDTHH:MM:SS`` with no offset, ``Z`` or ``+HH:MM`` / ``-HH:MM`` (ASCII
    digits, a time of day in range) is written from the converter's text of its date (at
    noon) and of its offset (on 2000-01-01), once that date and that offset were seen: the
    converter makes the other values, and teaches the date and the offset of the first of
    each. Learning checks the value's own text: if it is not made of the date's and the
    offset's (a converter that normalised to UTC would not be), the column takes the
    converter for every value."""

    def __init__(self, convert: Convert, *, optional: bool) -> None:
        self._convert = convert
        self._generic = _text(convert, optional=optional)
        self._dates: dict[str, str] = {}  # date -> the converter's text of it
        self._zones: dict[str, str] = {}  # offset -> the converter's text of it
        self._same_dates: set[str] = set()  # dates the converter gives back unchanged
        self._same_zones: set[str] = set()  # offsets the converter gives back unchanged
        self._learning = True

    def one(self, raw: str) -> str | None:
        value = raw.strip()
        match = _DATETIME.fullmatch(value)
        if match is not None:
            date = self._dates.get(match.group(1))
            zone = self._zones.get(match.group(2) or "")
            if date is not None and zone is not None:
                return f'"{date}{value[10:19]}{zone}"'
        result = self._generic(value)
        if (
            match is not None
            and result is not None
            and self._learning
            and not self._learn(match.group(1), match.group(2) or "", value, result)
        ):
            self._learning = False  # the converter does not work part by part
            self._dates.clear()
            self._zones.clear()
            self._same_dates.clear()
            self._same_zones.clear()
        return result

    def bulk(self, raw: Sequence[str]) -> Sequence[str | None]:
        if _all_match(_PLAIN_DATETIMES, raw):
            dates, zones = self._dates, self._zones
            days, offsets = set(map(_day, raw)), set(map(_offset, raw))
            if self._learning and not (days.issubset(dates) and offsets.issubset(zones)):
                self._learn_from(raw, days.difference(dates), offsets.difference(zones))
            if days <= self._same_dates:
                if offsets <= self._same_zones:
                    return list(map(encode_basestring, raw))
                if offsets.issubset(zones):
                    texts = map(zones.get, map(_offset, raw))
                    return list(map(_quoted_pair, zip(map(_local, raw), texts, strict=True)))
        return list(map(self.one, raw))

    def _learn_from(self, raw: Sequence[str], days: set[str], offsets: set[str]) -> None:
        """Learn each new date and offset from the first value that has it."""
        for value in raw:
            day, offset = value[:10], value[19:]
            if day in days or offset in offsets:
                self.one(value)
                days.discard(day)
                offsets.discard(offset)
                if not (days or offsets):
                    return

    def _learn(self, day: str, zone: str, value: str, result: str) -> bool:
        dates, zones = self._dates, self._zones
        if (day in dates or len(dates) >= KNOWN_DATES) and (
            zone in zones or len(zones) >= KNOWN_DATES
        ):
            return True
        try:
            day_text = self._convert(day + _NOON)
            zone_text = self._convert(_EPOCH + zone)
        except Exception:  # whatever it is, the converter is not that simple
            return False
        if not (isinstance(day_text, str) and isinstance(zone_text, str)):
            return False
        day_text, zone_text = day_text[:10], zone_text[19:]
        if result != f'"{day_text}{value[10:19]}{zone_text}"':
            return False
        if len(dates) < KNOWN_DATES:
            dates[day] = day_text
            if day_text == day:
                self._same_dates.add(day)
        if len(zones) < KNOWN_DATES:
            zones[zone] = zone_text
            if zone_text == zone:
                self._same_zones.add(zone)
        return True
