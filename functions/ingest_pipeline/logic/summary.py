"""What one conversion did (``Summary``): shared by the converter (``logic/transform.py``),
a contract's processor (``logic/processing.py``), the Parquet writer and the handlers.

A module of its own so that the transform and the processing step both import it and
neither imports the other back (no import cycle, not even a TYPE_CHECKING one).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Summary:
    """What one conversion did; small enough to travel in the state machine's state."""

    dataset: str
    rows: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    sha256: str = ""
    lines: int = 0  # physical lines read (set when the conversion completes)
    _digest: Any = field(default_factory=hashlib.sha256, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "rows": self.rows,
            "bytesIn": self.bytes_in,
            "bytesOut": self.bytes_out,
            "sha256": self.sha256,
        }
