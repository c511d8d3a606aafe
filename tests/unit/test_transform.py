"""CSV validation and conversion: every kind of bad input gets a typed error and a line."""

from __future__ import annotations

import io
import json

import pytest

from ingest_pipeline.errors import (
    ColumnCountError,
    EmptyFileError,
    EncodingError,
    HeaderError,
    LineTooLongError,
    MalformedCsvError,
    ValueTypeError,
)
from ingest_pipeline.logic.contracts import load_contract
from ingest_pipeline.logic.transform import Summary, convert

pytestmark = pytest.mark.unit

HEADER = b"order_id,customer_id,amount,currency,quantity,ordered_at,gift\n"
ROW = b"o-1,c-1,12.50,EUR,2,2026-11-01T10:00:00+00:00,true\n"


def run(data: bytes, max_line_bytes: int = 1024 * 1024) -> tuple[list[dict], Summary]:
    summary = Summary(dataset="orders")
    out = b"".join(
        convert(io.BytesIO(data), load_contract("orders"), summary, max_line_bytes=max_line_bytes)
    )
    return [json.loads(line) for line in out.splitlines()], summary


def test_converts_rows_with_types_and_checksum() -> None:
    rows, summary = run(HEADER + ROW + b"o-2,c-2,3,USD,1,2026-11-02T00:00:00,\n")
    assert rows[0] == {
        "order_id": "o-1",
        "customer_id": "c-1",
        "amount": "12.50",
        "currency": "EUR",
        "quantity": 2,
        "ordered_at": "2026-11-01T10:00:00+00:00",
        "gift": True,
    }
    assert rows[1]["gift"] is None  # optional and empty
    assert summary.rows == 2
    assert summary.bytes_in == len(HEADER + ROW) + len(b"o-2,c-2,3,USD,1,2026-11-02T00:00:00,\n")
    assert len(summary.sha256) == 64


def test_bom_crlf_and_blank_lines_are_accepted() -> None:
    data = b"\xef\xbb\xbf" + HEADER.replace(b"\n", b"\r\n") + b"\r\n" + ROW.replace(b"\n", b"\r\n")
    rows, summary = run(data)
    assert [r["order_id"] for r in rows] == ["o-1"]
    assert summary.rows == 1


def test_quoted_fields_with_commas_newlines_and_unicode() -> None:
    data = HEADER + 'o-1,"c, \u00e9\nline2",1,EUR,1,2026-11-01T00:00:00,no\n'.encode()
    rows, _ = run(data)
    assert rows[0]["customer_id"] == "c, \u00e9\nline2"
    assert rows[0]["gift"] is False


def test_header_only_file_is_valid_and_empty() -> None:
    rows, summary = run(HEADER)
    assert rows == [] and summary.rows == 0


@pytest.mark.parametrize("data", [b"", b"\n\n"])
def test_empty_file(data: bytes) -> None:
    with pytest.raises(EmptyFileError):
        run(data)


def test_wrong_header_names_missing_and_unexpected_columns() -> None:
    with pytest.raises(HeaderError) as info:
        run(b"order_id,customer,amount,currency,quantity,ordered_at,gift\n" + ROW)
    assert info.value.line == 1
    assert info.value.details["missing"] == ["customer_id"]
    assert info.value.details["unexpected"] == ["customer"]


def test_missing_header_reports_line_one() -> None:
    with pytest.raises(HeaderError) as info:
        run(ROW)
    assert info.value.line == 1


def test_wrong_column_count_reports_the_line() -> None:
    with pytest.raises(ColumnCountError) as info:
        run(HEADER + ROW + b"o-2,c-2,3,USD\n")
    assert info.value.line == 3
    assert info.value.details == {"expected": 7, "found": 4}


def test_bad_values_are_collected_with_line_numbers() -> None:
    data = HEADER + ROW + b"o-2,c-2,abc,USD,1,2026-11-02T00:00:00,\n" + b"o-3,,1,USD,x,2026,\n"
    with pytest.raises(ValueTypeError) as info:
        run(data)
    errors = info.value.details["errors"]
    assert info.value.line == 3
    assert [(e["line"], e["column"]) for e in errors] == [
        (3, "amount"),
        (4, "customer_id"),
        (4, "quantity"),
        (4, "ordered_at"),
    ]
    assert "line 3" in str(info.value)


def test_non_utf8_reports_the_line() -> None:
    with pytest.raises(EncodingError) as info:
        run(HEADER + ROW + "o-2,c-\u00e9,1,EUR,1,2026-11-01T00:00:00,\n".encode("latin-1"))
    assert info.value.line == 3


def test_utf16_file_is_rejected_as_encoding_error() -> None:
    with pytest.raises(EncodingError):
        run((HEADER + ROW).decode().encode("utf-16"))


def test_very_long_line_is_rejected_without_reading_it_whole() -> None:
    long_line = b"o-2," + b"x" * 5000 + b",1,EUR,1,2026-11-01T00:00:00,\n"
    with pytest.raises(LineTooLongError) as info:
        run(HEADER + long_line, max_line_bytes=1000)
    assert info.value.line == 2


def test_unterminated_quote_is_malformed() -> None:
    with pytest.raises((MalformedCsvError, LineTooLongError)):
        run(HEADER + b'o-1,"c-1,1,EUR,1,2026-11-01T00:00:00,\n', max_line_bytes=200)


def test_stray_quote_is_malformed() -> None:
    with pytest.raises(MalformedCsvError):
        run(HEADER + b'o-1,c"1,1,EUR,1,2026-11-01T00:00:00,"x"y\n')


def test_memory_stays_bounded_on_a_large_file() -> None:
    # 200k rows streamed: the generator never holds more than one line.
    class Rows(io.RawIOBase):
        def __init__(self) -> None:
            self.left = 200_000
            self.buf = HEADER

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
            while len(self.buf) < len(b) and self.left:
                self.buf += ROW
                self.left -= 1
            n = min(len(b), len(self.buf))
            b[:n] = self.buf[:n]
            self.buf = self.buf[n:]
            return n

    summary = Summary(dataset="orders")
    count = 0
    for _ in convert(io.BufferedReader(Rows()), load_contract("orders"), summary):
        count += 1
    assert count == summary.rows == 200_000
