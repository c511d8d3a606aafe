"""The input formats a dataset contract declares (``input``): gzip, other encodings, CSV
dialects, files without a header, JSON Lines; all through ``logic.transform.convert``, and
written exactly as the same rows from plain UTF-8 CSV are."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from ingest_pipeline.errors import (
    CompressionError,
    DataError,
    EmptyFileError,
    EncodingError,
    HeaderError,
    MalformedJsonError,
    SplitRequiredError,
    ValueTypeError,
)
from ingest_pipeline.handlers import process
from ingest_pipeline.logic import formats
from ingest_pipeline.logic.contracts import Contract, parse_contract
from ingest_pipeline.logic.transform import MAX_REPORTED_ERRORS, Summary, convert
from ingest_pipeline.models import ObjectRef, ProcessRequest
from ingest_tools.cli import main

pytestmark = pytest.mark.unit

COLUMNS = [
    {"name": "id", "type": "string"},
    {"name": "n", "type": "integer"},
    {"name": "amount", "type": "decimal"},
    {"name": "ok", "type": "boolean", "required": False},
    {"name": "day", "type": "date"},
    {"name": "at", "type": "datetime", "required": False},
]
CSV = (
    "id,n,amount,ok,day,at\n"
    "a-1,1,12.50,true,2026-01-02,2026-01-02T10:00:00+01:00\n"
    "Zoë café €,-7,0.1,no,2026-12-31,\n"
    '"q, ""x""",0,1e3,,2026-02-03,2026-02-03T00:00:00Z\n'
)
JSONL = (
    '{"id":"a-1","n":1,"amount":12.50,"ok":true,"day":"2026-01-02",'
    '"at":"2026-01-02T10:00:00+01:00"}\n'
    '{"id":"Zoë café €","n":"-7","amount":"0.1","ok":"no","day":"2026-12-31","at":null}\n'
    "\n"
    '{"day":"2026-02-03","id":"q, \\"x\\"","n":0,"amount":1e3,"at":"2026-02-03T00:00:00Z"}\n'
)


def contract(**input_: Any) -> Contract:
    return parse_contract(json.dumps({"dataset": "things", "input": input_, "columns": COLUMNS}))


def run(data: bytes, c: Contract, **kwargs: Any) -> tuple[bytes, Summary]:
    summary = Summary(dataset=c.dataset)
    return b"".join(convert(io.BytesIO(data), c, summary, **kwargs)), summary


def error(data: bytes, c: Contract) -> DataError:
    with pytest.raises(DataError) as caught:
        run(data, c)
    return caught.value


EXPECTED, _ = run(CSV.encode(), contract())


def test_the_plain_csv_is_what_the_others_are_compared_with() -> None:
    lines = EXPECTED.decode().splitlines()
    assert len(lines) == 3
    assert json.loads(lines[1]) == {
        "id": "Zoë café €",
        "n": -7,
        "amount": "0.1",
        "ok": False,
        "day": "2026-12-31",
        "at": None,
    }


# --- compression ------------------------------------------------------------------------


@pytest.mark.parametrize("compression", ["auto", "gzip"])
def test_gzip_is_decompressed(compression: str) -> None:
    out, summary = run(gzip.compress(CSV.encode()), contract(compression=compression))
    assert out == EXPECTED and summary.rows == 3 and summary.sha256


def test_auto_reads_an_uncompressed_file_as_it_is() -> None:
    assert run(CSV.encode(), contract(compression="auto"))[0] == EXPECTED


def test_a_contract_saying_gzip_refuses_a_file_that_is_not() -> None:
    exc = error(CSV.encode(), contract(compression="gzip"))
    assert isinstance(exc, CompressionError) and "not gzip-compressed" in exc.message


def test_compression_none_does_not_decompress() -> None:
    assert isinstance(error(gzip.compress(CSV.encode()), contract(compression="none")), DataError)


@pytest.mark.parametrize(
    "damage",
    [
        lambda z: z[: len(z) // 2],  # truncated
        lambda z: z[:12] + bytes(b ^ 0xFF for b in z[12:30]) + z[30:],  # corrupt deflate data
        lambda z: z[:-8] + b"\0\0\0\0" + z[-4:],  # CRC
    ],
    ids=["truncated", "corrupt", "crc"],
)
def test_a_bad_gzip_stream_is_bad_data(damage: Any) -> None:
    exc = error(damage(gzip.compress(CSV.encode() * 50)), contract())
    assert isinstance(exc, CompressionError) and exc.code == "BAD_COMPRESSION"
    assert "not valid gzip" in exc.message


def test_gzip_in_small_reads_gives_the_same_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from ingest_pipeline.logic import transform

    monkeypatch.setattr(transform, "READ_BLOCK_BYTES", 1)
    assert run(gzip.compress(CSV.encode()), contract())[0] == EXPECTED
    assert run(CSV.encode(), contract())[0] == EXPECTED


# --- encodings --------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252", "utf-16"])
def test_other_encodings_are_transcoded(encoding: str) -> None:
    text = CSV if encoding != "latin-1" else CSV.replace("€", "E")
    expected = EXPECTED if encoding != "latin-1" else EXPECTED.replace("€".encode(), b"E")
    assert run(text.encode(encoding), contract(encoding=encoding))[0] == expected


def test_latin1_non_ascii_values() -> None:
    out, _ = run(
        "id,n,amount,ok,day,at\nÅsa Ñoño ß,1,2,,2026-01-01,\n".encode("latin-1"),
        contract(encoding="latin-1", compression="none"),
    )
    assert json.loads(out)["id"] == "Åsa Ñoño ß"


def test_gzip_and_an_encoding_together() -> None:
    data = gzip.compress(CSV.encode("cp1252"))
    assert run(data, contract(encoding="cp1252"))[0] == EXPECTED


def test_a_byte_invalid_in_the_encoding_is_reported_on_its_line() -> None:
    data = CSV.encode("cp1252").replace(b"caf", b"c\x81f")  # 0x81: no cp1252 character
    exc = error(data, contract(encoding="cp1252"))
    assert isinstance(exc, EncodingError) and exc.line == 3 and "cp1252" in exc.message


# --- CSV options ------------------------------------------------------------------------


def test_another_delimiter_and_quote() -> None:
    data = (
        "id;n;amount;ok;day;at\n"
        "a-1;1;12.50;true;2026-01-02;2026-01-02T10:00:00+01:00\n"
        "Zoë café €;-7;0.1;no;2026-12-31;\n"
        "'q, \"x\"';0;1e3;;2026-02-03;2026-02-03T00:00:00Z\n"
    )
    assert run(data.encode(), contract(delimiter=";", quote="'"))[0] == EXPECTED


def test_no_header_line_columns_by_position() -> None:
    data = CSV.split("\n", 1)[1].encode()
    assert run(data, contract(header=False))[0] == EXPECTED


def test_no_header_line_a_header_is_a_record() -> None:
    exc = error(CSV.encode(), contract(header=False))
    assert isinstance(exc, ValueTypeError) and exc.line == 1


@pytest.mark.parametrize(("data", "says"), [(b"", "0 bytes"), (b"\n\n", "only blank lines")])
def test_no_header_line_and_no_record_is_an_empty_file(data: bytes, says: str) -> None:
    exc = error(data, contract(header=False))
    assert isinstance(exc, EmptyFileError) and says in exc.message


# --- JSON Lines -------------------------------------------------------------------------


def test_jsonl_rows_are_the_csv_rows() -> None:
    out, summary = run(JSONL.encode(), contract(format="jsonl"))
    assert out == EXPECTED and summary.rows == 3 and summary.lines == 4


def test_jsonl_gzip_and_encoding() -> None:
    data = gzip.compress(JSONL.encode("utf-16"))
    assert run(data, contract(format="jsonl", encoding="utf-16"))[0] == EXPECTED


@pytest.mark.parametrize(
    ("line", "error_type", "says"),
    [
        ("{not json", MalformedJsonError, "not valid JSON"),
        ('["a-1", 1]', MalformedJsonError, "expected a JSON object, found list"),
        ('{"id": NaN}', MalformedJsonError, "not valid JSON"),
        ("[" * 100_000, MalformedJsonError, "nested too deeply"),
        ('{"id":"a","n":1,"amount":1,"day":"2026-01-01","colour":"red"}', HeaderError, "'colour'"),
    ],
)
def test_jsonl_structural_errors_stop_at_their_line(
    line: str, error_type: type[DataError], says: str
) -> None:
    data = JSONL.splitlines(keepends=True)[0] + line + "\n"
    exc = error(data.encode(), contract(format="jsonl"))
    assert type(exc) is error_type and exc.line == 2 and says in exc.message


@pytest.mark.parametrize(
    ("values", "column", "says"),
    [
        ({"n": 1, "amount": 1, "day": "2026-01-01"}, "id", "required value missing"),
        ({"id": None, "n": 1, "amount": 1, "day": "2026-01-01"}, "id", "required value missing"),
        ({"id": " ", "n": 1, "amount": 1, "day": "2026-01-01"}, "id", "required value missing"),
        ({"id": 5, "n": 1, "amount": 1, "day": "2026-01-01"}, "id", "not a JSON string: 5"),
        ({"id": "a", "n": 1.5, "amount": 1, "day": "2026-01-01"}, "n", "not an integer: 1.5"),
        ({"id": "a", "n": True, "amount": 1, "day": "2026-01-01"}, "n", "not an integer: true"),
        ({"id": "a", "n": "x", "amount": 1, "day": "2026-01-01"}, "n", "not an integer: 'x'"),
        ({"id": "a", "n": 1, "amount": "1,5", "day": "2026-01-01"}, "amount", "not a decimal"),
        ({"id": "a", "n": 1, "amount": [1], "day": "2026-01-01"}, "amount", "not a number"),
        ({"id": "a", "n": 1, "amount": 1, "ok": 1, "day": "2026-01-01"}, "ok", "true or false"),
        ({"id": "a", "n": 1, "amount": 1, "ok": "maybe", "day": "2026-01-01"}, "ok", "boolean"),
        ({"id": "a", "n": 1, "amount": 1, "day": 20260101}, "day", "an ISO date string"),
        ({"id": "a", "n": 1, "amount": 1, "day": "2026-13-01"}, "day", "month"),
    ],
)
def test_jsonl_value_problems_are_the_csv_ones(
    values: dict[str, Any], column: str, says: str
) -> None:
    data = JSONL.splitlines(keepends=True)[0] + json.dumps(values) + "\n"
    exc = error(data.encode(), contract(format="jsonl"))
    assert isinstance(exc, ValueTypeError) and exc.line == 2
    (problem,) = exc.details["errors"]
    assert problem["line"] == 2 and problem["column"] == column and says in problem["error"]


def test_jsonl_missing_value_reads_as_csv_does() -> None:
    csv_exc = error(b"id,n,amount,ok,day,at\n,1,1,,2026-01-01,\n", contract())
    jsonl_exc = error(b'{"n":1,"amount":1,"day":"2026-01-01"}\n', contract(format="jsonl"))
    assert csv_exc.details["errors"][0]["error"] == jsonl_exc.details["errors"][0]["error"]


def test_jsonl_problems_are_collected_up_to_the_limit() -> None:
    bad = '{"id":"a","n":"x","amount":1,"day":"2026-01-01"}\n'
    exc = error((bad * (MAX_REPORTED_ERRORS + 5)).encode(), contract(format="jsonl"))
    assert isinstance(exc, ValueTypeError) and len(exc.details["errors"]) == MAX_REPORTED_ERRORS


@pytest.mark.parametrize(("data", "says"), [(b"", "0 bytes"), (b"\n \n", "only blank lines")])
def test_jsonl_without_a_record_is_an_empty_file(data: bytes, says: str) -> None:
    exc = error(data, contract(format="jsonl"))
    assert isinstance(exc, EmptyFileError) and says in exc.message


# --- the large-file path ----------------------------------------------------------------


def test_a_chunk_of_any_dialect_or_jsonl_is_read_as_utf8() -> None:
    assert run(CSV.encode(), contract(), stop_at=len(CSV.encode()))[0] == EXPECTED
    lines = EXPECTED.encode() if isinstance(EXPECTED, str) else EXPECTED
    assert run(lines, contract(format="jsonl"), stop_at=len(lines))[0] == EXPECTED


@pytest.mark.parametrize(
    ("input_", "gzipped", "mode", "described"),
    [
        ({}, False, formats.SplitMode.BYTE_RANGE, "CSV"),
        ({}, True, formats.SplitMode.STREAM, "gzip-compressed CSV"),
        ({"encoding": "UTF8"}, False, formats.SplitMode.BYTE_RANGE, "CSV"),
        ({"encoding": "latin-1"}, False, formats.SplitMode.STREAM, "CSV in latin-1"),
        ({"delimiter": ";"}, False, formats.SplitMode.BYTE_RANGE, "';'-separated CSV"),
        ({"header": False}, False, formats.SplitMode.BYTE_RANGE, "CSV without a header"),
        ({"format": "jsonl"}, False, formats.SplitMode.BYTE_RANGE, "JSON Lines"),
        ({"format": "jsonl"}, True, formats.SplitMode.STREAM, "gzip-compressed JSON Lines"),
    ],
)
def test_how_the_large_file_path_splits_each_input(
    input_: dict[str, Any], gzipped: bool, mode: formats.SplitMode, described: str
) -> None:
    spec = contract(**input_).input
    assert formats.split_mode(spec, gzipped=gzipped) is mode
    assert formats.describe(spec, gzipped=gzipped) == described


@pytest.mark.parametrize(
    ("input_", "head", "gzipped"),
    [
        ({}, b"id", False),
        ({}, formats.GZIP_MAGIC, True),
        ({"compression": "gzip"}, b"", True),
        ({"compression": "none"}, formats.GZIP_MAGIC, False),
    ],
)
def test_whether_an_object_is_read_as_gzip(
    input_: dict[str, Any], head: bytes, gzipped: bool
) -> None:
    assert formats.is_gzipped(contract(**input_).input, head) is gzipped


def test_a_large_object_of_any_input_goes_to_the_large_file_path() -> None:
    exc = process._split_required(_request(), 300 << 20, "its size")
    assert type(exc) is SplitRequiredError and exc.details["size"] == 300 << 20


def _request() -> ProcessRequest:
    obj = ObjectRef(bucket="bucket", key="incoming/things/a.csv.gz", version_id="v1")
    return ProcessRequest(object=obj, attempt=1, execution_arn="arn:x")


def test_progress_of_gzip_is_counted_in_raw_bytes() -> None:
    """ProcessObject's time budget compares the raw bytes read with the object's size."""

    class Counted(io.BytesIO):
        raw = 0

        def read(self, size: int | None = -1) -> bytes:
            data = super().read(size)
            self.raw += len(data)
            return data

    header, rows = CSV.split("\n", 1)
    data = gzip.compress((header + "\n" + rows * 2000).encode())
    source = Counted(data)
    summary = Summary(dataset="things")
    for _ in convert(source, contract(), summary):
        pass
    assert summary.rows == 6000 and source.raw == len(data)


# --- ingestctl dataset check ------------------------------------------------------------


def test_dataset_check_reads_a_gzip_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract_file = tmp_path / "things.json"
    contract_file.write_text(json.dumps({"dataset": "things", "columns": COLUMNS}))
    data = tmp_path / "things.csv.gz"
    data.write_bytes(gzip.compress(CSV.encode()))
    code = main(["dataset", "check", str(data), "--contract", str(contract_file)])
    assert (code, capsys.readouterr().out) == (
        0,
        f"{data}: would be processed: 3 rows for dataset 'things'\n",
    )
    data.write_bytes(gzip.compress(CSV.encode())[:40])
    code = main(["dataset", "check", str(data), "--contract", str(contract_file)])
    assert code == 1 and "would be quarantined: BAD_COMPRESSION" in capsys.readouterr().out
