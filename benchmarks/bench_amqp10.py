"""Decoding stored stream messages (AMQP 1.0) into the source's columns: ours
(``amqp_protocol.amqp10``) against rstream 1.1's vendored decoder (``_pyamqp``, a message
object per record, no columns), on 100 B messages stored as RabbitMQ stores 0-9-1 publishes:
without properties, with a few properties and headers alike in every message, and with a
message id and timestamp of their own (every message different before its body)."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

from amqp_protocol import SPEC_0_9_1
from amqp_protocol.amqp10 import StoredColumns, decode_message, from_amqp091
from benchmarks.common import Row, compare, min_seconds, row

BATCH = 1000
BODY = b"x" * 100
PROPERTIES: dict[str, Any] = {
    "content_type": "application/json",
    "delivery_mode": 2,
    "headers": {"a": "1", "b": 2, "x-c": "3"},
}


def _records() -> dict[str, list[memoryview]]:
    bare = memoryview(from_amqp091({}, BODY, "", "stream"))
    alike = memoryview(from_amqp091(PROPERTIES, BODY, "", "stream"))
    distinct = [
        memoryview(
            from_amqp091(
                {**PROPERTIES, "message_id": f"m-{i}", "timestamp": 1700000000 + i},
                BODY,
                "",
                "stream",
            )
        )
        for i in range(BATCH)
    ]
    return {
        "no properties": [bare] * BATCH,
        "properties + 3 headers, alike": [alike] * BATCH,
        "properties + 3 headers, own message id and timestamp": distinct,
    }


def _to_columns(records: list[memoryview]) -> StoredColumns:
    columns = StoredColumns("stream")
    columns.add(records, 0)
    return columns


def _each(decoder: Callable[[memoryview], object], records: list[memoryview]) -> object:
    return [decoder(record) for record in records]


def run(quick: bool) -> list[Row]:
    # rstream's decoder is private (a vendored copy of uamqp's): no public name to import.
    decode_payload = importlib.import_module("rstream._pyamqp._decode").decode_payload
    seconds = min_seconds(quick)
    rows = []
    for name, records in _records().items():
        reference = functools.partial(_each, decode_payload, records)
        ways: dict[str, Callable[[], object]] = {
            "to columns": functools.partial(_to_columns, records),
            "to Message objects": functools.partial(_each, decode_message, records),
        }
        for way, ours in ways.items():
            ours_rate, reference_rate = compare(ours, reference, seconds)
            rows.append(
                row(
                    f"AMQP 1.0 {way}, 100 B, {name}",
                    "msg/s",
                    ours_rate * BATCH,
                    reference_rate * BATCH,
                    "rstream decode",
                )
            )
    rows.append(_encoding_row(seconds))
    return rows


def _encoding_row(seconds: float) -> Row:
    """What the sink does per row: a message with a few properties and headers encoded."""
    rstream = importlib.import_module("rstream")
    basic = SPEC_0_9_1.properties("basic")(**PROPERTIES)
    reference_properties = rstream.Properties(content_type=PROPERTIES["content_type"])
    headers = PROPERTIES["headers"]

    def ours() -> object:
        return from_amqp091(basic, BODY)

    def reference() -> object:
        message = rstream.AMQPMessage(
            body=BODY, properties=reference_properties, application_properties=headers
        )
        return bytes(message)

    ours_rate, reference_rate = compare(ours, reference, seconds)
    return row(
        "AMQP 1.0 encode of a row (100 B, properties + 3 headers)",
        "msg/s",
        ours_rate,
        reference_rate,
        "rstream AMQPMessage",
    )
