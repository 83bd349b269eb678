"""A stream delivery's content header is the log's, patched with the x-stream-offset
header: byte for byte what encoding the decoded properties with that header gives."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from amqp_protocol import SPEC_0_9_1
from amqp_protocol.values import Long
from broker.model.message import Message
from broker.store.message_codec import encode_message
from broker.streams.delivery import OFFSET_HEADER, chunk_deliveries
from broker.streams.log import Record

Properties = SPEC_0_9_1.properties("basic")

PROPERTY_SETS: list[dict[str, Any]] = [
    {},
    {"content_type": "text/plain"},
    {"content_encoding": "gzip", "delivery_mode": 2},
    {"content_type": "application/json", "content_encoding": "utf-8", "priority": 3},
    {"headers": {}},
    {"headers": {"a": 1, "b": "two", "nested": {"c": [1, 2.5, None]}}},
    {"content_type": "t", "headers": {"k": b"v"}, "message_id": "m", "app_id": "app"},
    {
        "content_type": "t",
        "content_encoding": "e",
        "headers": {"h": True},
        "delivery_mode": 1,
        "priority": 9,
        "correlation_id": "c",
        "reply_to": "r",
        "expiration": "60000",
        "message_id": "id",
        "timestamp": int(datetime.datetime(2026, 1, 1).timestamp()),
        "type": "ty",
        "user_id": "guest",
        "app_id": "a",
        "reserved": "cl",
    },
    # Already has the header (consumed from a stream, published again): replaced in place.
    {"headers": {"x-stream-offset": 5, "after": 1}},
]


def _expected_header(properties: dict[str, Any], body: bytes, offset: int) -> bytes:
    headers = {**(properties.get("headers") or {}), OFFSET_HEADER: Long(offset)}
    return Properties(**{**properties, "headers": headers}).encode_header(len(body))


@pytest.mark.parametrize("properties", PROPERTY_SETS)
def test_the_patched_header_is_what_encoding_the_decoded_one_gives(
    properties: dict[str, Any],
) -> None:
    body = b"payload"
    message = Message("ex", "rk", Properties(**properties), body)
    records = [Record(offset, 0, encode_message(message)) for offset in (7, 1 << 40)]
    for record, delivery in zip(records, chunk_deliveries(records, sink=None), strict=True):
        delivered = delivery.message
        assert delivered.header_payload == _expected_header(properties, body, record.offset)
        assert delivered.envelope == message.envelope
        assert (delivered.exchange, delivered.routing_key, delivered.body) == ("ex", "rk", body)
        headers = delivered.properties.headers
        assert headers[OFFSET_HEADER] == record.offset
        assert isinstance(headers[OFFSET_HEADER], Long)
        assert delivery.offset == record.offset


def test_records_of_a_chunk_with_different_headers_each_get_their_own() -> None:
    messages = [
        Message("", f"q{i}", Properties(**properties), b"x" * i)
        for i, properties in enumerate(PROPERTY_SETS)
    ]
    records = [Record(100 + i, 0, encode_message(m)) for i, m in enumerate(messages)]
    deliveries = chunk_deliveries(records, sink="sink")
    for i, (delivery, properties) in enumerate(zip(deliveries, PROPERTY_SETS, strict=True)):
        assert delivery.message.header_payload == _expected_header(properties, b"x" * i, 100 + i)
        assert delivery.message.routing_key == f"q{i}"
        assert delivery.sink == "sink"
