"""Parquet output (ingest_pipeline.logic.parquet): the converter's JSON lines written with the
contract's types, read back by DuckDB (a reader this project did not write)."""

from __future__ import annotations

import io
import json
import random
import re
import subprocess
import sys
import tomllib
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ingest_pipeline.errors import ValueTypeError
from ingest_pipeline.logic.contracts import Contract, parse_contract
from ingest_pipeline.logic.parquet import (
    CONTENT_TYPE,
    SUFFIX,
    _arrow_table,
    _python_table,
    arrow_schema,
    write_parquet,
)
from ingest_pipeline.logic.transform import Summary, convert

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ROOT / "functions"


def contract(*columns: dict[str, Any]) -> Contract:
    return parse_contract(
        json.dumps({"dataset": "things", "output": {"format": "parquet"}, "columns": columns})
    )


EVERY_TYPE = contract(
    {"name": "id", "type": "string"},
    {"name": "note", "type": "string", "required": False},
    {"name": "qty", "type": "integer"},
    {"name": "big", "type": "integer", "required": False},
    {"name": "amount", "type": "decimal", "scale": 2},
    {"name": "rate", "type": "decimal", "scale": 4, "required": False},
    {"name": "gift", "type": "boolean", "required": False},
    {"name": "day", "type": "date", "required": False},
    {"name": "placed", "type": "datetime"},
    {"name": "seen", "type": "datetime", "required": False},
)

ROWS: list[dict[str, Any]] = [
    {
        "id": "a-1",
        "note": "Zürich → 東京 🦆",
        "qty": 3,
        "big": 2**63 - 1,
        "amount": "12.50",
        "rate": "0.0725",
        "gift": True,
        "day": "2026-11-27",
        "placed": "2026-11-27T10:00:00+02:00",  # an offset: converted to UTC
        "seen": "2026-11-27T10:00:00.123456",  # naive: taken as UTC
    },
    {
        "id": "ä-2",
        "note": None,
        "qty": -7,
        "big": -(2**63),
        "amount": "-0.01",
        "rate": None,
        "gift": False,
        "day": None,
        "placed": "2026-01-01T00:00:00Z",
        "seen": None,
    },
    {
        "id": "3",
        "note": "",
        "qty": 0,
        "big": None,
        "amount": "-123456789012345678901234567890123456.78",  # 38 digits
        "rate": "5",  # fewer digits than the scale: exact
        "gift": None,
        "day": "1970-01-01",
        "placed": "2026-06-30T23:59:59.999999-05:30",
        "seen": "2026-06-30T23:59:59",
    },
]


def jsonl(rows: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps(row, ensure_ascii=False).encode() + b"\n" for row in rows]


def write(path: Path, rows: list[dict[str, Any]], c: Contract = EVERY_TYPE, **kw: Any) -> int:
    with path.open("wb") as sink:
        return write_parquet(jsonl(rows), c, sink, **kw)


def query(sql: str, path: Path) -> list[tuple[Any, ...]]:
    """``sql`` on the file at ``path`` (its one ``?``)."""
    return duckdb.execute(sql, [str(path)]).fetchall()


def test_every_type_reads_back_with_its_value(tmp_path: Path) -> None:
    path = tmp_path / f"out{SUFFIX}"
    assert write(path, ROWS) == 3
    # TIMESTAMPTZ to Python needs pytz: the instants are read as UTC text instead.
    got = query(
        "select id, note, qty, big, amount, rate, gift, day, "
        "strftime(placed at time zone 'UTC', '%Y-%m-%d %H:%M:%S.%f'), "
        "strftime(seen at time zone 'UTC', '%Y-%m-%d %H:%M:%S.%f') "
        "from read_parquet(?)",
        path,
    )
    assert got == [
        (
            "a-1",
            "Zürich → 東京 🦆",
            3,
            2**63 - 1,
            Decimal("12.50"),
            Decimal("0.0725"),
            True,
            date(2026, 11, 27),
            "2026-11-27 08:00:00.000000",
            "2026-11-27 10:00:00.123456",
        ),
        (
            "ä-2",
            None,
            -7,
            -(2**63),
            Decimal("-0.01"),
            None,
            False,
            None,
            "2026-01-01 00:00:00.000000",
            None,
        ),
        (
            "3",
            "",
            0,
            None,
            Decimal("-123456789012345678901234567890123456.78"),
            Decimal("5.0000"),
            None,
            date(1970, 1, 1),
            "2026-07-01 05:29:59.999999",
            "2026-06-30 23:59:59.000000",
        ),
    ]
    # the instants themselves (microseconds since the epoch), not only their rendering
    assert query("select epoch_us(placed) from read_parquet(?) where id = 'a-1'", path) == [
        (1_795_766_400_000_000,)
    ]


def test_the_columns_have_the_contracts_types(tmp_path: Path) -> None:
    path = tmp_path / "out.parquet"
    write(path, ROWS)
    described = query("describe select * from read_parquet(?)", path)
    assert [(name, type_) for name, type_, *_ in described] == [
        ("id", "VARCHAR"),
        ("note", "VARCHAR"),
        ("qty", "BIGINT"),
        ("big", "BIGINT"),
        ("amount", "DECIMAL(38,2)"),
        ("rate", "DECIMAL(38,4)"),
        ("gift", "BOOLEAN"),
        ("day", "DATE"),
        ("placed", "TIMESTAMP WITH TIME ZONE"),
        ("seen", "TIMESTAMP WITH TIME ZONE"),
    ]
    schema = {
        name: rest
        for name, *rest in query(
            "select name, type, logical_type, repetition_type "
            "from parquet_schema(?) where name != 'schema'",
            path,
        )
    }
    assert schema["id"] == ["BYTE_ARRAY", "StringType()", "REQUIRED"]
    assert schema["note"] == ["BYTE_ARRAY", "StringType()", "OPTIONAL"]
    assert schema["qty"][0::2] == ["INT64", "REQUIRED"]
    assert schema["amount"] == [
        "FIXED_LEN_BYTE_ARRAY",
        "DecimalType(scale=2, precision=38)",
        "REQUIRED",
    ]
    assert schema["rate"][1:] == ["DecimalType(scale=4, precision=38)", "OPTIONAL"]
    assert schema["gift"][0::2] == ["BOOLEAN", "OPTIONAL"]
    assert schema["day"] == ["INT32", "DateType()", "OPTIONAL"]
    for name, repetition in (("placed", "REQUIRED"), ("seen", "OPTIONAL")):
        kind, logical, rep = schema[name]
        assert (kind, rep) == ("INT64", repetition)
        assert logical.startswith("TimestampType(isAdjustedToUTC=1,"), logical
        assert "MICROS=MicroSeconds()" in logical


def test_decimals_are_written_at_the_scale_only_when_exact(tmp_path: Path) -> None:
    c = contract({"name": "amount", "type": "decimal", "scale": 2})
    path = tmp_path / "exact.parquet"
    values = ["12.500", "3.5", "-0", "1E+2", "0.10"]
    assert write(path, [{"amount": v} for v in values], c) == 5
    assert [row[0] for row in query("select amount from read_parquet(?)", path)] == [
        Decimal("12.50"),
        Decimal("3.50"),
        Decimal("0.00"),
        Decimal("100.00"),
        Decimal("0.10"),
    ]
    # a JSON number is read as a decimal, never as a float
    buffer = io.BytesIO()
    assert write_parquet([b'{"amount": 0.35}'], c, buffer) == 1


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("12.505", "more than 2 digits after the point: '12.505' (not rounded)"),
        ("-0.001", "more than 2 digits after the point"),
        ("1" * 37, "more than 38 digits at scale 2"),
        ("NaN", "not a finite decimal number"),
        ("twelve", "not a decimal number"),
        (True, "not a decimal number"),
    ],
)
def test_a_decimal_that_does_not_fit_is_refused_not_rounded(
    tmp_path: Path, value: Any, problem: str
) -> None:
    c = contract(
        {"name": "id", "type": "string"}, {"name": "amount", "type": "decimal", "scale": 2}
    )
    rows = [{"id": "ok", "amount": "1.00"}, {"id": "bad", "amount": value}]
    path = tmp_path / "refused.parquet"
    with pytest.raises(ValueTypeError) as raised:
        write(path, rows, c)
    assert f"row 2, column 'amount': {problem}" in str(raised.value)
    assert raised.value.details == {"row": 2, "column": "amount"}
    assert raised.value.code == "BAD_VALUE"
    # what the sink holds is no Parquet file: no reader takes part of it as the whole
    with pytest.raises(duckdb.Error):
        query("select count(*) from read_parquet(?)", path)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": None, "n": 1}, "row 1, column 'id': null, but the column is required"),
        ({"id": "a", "n": "1"}, "row 1, column 'n': not a JSON integer"),
        ({"id": "a", "n": 1.5}, "row 1, column 'n': not a JSON integer"),
        ({"id": "a", "n": True}, "row 1, column 'n': not a JSON integer"),
        ({"id": "a", "n": 2**63}, "row 1, column 'n': out of the 64-bit integer range"),
        ({"id": 1, "n": 1}, "row 1, column 'id': not a JSON string"),
        ({"id": "a"}, "row 1, column 'n': missing"),
        ({"id": "a", "n": 1, "x": 2}, "row 1: 'x' is not a column of the 'things' contract"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused(row: dict[str, Any], message: str) -> None:
    c = contract({"name": "id", "type": "string"}, {"name": "n", "type": "integer"})
    with pytest.raises(ValueTypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        write_parquet(jsonl([row]), c, io.BytesIO())


@pytest.mark.parametrize(
    ("type_", "value"),
    [("boolean", "true"), ("date", "27/11/2026"), ("datetime", "yesterday"), ("date", 20261127)],
)
def test_other_bad_values_are_refused(type_: str, value: Any) -> None:
    c = contract({"name": "v", "type": type_})
    with pytest.raises(ValueTypeError, match=r"row 1, column 'v': "):
        write_parquet(jsonl([{"v": value}]), c, io.BytesIO())


def test_not_a_json_object_is_refused() -> None:
    c = contract({"name": "id", "type": "string"})
    with pytest.raises(ValueTypeError, match="row 2: not a JSON object"):
        write_parquet([b'{"id": "a"}', b'["a"]'], c, io.BytesIO())


def test_more_rows_than_a_row_group_make_several_row_groups(tmp_path: Path) -> None:
    c = contract(
        {"name": "id", "type": "string"},
        {"name": "amount", "type": "decimal", "scale": 2},
        {"name": "n", "type": "integer", "required": False},
    )
    rows = [{"id": f"id-{i}", "amount": f"{i}.25", "n": i if i % 3 else None} for i in range(10)]
    path = tmp_path / "groups.parquet"
    assert write(path, rows, c, row_group_rows=4) == 10
    groups = query(
        "select row_group_id, row_group_num_rows, compression, encodings "
        "from parquet_metadata(?) where path_in_schema = 'id' order by row_group_id",
        path,
    )
    assert [(g[0], g[1]) for g in groups] == [(0, 4), (1, 4), (2, 2)]
    assert {g[2] for g in groups} == {"ZSTD"}
    # dictionary encoding for the string columns only
    encodings = dict(
        query(
            "select path_in_schema, string_agg(encodings, ',') "
            "from parquet_metadata(?) group by path_in_schema",
            path,
        )
    )
    assert "DICTIONARY" in encodings["id"]
    assert "DICTIONARY" not in encodings["amount"] and "DICTIONARY" not in encodings["n"]
    assert query("select count(*), sum(amount), count(n) from read_parquet(?)", path) == [
        (10, Decimal("47.50"), 6)
    ]


def test_no_line_writes_a_file_with_the_schema_and_no_row(tmp_path: Path) -> None:
    path = tmp_path / "empty.parquet"
    assert write(path, []) == 0
    assert query("select count(*) from read_parquet(?)", path) == [(0,)]
    assert len(query("describe select * from read_parquet(?)", path)) == 10


def test_the_sink_is_only_written_to() -> None:
    class WriteOnly:
        def __init__(self) -> None:
            self.chunks: list[bytes] = []

        def write(self, data: bytes) -> int:
            self.chunks.append(bytes(data))
            return len(data)

        def flush(self) -> None:
            pass

    sink = WriteOnly()
    assert write_parquet(jsonl(ROWS), EVERY_TYPE, sink) == 3  # type: ignore[arg-type]
    data = b"".join(sink.chunks)
    assert data[:4] == data[-4:] == b"PAR1"
    kept = io.BytesIO()
    write_parquet(jsonl(ROWS), EVERY_TYPE, kept)
    assert not kept.closed  # the caller's to close (an upload, a temporary file)


ORDERS = parse_contract(
    json.dumps(
        {
            "dataset": "orders",
            "output": {"format": "parquet"},
            "columns": [
                {"name": "order_id", "type": "string"},
                {"name": "amount", "type": "decimal", "scale": 2},
                {"name": "quantity", "type": "integer"},
                {"name": "ordered_at", "type": "datetime"},
                {"name": "gift", "type": "boolean", "required": False},
                {"name": "day", "type": "date", "required": False},
            ],
        }
    )
)


def test_the_converters_lines_are_written(tmp_path: Path) -> None:
    """What logic/transform.py's convert yields for a CSV object goes straight in."""
    c = ORDERS
    csv = (
        b"order_id,amount,quantity,ordered_at,gift,day\n"
        b"o-1,12.5,2,2026-11-27T10:00:00+01:00,yes,2026-11-27\n"
        b"o-2,-3,1,2026-11-27 23:00:00,,\n"
    )
    path = tmp_path / "orders.parquet"
    with path.open("wb") as sink:
        rows = write_parquet(convert(io.BytesIO(csv), c, Summary("orders")), c, sink)
    assert rows == 2
    assert query(
        "select order_id, amount, quantity, strftime(ordered_at at time zone 'UTC', "
        "'%Y-%m-%d %H:%M'), gift, day from read_parquet(?)",
        path,
    ) == [
        ("o-1", Decimal("12.50"), 2, "2026-11-27 09:00", True, date(2026, 11, 27)),
        ("o-2", Decimal("-3.00"), 1, "2026-11-27 23:00", None, None),
    ]


def test_the_content_type_and_suffix() -> None:
    assert CONTENT_TYPE == "application/vnd.apache.parquet"
    assert SUFFIX == ".parquet"


def test_importing_the_writer_does_not_import_pyarrow() -> None:
    """Functions without the PyarrowLayer import the module: pyarrow only when writing."""
    probe = (
        "import sys; import ingest_pipeline.logic.parquet; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyarrow'))"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=FUNCTIONS,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert ran.stdout.strip() == "[]"


def test_the_layer_ships_the_pyarrow_the_tests_run_with() -> None:
    """layers/pyarrow/Makefile installs pyproject.toml's dev pin; the layer says which."""
    import pyarrow

    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (pin,) = [p for p in dev["optional-dependencies"]["dev"] if p.startswith("pyarrow==")]
    assert pin == f"pyarrow=={pyarrow.__version__}"
    requirements = (ROOT / "layers" / "pyarrow" / "requirements.txt").read_text()
    assert re.search(rf"^{re.escape(pin)}$", requirements, re.M)
    makefile = (ROOT / "layers" / "pyarrow" / "Makefile").read_text()
    assert re.search(r"^PYARROW := \$\(shell sed .* requirements\.txt\)$", makefile, re.M)
    template = (ROOT / "template.yaml").read_text()
    assert f"Description: pyarrow {pin.removeprefix('pyarrow==')} " in template


def _orders(count: int) -> bytes:
    """``count`` varied orders as CSV (nulls, offsets, naive instants, scales)."""
    rng = random.Random(40)  # noqa: S311 - reproducible test data
    lines = ["order_id,amount,quantity,ordered_at,gift,day"]
    for i in range(count):
        at = f"20{rng.randrange(10, 40)}-{rng.randrange(1, 13):02}-{rng.randrange(1, 29):02}"
        clock = f"{rng.randrange(24):02}:{rng.randrange(60):02}:{rng.randrange(60):02}"
        fraction = rng.choice(["", ".5", ".123456"])
        offset = rng.choice(["", "Z", "+02:00", "-05:30", "+0100"])
        amount = rng.choice([f"{rng.randrange(-(10**6), 10**6) / 100}", "7", "1e2", "-0.1"])
        lines.append(
            f"o-{i},{amount},{rng.randrange(-5, 10**9)},{at}T{clock}{fraction}{offset},"
            f"{rng.choice(['yes', 'no', ''])},{rng.choice([at, ''])}"
        )
    return "\n".join(lines).encode() + b"\n"


@pytest.mark.parametrize(
    ("c", "lines"),
    [
        (EVERY_TYPE, jsonl(ROWS) * 3),
        (ORDERS, list(convert(io.BytesIO(_orders(3000)), ORDERS, Summary("orders")))),
    ],
    ids=["every-type", "converted-orders"],
)
def test_arrows_reader_gives_the_table_the_python_path_gives(
    c: Contract, lines: list[bytes]
) -> None:
    """A batch is read by Arrow's JSON reader (the fast path), and its table is the one the
    line-by-line path makes of it: values, nulls, instants converted to UTC, types."""
    schema = arrow_schema(c)
    fast = _arrow_table(lines, c, schema)
    assert fast is not None, "Arrow's reader did not take the batch"
    slow = _python_table(lines, 1, c, schema)
    assert fast.schema == slow.schema == schema
    assert fast.to_pylist() == slow.to_pylist()
    assert fast.equals(slow)


def _object(**values: Any) -> bytes:
    """A line of ``values`` and ``n`` (1 unless given)."""
    return json.dumps({"n": 1, **values}).encode() + b"\n"


@pytest.mark.parametrize(
    ("column", "lines", "message"),
    [
        (  # 39 digits: Arrow's reader keeps them in a decimal128(38, 2)
            {"name": "v", "type": "decimal", "scale": 2},
            [_object(v="1" * 37)],
            "row 1, column 'v': more than 38 digits at scale 2",
        ),
        (  # Arrow reads year 0; Python has none
            {"name": "v", "type": "datetime"},
            [_object(v="2026-01-01T00:00:00"), _object(v="0000-01-01T00:00:00")],
            "row 2, column 'v': ",
        ),
        (  # after 9999-12-31 in UTC
            {"name": "v", "type": "datetime"},
            [_object(v="9999-12-31T23:59:59.999999-00:01")],
            "row 1, column 'v': ",
        ),
        (  # Arrow reads a number as days since 1970
            {"name": "v", "type": "date"},
            [_object(v=20261127)],
            "row 1, column 'v': not an ISO date string",
        ),
        (  # a missing key reads as null
            {"name": "v", "type": "string", "required": False},
            [_object(v="a"), b'{"n": 2}\n'],
            "row 2, column 'v': missing",
        ),
        (
            {"name": "v", "type": "string"},
            [_object(v=None, n=1)],
            "row 1, column 'v': null, but the column is required",
        ),
        (
            {"name": "v", "type": "string"},
            [b'{"v": "\xff", "n": 1}\n'],
            "row 1: not a JSON object",
        ),
        (  # two objects on a line and none on the next: Arrow counts two rows
            {"name": "v", "type": "string"},
            [b'{"v": "a", "n": 1}{"v": "b", "n": 2}\n', b"\n"],
            "row 1: not a JSON object",
        ),
        (  # two objects on a line: Arrow counts three rows
            {"name": "v", "type": "string"},
            [b'{"v": "a", "n": 1}{"v": "b", "n": 2}\n', _object(v="c")],
            "row 1: not a JSON object",
        ),
    ],
    ids=[
        "decimal-39-digits",
        "year-0",
        "after-9999",
        "date-number",
        "missing",
        "null",
        "utf-8",
        "two-on-a-line-none-on-the-next",
        "two-on-a-line",
    ],
)
def test_what_arrows_reader_takes_and_the_rules_refuse_is_refused_with_its_row(
    column: dict[str, Any], lines: list[bytes], message: str
) -> None:
    c = contract(column, {"name": "n", "type": "integer", "required": False})
    assert _arrow_table(lines, c, arrow_schema(c)) is None
    with pytest.raises(ValueTypeError, match=re.escape(message)):
        write_parquet(lines, c, io.BytesIO())


@pytest.mark.parametrize(
    ("column", "value", "written"),
    [
        ({"name": "v", "type": "decimal", "scale": 0}, "1_000", Decimal(1000)),
        ({"name": "v", "type": "datetime"}, "2026-11-27T10:00:00,5", "2026-11-27 10:00:00.500"),
        ({"name": "v", "type": "datetime"}, "20261127T100000", "2026-11-27 10:00:00.000"),
    ],
)
def test_what_arrows_reader_refuses_and_the_rules_take_is_written(
    tmp_path: Path, column: dict[str, Any], value: str, written: Any
) -> None:
    c = contract(column, {"name": "n", "type": "integer"})
    lines = [_object(v=value)]
    assert _arrow_table(lines, c, arrow_schema(c)) is None
    path = tmp_path / "taken.parquet"
    with path.open("wb") as sink:
        assert write_parquet(lines, c, sink) == 1
    select = "strftime(v, '%Y-%m-%d %H:%M:%S.%g')" if column["type"] == "datetime" else "v"
    got = query(f"select {select} from read_parquet(?)", path)[0][0]  # noqa: S608
    assert got == written


def test_a_bad_value_in_a_later_batch_is_refused_with_its_row_in_the_file() -> None:
    c = contract({"name": "amount", "type": "decimal", "scale": 2})
    lines = jsonl([{"amount": f"{i}.25"} for i in range(10)])
    lines[6] = _object(amount="1.255")
    with pytest.raises(ValueTypeError, match=re.escape("row 7, column 'amount': more than 2")):
        write_parquet(lines, c, io.BytesIO(), row_group_rows=4)
