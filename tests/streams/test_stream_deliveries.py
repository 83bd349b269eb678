"""A 0-9-1 delivery of a stream record (an AMQP 1.0 message) is what RabbitMQ 4 delivers
for it (``to_amqp091``) with the x-stream-offset header a long: the content header built
from a record's kind (converted once, the offset patched in) is byte for byte the encoding
of the full conversion."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from amqp_protocol import SPEC_0_9_1
from amqp_protocol.amqp10 import from_amqp091, to_amqp091
from amqp_protocol.values import Long
from broker.model.message import Message
from broker.streams.amqp10_records import Amqp10Writer
from broker.streams.delivery import OFFSET_HEADER, Amqp091Reader
from broker.streams.log import Record

Properties = SPEC_0_9_1.properties("basic")
QUEUE = "s"

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
        "headers": {"h": True, "zz": 1},
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
    },
    # Already has the header (consumed from a stream, published again): replaced.
    {"headers": {"x-stream-offset": 5, "after": 1}},
]


def _expected_header(record: bytes, offset: int) -> bytes:
    delivery = to_amqp091(record, QUEUE, offset)
    fields = dict(delivery.properties)
    fields["headers"] = {**fields["headers"], OFFSET_HEADER: Long(offset)}
    return Properties(**fields).encode_header(len(delivery.body))


@pytest.mark.parametrize("properties", PROPERTY_SETS)
@pytest.mark.parametrize("body", [b"", b"payload", b"x" * 300])
def test_a_delivery_is_what_rabbitmq_4_delivers_for_the_stored_message(
    properties: dict[str, Any], body: bytes
) -> None:
    message = Message("ex", "rk", Properties(**properties), body)
    stored = Amqp10Writer().encode(message)
    records = [Record(offset, 0, stored) for offset in (7, 1 << 40)]
    deliveries = Amqp091Reader(QUEUE).deliveries(records, sink=None)
    for record, delivery in zip(records, deliveries, strict=True):
        delivered = delivery.message
        assert delivered.header_payload == _expected_header(stored, record.offset)
        assert (delivered.exchange, delivered.routing_key, delivered.body) == ("ex", "rk", body)
        headers = delivered.properties.headers
        assert headers[OFFSET_HEADER] == record.offset
        assert isinstance(headers[OFFSET_HEADER], Long)
        assert delivery.offset == record.offset


def test_records_of_a_chunk_with_different_kinds_each_get_their_own() -> None:
    writer = Amqp10Writer()
    records = [
        Record(100 + i, 0, writer.encode(Message("", f"q{i}", Properties(**p), b"x" * i)))
        for i, p in enumerate(PROPERTY_SETS)
    ]
    deliveries = Amqp091Reader(QUEUE).deliveries(records, sink="sink")
    for record, delivery in zip(records, deliveries, strict=True):
        assert delivery.message.header_payload == _expected_header(record.payload, record.offset)
        assert delivery.message.routing_key == f"q{record.offset - 100}"
        assert delivery.sink == "sink"


@pytest.mark.parametrize(
    "record",
    [
        from_amqp091({"type": "amqp-1.0"}, from_amqp091({}, b"inner")),  # amqp-value body
        from_amqp091({}, b"a") + b"\x00\x53\x75\xa0\x01b",  # two data sections
    ],
)
def test_a_record_of_another_shape_is_converted_whole(record: bytes) -> None:
    delivery = Amqp091Reader(QUEUE).deliveries([Record(3, 0, record)], sink=None)[0]
    expected = to_amqp091(record, QUEUE, 3)
    assert delivery.message.body == expected.body
    assert delivery.message.properties.headers[OFFSET_HEADER] == Long(3)


def test_bytes_that_are_no_amqp_10_message_come_as_the_body() -> None:
    delivery = Amqp091Reader(QUEUE).deliveries([Record(9, 0, b"\x01not amqp")], sink=None)[0]
    assert delivery.message.body == b"\x01not amqp"
    assert delivery.message.properties.headers == {OFFSET_HEADER: Long(9)}


def test_a_record_cut_short_after_one_of_its_kind_comes_as_its_bytes() -> None:
    whole = from_amqp091({"content_type": "t"}, b"body")
    cut = whole[: -len(b"body") - 1]  # its data section's size byte and body missing
    records = [Record(0, 0, whole), Record(1, 0, cut)]
    first, second = Amqp091Reader(QUEUE).deliveries(records, sink=None)
    assert first.message.body == b"body"
    assert second.message.body == cut
    assert second.message.properties.headers == {OFFSET_HEADER: Long(1)}
