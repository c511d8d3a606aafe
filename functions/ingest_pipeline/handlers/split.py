"""SplitObject: plan the large-file path for one object version (``logic/chunks.py``).

Every input format of a contract is taken (``logic/formats.py`` ``split_mode``):

* **byte ranges** (uncompressed UTF-8: CSV of any dialect, with or without a header, and
  JSON Lines): reads the object's first bytes (its header, checked against the dataset
  contract as the single-Lambda path checks it) and a small window at every cut, chooses
  where each chunk starts (a guess AssembleOutput checks for CSV; any line start for JSON
  Lines), and writes the plan. Nothing else of the object is read here.
* **one ordered pass** (gzip, other encodings): reads the whole object as the UTF-8 text
  the converter reads (decompressed, transcoded), and writes it under ``work/`` as the
  header and pieces of whole records (``logic/pieces.py``); each piece is one chunk. The
  pass runs within this function's Timeout: at the rate it measures it stops early with
  ObjectTooLargeError naming the largest object it could read.

Input: ``{"object": {...}, "attempt": 1, "executionArn": "..."}`` (as ProcessObject's).
Output: the plan (``large_models.PlanModel``): where it is and what every chunk needs to know.
"""

from __future__ import annotations

import io
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, TYPE_CHECKING, Any

from ingest_pipeline.config import LargeObjectSettings
from ingest_pipeline.dal import s3
from ingest_pipeline.dal.contracts import contract_for
from ingest_pipeline.dal.plans import write_plan
from ingest_pipeline.errors import InvalidEventError, LineTooLongError, ObjectTooLargeError
from ingest_pipeline.logic import chunks, formats, keys, pieces
from ingest_pipeline.logic.contracts import Contract
from ingest_pipeline.logic.deadline import TimeBudget
from ingest_pipeline.logic.summary import Summary
from ingest_pipeline.logic.transform import DEFAULT_MAX_LINE_BYTES, convert
from ingest_pipeline.models import ProcessRequest, parse_event
from ingest_pipeline.observability import bind_object, handler_imported, logger, tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

HEADER_BYTES = DEFAULT_MAX_LINE_BYTES + 2  # a header is one line (or a few, quoted)
WINDOW_BYTES = 256 * 1024  # read at each cut to find where records start
WINDOW_READERS = 8  # windows read at once
PIECE_UPLOADS = 2  # pieces uploaded while the next is read (memory: this many + one)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse_event(event, ProcessRequest)
    bind_object(request.object, request.execution_arn, request.attempt)
    plan = split(
        request,
        LargeObjectSettings.from_env(),
        remaining_ms=context.get_remaining_time_in_millis,
    )
    logger.info(
        "object split",
        size=plan["size"],
        chunk_count=plan["chunkCount"],
        plan_key=plan["key"],
        mode=plan["mode"],
    )
    return plan


def split(
    request: ProcessRequest,
    settings: LargeObjectSettings,
    round_: int = 1,
    *,
    remaining_ms: Callable[[], int] | None = None,
) -> dict[str, Any]:
    obj = request.object
    if obj.version_id is None:
        raise InvalidEventError("object.versionId is missing: the workflow resolves it first")
    contract = contract_for(obj, request.claimed_at).contract
    opened = s3.open_object(obj.bucket, obj.key, obj.version_id)
    ingest_date = keys.ingest_date(opened.last_modified)
    with opened.body:
        head = opened.body.peek(len(formats.GZIP_MAGIC))[: len(formats.GZIP_MAGIC)]  # type: ignore[attr-defined]
        gzipped = formats.is_gzipped(contract.input, head)
        mode = formats.split_mode(contract.input, gzipped=gzipped)
        if mode is formats.SplitMode.STREAM:
            return _split_in_one_pass(
                request,
                settings,
                contract,
                opened=opened,
                ingest_date=ingest_date,
                round_=round_,
                remaining_ms=remaining_ms,
            )
        prefix = opened.body.read(HEADER_BYTES)
    return _split_by_ranges(
        request,
        settings,
        contract,
        size=opened.size,
        prefix=prefix,
        ingest_date=ingest_date,
        round_=round_,
    )


def _split_by_ranges(
    request: ProcessRequest,
    settings: LargeObjectSettings,
    contract: Contract,
    *,
    size: int,
    prefix: bytes,
    ingest_date: str,
    round_: int,
) -> dict[str, Any]:
    obj = request.object
    dialect = chunks.Dialect.of(contract.input)
    end = header_end(prefix, len(prefix) >= size, contract)
    cuts = chunks.nominal_cuts(size, end, settings.chunk_bytes)
    width = len(contract.header)

    def start_after(cut: int) -> int | None:
        first = cut - 1  # the window starts one byte early: a cut may be a line start
        window = s3.read_range(obj.bucket, obj.key, obj.version_id, first, first + WINDOW_BYTES - 1)
        found = chunks.line_start_after(window, 1, width, dialect)
        return None if found is None else first + found

    with ThreadPoolExecutor(max_workers=WINDOW_READERS) as pool:
        starts = [s for s in pool.map(start_after, cuts) if s is not None]
    planned = chunks.plan_chunks(size, end, starts)
    header = prefix[:end]
    return write_plan(
        obj,
        request.execution_arn,
        planned,
        header_end=end,
        header_lines=header.count(b"\n"),
        size=size,
        round_=round_,
        max_concurrency=settings.concurrency,
        ingest_date=ingest_date,
        mode=formats.SplitMode.BYTE_RANGE,
    )


def _split_in_one_pass(
    request: ProcessRequest,
    settings: LargeObjectSettings,
    contract: Contract,
    *,
    opened: s3.OpenedObject,
    ingest_date: str,
    round_: int,
    remaining_ms: Callable[[], int] | None,
) -> dict[str, Any]:
    """Read the object once as UTF-8 text; write its header and its pieces under work/."""
    obj, arn = request.object, request.execution_arn
    text = formats.utf8_stream(opened.body, contract.input)
    prefix = _read_up_to(text, HEADER_BYTES)
    end = header_end(prefix, len(prefix) < HEADER_BYTES, contract)
    header = prefix[:end]
    s3.put_bytes(obj.bucket, keys.header_key(arn, round_), header)
    on_block = _time_budget(opened, contract, remaining_ms)
    planned: list[chunks.Chunk] = []
    position = end
    in_flight: deque[Future[None]] = deque()
    with ThreadPoolExecutor(max_workers=PIECE_UPLOADS) as pool:
        for index, piece in enumerate(
            pieces.cut(
                _Prefixed(prefix[end:], text),
                chunks.Dialect.of(contract.input),
                piece_bytes=settings.chunk_bytes,
                max_line_bytes=DEFAULT_MAX_LINE_BYTES,
                on_block=on_block,
            )
        ):
            key = keys.piece_key(arn, round_, index)
            while len(in_flight) >= PIECE_UPLOADS:
                in_flight.popleft().result()
            in_flight.append(pool.submit(s3.put_bytes, obj.bucket, key, piece))
            planned.append(chunks.Chunk(index, position, position + len(piece), key))
            position += len(piece)
        for future in in_flight:
            future.result()
    return write_plan(
        obj,
        arn,
        planned,
        header_end=end,
        header_lines=header.count(b"\n"),
        size=position,
        round_=round_,
        max_concurrency=settings.concurrency,
        ingest_date=ingest_date,
        mode=formats.SplitMode.STREAM,
        header_key=keys.header_key(arn, round_),
    )


def _time_budget(
    opened: s3.OpenedObject, contract: Contract, remaining_ms: Callable[[], int] | None
) -> Callable[[], None] | None:
    """Called after each block the pass reads: ObjectTooLargeError, naming the largest
    object this function can read in its Timeout, as soon as this one cannot finish."""
    if remaining_ms is None:
        return None
    started = time.monotonic()
    limit = remaining_ms() / 1000
    budget = TimeBudget(opened.size, limit_seconds=limit)

    def check() -> None:
        elapsed = time.monotonic() - started
        try:
            budget.check(opened.bytes_read(), elapsed, limit - elapsed)
        except ObjectTooLargeError as exc:
            rate = int(exc.details.get("bytesPerSecond") or 0)
            largest = int(rate * (limit - budget.margin_seconds))
            what = formats.describe(contract.input, gzipped=True)
            raise ObjectTooLargeError(
                f"{exc.message.split('. Raise')[0]}. Objects that cannot be cut at byte "
                f"offsets ({what}, or another encoding than UTF-8) are read in one ordered "
                f"pass by SplitObjectFunction: at this rate it reads at most about "
                f"{largest // 1_000_000} MB of such input in its {limit:.0f} s. Split the "
                "file, or upload it uncompressed as UTF-8 (cut at byte offsets, any size)",
                **{**exc.details, "maxBytes": largest},
            ) from None

    return check


def header_end(prefix: bytes, at_eof: bool, contract: Contract) -> int:
    """Where the header ends (0, or a BOM's length, without one); the header checked as
    the single-Lambda path checks it (its DataError raised: EmptyFileError, HeaderError,
    EncodingError, ...). ``prefix``: the object's first bytes as UTF-8."""
    dialect = chunks.Dialect.of(contract.input)
    end = chunks.header_end(prefix, at_eof=at_eof, dialect=dialect)
    if not dialect.header:
        return end or 0
    checked = prefix if end is None else prefix[:end]
    summary = Summary(dataset=contract.dataset)
    list(convert(io.BytesIO(checked), contract, summary, stop_at=len(checked)))
    if end is None:  # the conversion found no error in the first bytes, and no header
        raise LineTooLongError(f"the header is longer than {len(prefix)} bytes", line=1)
    return end


def _read_up_to(stream: IO[bytes], size: int) -> bytes:
    """The first ``size`` bytes of ``stream`` (fewer only at its end)."""
    parts: list[bytes] = []
    left = size
    while left > 0 and (block := stream.read(left)):
        parts.append(block)
        left -= len(block)
    return b"".join(parts)


class _Prefixed:
    """``head``, then the rest of ``stream``."""

    def __init__(self, head: bytes, stream: IO[bytes]) -> None:
        self._head = head
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        if self._head:
            head, self._head = self._head, b""
            return head
        return self._stream.read(size)


handler_imported(__name__)  # last: freezes what the import made (a cold start)
