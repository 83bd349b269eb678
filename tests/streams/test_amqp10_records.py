"""Records as the stream protocol serves them: the per-chunk conversion (sections before
the body encoded once per distinct header) gives the bytes of the full conversion, and a
stream-protocol record is served as it came and delivered over 0-9-1 as RabbitMQ 4 would."""

from __future__ import annotations

import pytest

from amqp_protocol import SPEC_0_9_1
from amqp_protocol.amqp10 import from_amqp091
from amqp_protocol.values import Long
from broker.model.message import Message
from broker.store.message_codec import decode_message, encode_message
from broker.streams.amqp10_records import (
    Amqp10Records,
    amqp091_of_raw,
    amqp10_of,
    raw_record,
)

BASIC = SPEC_0_9_1.properties("basic")


def _record(body: bytes, **properties: object) -> bytes:
    return encode_message(Message("ex", "key", BASIC(**properties), body))


@pytest.mark.parametrize("size", [0, 1, 255, 256, 70_000])
def test_chunk_conversion_equals_the_full_conversion(size: int) -> None:
    records = [
        _record(b"a" * size, content_type="text/plain", headers={"h": 1}),
        _record(b"b" * size, content_type="text/plain", headers={"h": 1}),
        _record(b"c" * size, delivery_mode=2, message_id="m"),
        _record(from_amqp091({}, b"inner"), type="amqp-1.0"),
        encode_message(raw_record(b"as published", "s")),
    ]
    converter = Amqp10Records()
    assert [converter.convert(r) for r in records] == [amqp10_of(r) for r in records]


def test_a_raw_record_is_served_as_it_came() -> None:
    assert amqp10_of(encode_message(raw_record(b"\x00Su\xa0\x01x", "s"))) == b"\x00Su\xa0\x01x"


def test_a_raw_record_reaches_091_as_rabbitmq_4_delivers_it() -> None:
    data = from_amqp091({"content_type": "text/plain", "headers": {"k": "v"}}, b"body")
    stored = decode_message(encode_message(raw_record(data, "s")))
    message = amqp091_of_raw(stored, "s", 7, "x-stream-offset")
    assert message.body == b"body"
    assert message.properties.content_type == "text/plain"
    assert message.properties.headers["k"] == "v"
    assert message.properties.headers["x-stream-offset"] == Long(7)
