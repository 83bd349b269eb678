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

from amqp_protocol.amqp10.amqp091 import amqp091_view
from amqp_protocol.amqp10.message import decode_message

#: The basic properties the columns carry, in the schema's order.
PROPERTY_COLUMNS: tuple[str, ...] = (
    "timestamp",
    "content_type",
    "content_encoding",
    "delivery_mode",
    "priority",
    "correlation_id",
    "reply_to",
    "expiration",
    "message_id",
    "type",
    "user_id",
    "app_id",
    "headers",
)
COLUMNS: tuple[str, ...] = ("body", "routing_key", "exchange", "offset", *PROPERTY_COLUMNS)


def decode_columns(
    records: Iterable[bytes | memoryview], queue: str, first_offset: int
) -> dict[str, list[Any]]:
    """The columns of ``records``, consecutive entries of stream ``queue`` from
    ``first_offset`` on (each gets its ``x-stream-offset`` header, as over 0-9-1)."""
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    bodies, routing_keys, exchanges, offsets = (
        columns["body"],
        columns["routing_key"],
        columns["exchange"],
        columns["offset"],
    )
    properties = [(name, columns[name]) for name in PROPERTY_COLUMNS]
    offset = first_offset
    for record in records:
        delivery = amqp091_view(decode_message(record), queue, offset)
        bodies.append(delivery.body)
        routing_keys.append(delivery.routing_key)
        exchanges.append(delivery.exchange)
        offsets.append(offset)
        get = delivery.properties.get
        for name, column in properties:
            column.append(get(name))
        offset += 1
    return columns
