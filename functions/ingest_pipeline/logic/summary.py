"""What one conversion did (``Summary``): shared by the converter (``logic/transform.py``),
a contract's processor (``logic/processing.py``), the Parquet writer and the handlers.

A module of its own so that the transform and the processing step both import it and
neither imports the other back (no import cycle, not even a TYPE_CHECKING one).
"""

from __future__ import annotations

import hashlib
from typing import Any

from msgspec import Struct, field


class Summary(Struct):
    """What one conversion did; small enough to travel in the state machine's state. (A
    Struct: a dataclass compiles its generated methods at every import.)"""

    dataset: str
    rows: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    sha256: str = ""
    lines: int = 0  # physical lines read (set when the conversion completes)
    _digest: Any = field(default_factory=hashlib.sha256)

    def __repr__(self) -> str:  # without the digest, as the dataclass's repr=False had it
        fields = ("dataset", "rows", "bytes_in", "bytes_out", "sha256", "lines")
        return f"Summary({', '.join(f'{name}={getattr(self, name)!r}' for name in fields)})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "rows": self.rows,
            "bytesIn": self.bytes_in,
            "bytesOut": self.bytes_out,
            "sha256": self.sha256,
        }
