"""The rows of a ``StoredColumns`` as dicts, for comparing with what a 0-9-1 consumer gets."""

from __future__ import annotations

from typing import Any

from amqp_protocol.amqp10 import StoredColumns
from amqp_protocol.amqp10.columns import FIELDS


def rows_of(columns: StoredColumns) -> list[dict[str, Any]]:
    """Each row of ``columns``: its kind's fields, its body and its offset."""
    offsets = [o for first, count in columns.runs for o in range(first, first + count)]
    return [
        {**dict(zip(FIELDS, columns.fields[kind], strict=True)), "body": body, "offset": offset}
        for kind, body, offset in zip(columns.kinds, columns.bodies, offsets, strict=True)
    ]
