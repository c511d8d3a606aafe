"""Keep e-mail addresses out of processed/: ``ada@example.com`` becomes ``a***@example.com``.

The worked example of docs/your-own-processing.md: a dataset whose contract says
``"processor": "mask_emails"`` has every record go through ``process``.
"""

from __future__ import annotations

from typing import Any

from ingest_pipeline.errors import ValueTypeError


def process(record: dict[str, Any]) -> dict[str, Any] | None:
    email = record.get("email")
    if email is None:  # an optional column left empty
        return record
    local, at, domain = email.partition("@")
    if not at or not local or "." not in domain:
        raise ValueTypeError(f"email {email!r} is not an address")
    return {**record, "email": f"{local[0]}***@{domain}"}
