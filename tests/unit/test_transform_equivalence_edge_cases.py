"""The optimised transform against the original one (issue 12): edge cases (empty files, BOMs,
blank lines, lines at the length limit, every column type's boundary values, the shipped
example files), compared with ``reference_convert`` as test_transform_equivalence.py does.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from ingest_pipeline.errors import DataError, ValueTypeError
from ingest_pipeline.logic.contracts import known_datasets, load_contract
from tests.unit.test_transform_equivalence import (
    DEFAULT_MAX_LINE_BYTES,
    EVERY_TYPE,
    INVALID,
    ONE_COLUMN,
    SIZES,
    UTF8_BOM,
    VALID,
    assert_same,
    plain_value,
    seeded,
)

pytestmark = pytest.mark.unit


ORDERS = load_contract("orders")
HEADER = b"order_id,customer_id,amount,currency,quantity,ordered_at,gift\n"
ROW = b"o-1,c-1,12.50,EUR,2,2026-11-01T10:00:00+00:00,true\n"
BAD_ROW = b"o-1,,x,EUR,2.5,2026-11-01T25:00:00,maybe\n"  # 5 bad values

LONG_ROW = b"o-1,c-" + b"x" * 100 + b",12.50,EUR,2,2026-11-01T10:00:00+00:00,true"  # no \n
AT = len(LONG_ROW)  # a limit this row is exactly as long as

EDGE_CASES: dict[str, tuple[bytes, int]] = {
    "empty": (b"", DEFAULT_MAX_LINE_BYTES),
    "blank lines only": (b"\n\r\n\n", DEFAULT_MAX_LINE_BYTES),
    "bom only": (UTF8_BOM, DEFAULT_MAX_LINE_BYTES),
    "bom and newline": (UTF8_BOM + b"\n", DEFAULT_MAX_LINE_BYTES),
    "header only": (HEADER, DEFAULT_MAX_LINE_BYTES),
    "header only, no newline": (HEADER.rstrip(), DEFAULT_MAX_LINE_BYTES),
    "header after blank lines and bom": (UTF8_BOM + b"\n\n" + HEADER + ROW, DEFAULT_MAX_LINE_BYTES),
    "padded header": (
        b" order_id , customer_id,amount,currency,quantity,ordered_at,gift \n" + ROW,
        DEFAULT_MAX_LINE_BYTES,
    ),
    "bad header": (b"order_id,customer,amount\n" + ROW, DEFAULT_MAX_LINE_BYTES),
    "header not utf-8": (b"order_id\xff,customer_id\n", DEFAULT_MAX_LINE_BYTES),
    "bom then bad byte": (UTF8_BOM + b"\xffheader\n", DEFAULT_MAX_LINE_BYTES),
    "a bom at the start of a later line": (
        HEADER + ROW + "\ufeffo-2,c-2,1,EUR,1,2026-11-01T00:00:00,no\n".encode() + ROW,
        DEFAULT_MAX_LINE_BYTES,
    ),
    "crlf": (
        HEADER.replace(b"\n", b"\r\n") + ROW.replace(b"\n", b"\r\n") * 3,
        DEFAULT_MAX_LINE_BYTES,
    ),
    "no final newline": (HEADER + ROW + ROW.rstrip(), DEFAULT_MAX_LINE_BYTES),
    "quoted newline": (
        HEADER + b'o-1,"c\n-1\r\n",1,EUR,1,2026-11-01T00:00:00,no\n' + ROW,
        DEFAULT_MAX_LINE_BYTES,
    ),
    "quoted newlines then a bad value": (
        HEADER + b'o-1,"c\n\n-1",1,EUR,1,2026-11-01T00:00:00,no\n' + ROW + BAD_ROW,
        DEFAULT_MAX_LINE_BYTES,
    ),
    "bad values in the first line": (HEADER + BAD_ROW + ROW, DEFAULT_MAX_LINE_BYTES),
    "bad values in the last line": (HEADER + ROW * 5 + BAD_ROW.rstrip(), DEFAULT_MAX_LINE_BYTES),
    "more than ten bad values": (HEADER + ROW + BAD_ROW * 3 + ROW, DEFAULT_MAX_LINE_BYTES),
    "exactly ten bad values": (HEADER + BAD_ROW * 2 + ROW, DEFAULT_MAX_LINE_BYTES),
    "bad values then too many columns": (HEADER + BAD_ROW + b"a,b\n", DEFAULT_MAX_LINE_BYTES),
    "bad values then bad utf-8": (HEADER + BAD_ROW + b"\xff\n", DEFAULT_MAX_LINE_BYTES),
    "ten bad values then bad utf-8": (HEADER + BAD_ROW * 2 + b"\xff\n", DEFAULT_MAX_LINE_BYTES),
    "bad utf-8 in a quoted field's second line": (
        HEADER + ROW + b'o-1,"c\n\xe9",1,EUR,1,2026-11-01T00:00:00,no\n',
        DEFAULT_MAX_LINE_BYTES,
    ),
    "truncated utf-8 at the end": (HEADER + ROW + b"o-2,\xc3", DEFAULT_MAX_LINE_BYTES),
    "utf-16": ((HEADER + ROW).decode().encode("utf-16"), DEFAULT_MAX_LINE_BYTES),
    "unterminated quote": (
        HEADER + ROW + b'o-1,"c-1,1,EUR,1,2026-11-01T00:00:00,\n',
        DEFAULT_MAX_LINE_BYTES,
    ),
    "stray quote": (HEADER + b'o-1,c"1,1,EUR,1,2026-11-01T00:00:00,"x"y\n', DEFAULT_MAX_LINE_BYTES),
    "other line breaks inside fields": (
        HEADER + 'o-1,"c\x0c1\u2028",1,EUR,1,2026-11-01T00:00:00,no\n'.encode() + ROW,
        DEFAULT_MAX_LINE_BYTES,
    ),
    "a lone carriage return in quotes": (
        HEADER + b'o-1,"c\r1",1,EUR,1,2026-11-01T00:00:00,no\r\n' + ROW,
        DEFAULT_MAX_LINE_BYTES,
    ),
    "other line breaks outside quotes": (
        HEADER + "o-1,c\x0c1,1,EUR,1,2026-11-01T00:00:00,\x85no\n".encode() + ROW,
        DEFAULT_MAX_LINE_BYTES,
    ),
    "carriage return inside a field": (
        HEADER + b"o-1,c\r1,1,EUR,1,2026-11-01T00:00:00,\n",
        DEFAULT_MAX_LINE_BYTES,
    ),
    "too few columns": (HEADER + ROW + b"o-2,c-2,3,USD\n", DEFAULT_MAX_LINE_BYTES),
    "a line under the limit": (
        HEADER + b"o-1," + b"c" * 150 + b",1,EUR,1,2026-11-01T00:00:00,\n",
        200,
    ),
    "a line over the limit": (
        HEADER + b"o-1," + b"c" * 200 + b",1,EUR,1,2026-11-01T00:00:00,\n",
        200,
    ),
    "lines exactly at the limit": (HEADER + (LONG_ROW + b"\n") * 3 + LONG_ROW, AT),
    "crlf lines at the limit": (HEADER + (LONG_ROW[:-1] + b"\r\n") * 3, AT),
    "a line a byte over the limit": (
        HEADER + (LONG_ROW + b"\n") * 2 + b"o" + LONG_ROW + b"\n" + LONG_ROW + b"\n",
        AT,
    ),
    "a last line a byte over the limit": (HEADER + LONG_ROW + b"\n" + LONG_ROW + b"e", AT),
    "a crlf line a byte over the limit": (HEADER + LONG_ROW + b"\r\n", AT),
    "a first line with bom at the limit": (UTF8_BOM + HEADER, len(HEADER) + 2),
    "a first line with bom a byte over": (UTF8_BOM + HEADER, len(HEADER) + 1),
    "a long first line with bom": (UTF8_BOM + HEADER, len(HEADER) - 1),
    "a long line without newline": (HEADER + ROW + b"x" * 300, 200),
    "a long line after bad values": (HEADER + BAD_ROW + b"x" * 300 + b"\n", 200),
    "a field longer than the limit": (HEADER + b'o-1,"' + b"c\n" * 150 + b'",1,EUR,1,x,\n', 200),
}


@pytest.mark.parametrize("case", EDGE_CASES, ids=str)
def test_edge_cases_give_the_same_result(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data, limit = EDGE_CASES[case]
    assert_same(data, ORDERS, monkeypatch, max_line_bytes=limit)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"n\n1\n\n2\n \n", ValueTypeError),
        (b"n\n1\n\n2\n\r\n3", None),
        (b"n\n1\nx\n\n+2\n", ValueTypeError),
    ],
)
def test_one_column_contract_blank_lines(
    data: bytes, expected: type[DataError] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = assert_same(data, ONE_COLUMN, monkeypatch)
    assert (result.error[0] if result.error else None) is expected


def test_every_column_type_boundary_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each value of the pools, alone in its column (the others plain), in one file."""
    rng = seeded(3)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(EVERY_TYPE.header)
    for column in EVERY_TYPE.columns:
        for value in VALID[column.type]:
            writer.writerow(
                [value if c is column else plain_value(rng, c.type) for c in EVERY_TYPE.columns]
            )
    result = assert_same(out.getvalue().encode(), EVERY_TYPE, monkeypatch)
    assert result.error is None, result.error
    for column in EVERY_TYPE.columns:
        for value in INVALID[column.type]:
            line = [value if c is column else plain_value(rng, c.type) for c in EVERY_TYPE.columns]
            body = io.StringIO()
            csv.writer(body, lineterminator="\n").writerows([EVERY_TYPE.header, line])
            result = assert_same(body.getvalue().encode(), EVERY_TYPE, monkeypatch, sizes=SIZES[:1])
            assert result.error is not None and result.error[0] is ValueTypeError, value


def test_the_shipped_example_files(monkeypatch: pytest.MonkeyPatch) -> None:
    files = Path(__file__).parents[2] / "events" / "files"
    for path in sorted(files.glob("*.csv")):
        dataset = path.name.split("-")[0]
        if dataset in known_datasets():
            assert_same(path.read_bytes(), load_contract(dataset), monkeypatch)
