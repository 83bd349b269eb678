"""Stored stream messages to the source's columns, as a 0-9-1 consumer of RabbitMQ 4 would
have them: one Python list per column, ready for ``pyarrow.array``.

The columns are those of ``amqp_spark.schema`` that a stored message determines (``body``,
``exchange``, ``routing_key``, ``offset``, ``timestamp`` in whole seconds, ``headers`` as the
0-9-1 codec's dicts, ``delivery_mode``, ``priority`` and the string properties); the source
fills the rest (queue, delivery tag, redelivered) and renders ``headers`` and ``timestamp``
as it does for 0-9-1 deliveries (``amqp_spark.source.arrow``), so a row read over the
stream protocol equals the row read over 0-9-1.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from amqp_protocol.amqp10.amqp091 import PROPERTY_FIELDS, body_091, delivery_fields
from amqp_protocol.amqp10.message import DATA, split_sections
from amqp_protocol.amqp10.types import Buffer

#: The columns ``decode_columns`` fills, the basic properties in ``PROPERTY_FIELDS``' order.
COLUMNS: tuple[str, ...] = ("body", "offset", *PROPERTY_FIELDS, "exchange", "routing_key")


def decode_columns(
    records: Iterable[Buffer], queue: str, first_offset: int
) -> dict[str, list[Any]]:
    """The columns of ``records``, consecutive entries of stream ``queue`` from
    ``first_offset`` on (each gets its ``x-stream-offset`` header, as over 0-9-1)."""
    bodies: list[bytes] = []
    offsets: list[int] = []
    rows: list[tuple[Any, ...]] = []
    offset = first_offset
    for record in records:
        sections = split_sections(record)
        rows.append(
            delivery_fields(
                sections.header,
                sections.message_annotations,
                sections.properties,
                sections.application_properties,
                sections.body_code == DATA,
                queue,
                offset,
            )
        )
        bodies.append(body_091(sections, record))
        offsets.append(offset)
        offset += 1
    columns: dict[str, list[Any]] = {"body": bodies, "offset": offsets}
    transposed = list(zip(*rows, strict=True)) if rows else [()] * (len(COLUMNS) - 2)
    for name, column in zip(COLUMNS[2:], transposed, strict=True):
        columns[name] = list(column)
    return columns
