"""Decoding stored stream messages (AMQP 1.0) into the source's columns: ours
(``amqp_protocol.amqp10``) against rstream 1.1's vendored decoder (``_pyamqp``, a message
object per record), on the message a 0-9-1 publish with a few properties is stored as and on
a bare 100 B data message."""

from __future__ import annotations

from amqp_protocol.amqp10 import decode_columns, decode_message, from_amqp091
from benchmarks.common import Row, compare, min_seconds, row

BATCH = 100
MESSAGES = {
    "0-9-1 publish with properties and 3 headers": from_amqp091(
        {
            "content_type": "application/json",
            "delivery_mode": 2,
            "message_id": "m-1",
            "timestamp": 1700000000,
            "headers": {"a": "1", "b": 2, "x-c": "3"},
        },
        b"x" * 100,
        "",
        "stream",
    ),
    "bare 100 B data message": from_amqp091({}, b"x" * 100),
}


def run(quick: bool) -> list[Row]:
    from rstream._pyamqp._decode import decode_payload  # type: ignore[import-untyped]

    seconds = min_seconds(quick)
    rows = []
    for name, data in MESSAGES.items():
        records = [memoryview(data)] * BATCH

        def ours_columns(records: list[memoryview] = records) -> object:
            return decode_columns(records, "stream", 0)

        def ours_messages(records: list[memoryview] = records) -> object:
            return [decode_message(r) for r in records]

        def rstream(records: list[memoryview] = records) -> object:
            return [decode_payload(r) for r in records]

        ours, reference = compare(ours_columns, rstream, seconds)
        rows.append(
            row(f"AMQP 1.0 to columns, {name}", "msg/s", ours * BATCH, reference * BATCH, "rstream")
        )
        ours, reference = compare(ours_messages, rstream, seconds)
        rows.append(
            row(f"AMQP 1.0 decode, {name}", "msg/s", ours * BATCH, reference * BATCH, "rstream")
        )
    return rows
