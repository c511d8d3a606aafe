"""Will an object finish in the time its function has? Pure: no AWS access, no clock.

ProcessFunction streams an object from S3 through the transform and back to S3. A file too
large for the function's Timeout used to time out, be retried by the workflow, classified
TRANSIENT and retried again by the reconciler, for hours, before anyone was told. Instead,
once the throughput is known (after a short warm-up), ``TimeBudget.check`` projects the time
the rest needs and raises ``ObjectTooLargeError`` (a configuration problem: the deployment's
Timeout / MemorySize do not fit this file) as soon as it cannot finish, with the object's
size, the limit and the rate in the error. Retrying it would only fail again.
"""

from __future__ import annotations

from msgspec import Struct

from ingest_pipeline.errors import ObjectTooLargeError

# Kept for the rest of the invocation (the upload's last part, recording the result), and
# measured before projecting: both a tenth of the limit, at most these.
MAX_MARGIN_SECONDS = 15.0
MAX_WARMUP_SECONDS = 5.0


class TimeBudget(Struct, frozen=True):
    size: int  # bytes of the object
    limit_seconds: float  # the function's whole time (its Timeout)

    @property
    def margin_seconds(self) -> float:
        return min(MAX_MARGIN_SECONDS, 0.1 * self.limit_seconds)

    @property
    def warmup_seconds(self) -> float:
        return min(MAX_WARMUP_SECONDS, 0.1 * self.limit_seconds)

    def check(self, done: int, elapsed: float, remaining: float) -> None:
        """Raise ObjectTooLargeError when, at the rate so far, the ``size - done`` bytes
        left cannot be read in ``remaining`` seconds less the margin."""
        if elapsed < self.warmup_seconds or done <= 0 or done >= self.size:
            return
        rate = done / elapsed
        needed = elapsed + (self.size - done) / rate
        if (self.size - done) / rate <= remaining - self.margin_seconds:
            return
        raise ObjectTooLargeError(
            f"a {_size(self.size)} object cannot be processed in the {self.limit_seconds:.0f} s "
            f"the function has (its Timeout): at {rate / 1e6:.1f} MB/s it needs about "
            f"{needed:.0f} s. Raise ProcessFunction's MemorySize (more CPU) and Timeout "
            "(at most 900 s), or split the file; then `ingestctl reprocess --key <key>`",
            size=self.size,
            limitSeconds=round(self.limit_seconds),
            bytesPerSecond=round(rate),
            neededSeconds=round(needed),
        )


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
