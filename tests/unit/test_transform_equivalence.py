"""The optimised transform against the original one (issue 12).

``reference_convert`` below is ``logic/transform.py`` as it was before it was optimised
(kept here verbatim, as the reference only). Both run over generated files (every column
type, required and optional, boundary values, bad values, quoting, CRLF, BOM, blank lines)
and edge cases, with the transform's read block and batch sizes at their defaults and made
tiny (so every block and batch boundary is crossed); they must yield the same chunks, byte
for byte, and raise the same error: type, code, line, message and details.
for byte, and raise the same error: type, code, line, message and details. The edge cases
are in test_transform_equivalence_edge_cases.py (which imports the reference and the
comparison from here, as test_transform_fastpath.py does).
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import pytest

from ingest_pipeline.errors import (
    ColumnCountError,
    DataError,
    EmptyFileError,
    EncodingError,
    HeaderError,
    LineTooLongError,
    MalformedCsvError,
    ValueTypeError,
)
from ingest_pipeline.logic import transform
from ingest_pipeline.logic.contracts import (
    CONVERTERS,
    Column,
    ColumnType,
    Contract,
    known_datasets,
    load_contract,
)
from ingest_pipeline.logic.transform import Summary, convert

pytestmark = pytest.mark.unit

# --- the reference: logic/transform.py before issue 12 -----------------------------------

UTF8_BOM = b"\xef\xbb\xbf"
DEFAULT_MAX_LINE_BYTES = 1024 * 1024
MAX_REPORTED_ERRORS = 10


class _Lines:
    """Physical lines of a binary stream, decoded as UTF-8, each at most ``limit`` bytes."""

    def __init__(self, source: IO[bytes], summary: Summary, limit: int) -> None:
        self._source = source
        self._summary = summary
        self._limit = limit
        self.number = 0

    def __iter__(self) -> Iterator[str]:
        while True:
            raw = self._source.readline(self._limit + 1)
            if not raw:
                return
            self.number += 1
            self._summary.bytes_in += len(raw)
            if len(raw) > self._limit and not raw.endswith(b"\n"):
                raise LineTooLongError(f"line is longer than {self._limit} bytes", line=self.number)
            if self.number == 1:
                raw = raw.removeprefix(UTF8_BOM)
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise EncodingError(
                    f"not valid UTF-8 at byte {exc.start} of the line "
                    f"({raw[exc.start : exc.start + 4]!r})",
                    line=self.number,
                ) from exc


def reference_convert(
    source: IO[bytes],
    contract: Contract,
    summary: Summary,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[bytes]:
    lines = _Lines(source, summary, max_line_bytes)
    csv.field_size_limit(max_line_bytes)
    reader = csv.reader(lines, strict=True)
    problems: list[dict[str, Any]] = []
    try:
        header = _read_header(reader, lines, contract)
        converters = [(c, CONVERTERS[c.type]) for c in contract.columns]
        for record in reader:
            if not record or record == [""]:
                continue  # blank line
            line = lines.number
            if len(record) != len(header):
                raise ColumnCountError(
                    f"expected {len(header)} columns, found {len(record)}",
                    line=line,
                    expected=len(header),
                    found=len(record),
                )
            row: dict[str, Any] = {}
            for (column, to_value), raw in zip(converters, record, strict=True):
                value = raw.strip()
                if value == "":
                    if column.required:
                        problems.append(
                            {"line": line, "column": column.name, "error": "required value missing"}
                        )
                    row[column.name] = None
                    continue
                try:
                    row[column.name] = to_value(value)
                except ValueError as exc:
                    problems.append(
                        {
                            "line": line,
                            "column": column.name,
                            "error": f"{exc}: {value[:40]!r}",
                        }
                    )
            if len(problems) >= MAX_REPORTED_ERRORS:
                break
            if problems:
                continue
            out = (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
            summary.rows += 1
            summary.bytes_out += len(out)
            summary._digest.update(out)
            yield out
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise LineTooLongError(
                f"a field is longer than {max_line_bytes} bytes", line=lines.number
            ) from exc
        raise MalformedCsvError(str(exc), line=lines.number) from exc
    if problems:
        first = problems[0]
        raise ValueTypeError(
            f"{len(problems)}{'+' if len(problems) >= MAX_REPORTED_ERRORS else ''} bad "
            f"value(s); first: column {first['column']!r}: {first['error']}",
            line=first["line"],
            errors=problems,
        )
    summary.sha256 = summary._digest.hexdigest()


def _read_header(reader: Any, lines: _Lines, contract: Contract) -> list[str]:
    for record in reader:
        if not record or record == [""]:
            continue
        header = [name.strip() for name in record]
        if header != contract.header:
            missing = [c for c in contract.header if c not in header]
            unexpected = [c for c in header if c not in contract.header]
            raise HeaderError(
                f"header does not match the {contract.dataset!r} contract: expected "
                f"{contract.header}, found {header}",
                line=lines.number,
                missing=missing,
                unexpected=unexpected,
            )
        return header
    if lines.number == 0:
        raise EmptyFileError("the file is empty (0 bytes)")
    raise EmptyFileError("the file has no header line (only blank lines)", line=lines.number)


# --- comparing ---------------------------------------------------------------------------

Converter = Callable[..., Iterator[bytes]]


@dataclass(frozen=True)
class Outcome:
    chunks: tuple[bytes, ...]
    error: tuple[Any, ...] | None  # type, code, line, message, details, str()
    summary: tuple[Any, ...] | None  # rows, bytesIn, bytesOut, sha256 (when it succeeded)


def outcome(run: Converter, data: bytes, contract: Contract, max_line_bytes: int) -> Outcome:
    summary = Summary(dataset=contract.dataset)
    chunks: list[bytes] = []
    try:
        for chunk in run(io.BytesIO(data), contract, summary, max_line_bytes=max_line_bytes):
            assert type(chunk) is bytes
            chunks.append(chunk)
    except DataError as exc:
        error = (type(exc), exc.code, exc.line, exc.message, exc.details, str(exc))
        return Outcome(tuple(chunks), error, None)
    except Exception as exc:  # a bug (a converter that raises something else): the same one
        return Outcome(tuple(chunks), (type(exc), str(exc)), None)
    done = (summary.rows, summary.bytes_in, summary.bytes_out, summary.sha256)
    return Outcome(tuple(chunks), None, done)


# The transform's own sizes, and tiny ones: every block and batch boundary is crossed.
SIZES = [(None, None), (1, 1), (7, 3), (64, 2), (1000, 5)]


def assert_same(
    data: bytes,
    contract: Contract,
    monkeypatch: pytest.MonkeyPatch,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    sizes: list[tuple[int | None, int | None]] = SIZES,
) -> Outcome:
    expected = outcome(reference_convert, data, contract, max_line_bytes)
    for block, batch in sizes:
        with monkeypatch.context() as patch:
            if block is not None:
                patch.setattr(transform, "READ_BLOCK_BYTES", block)
            if batch is not None:
                patch.setattr(transform, "BATCH_RECORDS", batch)
            actual = outcome(convert, data, contract, max_line_bytes)
        assert actual == expected, f"read block {block}, batch {batch}"
    return expected


# --- generated files ---------------------------------------------------------------------


def seeded(seed: object) -> random.Random:
    return random.Random(str(seed))  # noqa: S311 - reproducible test data


VALID: dict[ColumnType, list[str]] = {
    ColumnType.STRING: [
        "a",
        "o-1",
        "  padded  ",
        "with, comma",
        'with "quotes"',
        "two\nlines",
        "crlf\r\ninside",
        "tab\tinside",
        "é ü ß 東京 😀",
        "back\\slash",
        "%s %d %%",
        '"',
        "null",
        "\u2028line separator",
        "other breaks: \x0b \x0c \x1c \x1d \x1e \x85 \u2029 end",
        "form\x0cfeed",
        "nul\x00inside",
        "\x1f unit separator",
        "\xa0nbsp\xa0",
    ],
    ColumnType.INTEGER: [
        "0",
        "7",
        "-12",
        "100",
        "+5",
        "-0",
        "+0",
        "007",
        " 42 ",
        "\u0663\u0661",  # Arabic-Indic digits
        "123456789012345678",
        "-999999999999999999",
        "1234567890123456789012345",
        "3\n",  # a quoted field's newline, stripped
    ],
    ColumnType.DECIMAL: [
        "0",
        "-0",
        "12.50",
        "-7.25",
        "100",
        "0.1",
        "0.000001",
        "0.0000001",
        "-0.000",
        ".5",
        "5.",
        "+1.5",
        "1e3",
        "1E-7",
        "1_000.5",
        "00012.5",
        " 3.14 ",
        "\u0661\u0662.\u0665",
        "123456789012345678901234567890.123456789",
    ],
    ColumnType.BOOLEAN: ["true", "True", "TRUE", "t", "yes", "Y", "1", "0", "no", "f", "false"],
    ColumnType.DATE: [
        "2026-11-01",
        "2024-02-29",
        "0001-01-01",
        "9999-12-31",
        "20261101",
        "2026-W44-1",
        " 2026-11-02 ",
    ],
    ColumnType.DATETIME: [
        "2026-11-01T10:00:00",
        "2026-11-01T10:00:00Z",
        "2026-11-01T10:00:00+00:00",
        "2026-11-01T10:00:00-00:00",
        "2026-11-01T10:00:00+05:30",
        "2026-11-01T10:00:00-23:59",
        "2026-11-01T10:00:00+05:75",
        "2026-11-01T00:00:00",
        "2026-11-01T23:59:59",
        "2024-02-29T12:30:45+01:00",
        "2026-11-01 10:00:00",
        "2026-11-01T10:00",
        "2026-11-01T10:00:00.123456",
        "2026-11-01T10:00:00+0200",
        "2026-11-01",
        " 2026-11-01T10:00:00Z ",
        "2026-11-01T10:00:00Z\n",
    ],
}
INVALID: dict[ColumnType, list[str]] = {
    ColumnType.STRING: [],
    ColumnType.INTEGER: [
        "1_000",
        "12.0",
        "1e3",
        "--5",
        "-",
        "abc",
        "0x10",
        "\u00b2",
        "9" * 4301,
        "1\n2",
    ],
    ColumnType.DECIMAL: ["NaN", "-Infinity", "inf", "sNaN", "12,5", "1.2.3", "abc", "1e", "1.5\n2"],
    ColumnType.BOOLEAN: ["maybe", "2", "yess", "on", "true\nfalse"],
    ColumnType.DATE: [
        "2023-02-29",
        "2026-13-01",
        "2026-00-10",
        "0000-01-01",
        "2026-1-1",
        "x",
        "2026-11-01\n2026-11-01",
    ],
    ColumnType.DATETIME: [
        "2026-11-01T24:00:00",
        "2026-11-01T10:60:00",
        "2026-11-01T10:00:60",
        "2026-11-01T10:00:00+24:00",
        "2023-02-29T00:00:00",
        "2026-11-01T10:00:00z",
        "2026-11-01T1:00:00",
        "tomorrow",
        "2026-11-01T10:00:00\n2026-11-01T10:00:00",
    ],
}

EVERY_TYPE = Contract(
    dataset="every",
    columns=tuple(
        Column(
            name=f"{kind.value}_{'required' if required else 'optional'}",
            type=kind,
            required=required,
        )
        for kind in ColumnType
        for required in (True, False)
    ),
)
ODD_NAMES = Contract(
    dataset="odd",
    columns=(
        Column(name="per%cent", type=ColumnType.INTEGER),
        Column(name='quo"te', type=ColumnType.STRING, required=False),
        Column(name="ünï\\códe", type=ColumnType.DECIMAL),
        Column(name="%s", type=ColumnType.BOOLEAN, required=False),
    ),
)
ONE_COLUMN = Contract(dataset="one", columns=(Column(name="n", type=ColumnType.INTEGER),))
ONE_OPTIONAL = Contract(
    dataset="one_optional", columns=(Column(name="s", type=ColumnType.STRING, required=False),)
)
CONTRACTS = [load_contract(d) for d in known_datasets()] + [
    EVERY_TYPE,
    ODD_NAMES,
    ONE_COLUMN,
    ONE_OPTIONAL,
]


def plain_value(rng: random.Random, kind: ColumnType) -> str:
    """A common, valid value, as most files have (the fast path's plain spellings)."""
    if kind == ColumnType.INTEGER:
        return str(rng.randrange(-1000, 100_000))
    if kind == ColumnType.DECIMAL:
        return f"{rng.randrange(-10_000, 1_000_000) / 100:.2f}"
    if kind == ColumnType.BOOLEAN:
        return rng.choice(["true", "false"])
    if kind == ColumnType.DATE:
        return f"20{rng.randrange(10, 30)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
    if kind == ColumnType.DATETIME:
        return (
            f"20{rng.randrange(10, 30)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
            f"T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
            + rng.choice(["", "Z", "+00:00", "+02:00", "-05:00"])
        )
    return rng.choice(["c-", "o-", ""]) + str(rng.randrange(10**6))


def pick(rng: random.Random, column: Column, bad: float, odd: float) -> str:
    roll = rng.random()
    if roll < bad:
        choices = INVALID[column.type] + ["", "   "]
        return rng.choice(choices)
    if roll < bad + odd:
        return rng.choice(VALID[column.type] + ([] if column.required else ["", " "]))
    if not column.required and rng.random() < 0.1:
        return ""
    return plain_value(rng, column.type)


def generate(rng: random.Random, contract: Contract, rows: int, *, bad: float, odd: float) -> bytes:
    out = io.StringIO()
    quoting = rng.choice([csv.QUOTE_MINIMAL, csv.QUOTE_MINIMAL, csv.QUOTE_ALL])
    newline = rng.choice(["\n", "\n", "\r\n"])
    writer = csv.writer(out, quoting=quoting, lineterminator=newline)
    writer.writerow(contract.header)
    for _ in range(rows):
        if rng.random() < 0.02:
            out.write(newline)  # a blank line
        writer.writerow([pick(rng, column, bad, odd) for column in contract.columns])
    text = out.getvalue()
    if rng.random() < 0.3:
        text = text.removesuffix(newline)  # no newline at the end
    data = text.encode("utf-8")
    return UTF8_BOM + data if rng.random() < 0.2 else data


@pytest.mark.parametrize("contract", CONTRACTS, ids=lambda c: c.dataset)
@pytest.mark.parametrize("seed", range(6))
def test_valid_files_give_the_same_bytes(
    contract: Contract, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = seeded(f"valid:{contract.dataset}:{seed}")
    data = generate(rng, contract, rng.randrange(1, 700), bad=0.0, odd=rng.choice([0, 0.05, 0.3]))
    expected = assert_same(data, contract, monkeypatch, sizes=SIZES if seed < 2 else SIZES[:2])
    assert expected.error is None, expected.error  # the file is valid: output was compared
    assert expected.summary is not None and expected.summary[0] > 0


@pytest.mark.parametrize("contract", CONTRACTS, ids=lambda c: c.dataset)
@pytest.mark.parametrize("seed", range(12))
def test_files_with_bad_values_give_the_same_errors(
    contract: Contract, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = seeded(f"bad:{contract.dataset}:{seed}")
    bad = rng.choice([0.0005, 0.002, 0.01, 0.05, 0.3])
    data = generate(rng, contract, rng.randrange(1, 600), bad=bad, odd=0.2)
    assert_same(data, contract, monkeypatch, sizes=SIZES if seed < 3 else SIZES[:2])


@pytest.mark.parametrize("seed", range(40))
def test_damaged_files_give_the_same_errors(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Structural damage anywhere: bytes that are not UTF-8, stray quotes, cut lines, lines
    and fields too long, a missing or extra column, a blank or bad header."""
    rng = seeded(f"damaged:{seed}")
    contract = rng.choice(CONTRACTS)
    data = bytearray(generate(rng, contract, rng.randrange(1, 300), bad=0.002, odd=0.1))
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(len(data) + 1)
        damage = rng.choice(
            [b"\xff", b"\xc3", b"\xe2\x82", b'"', b'x"y', b",", b"\n", b"\r", b"\n\n", b"\x00"]
        )
        data[at:at] = damage
    limit = rng.choice([DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_LINE_BYTES, 40, 80, 200])
    assert_same(bytes(data), contract, monkeypatch, max_line_bytes=limit)
