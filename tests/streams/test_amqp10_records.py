"""A 0-9-1 publish to a stream is stored as the AMQP 1.0 message RabbitMQ 4 stores for it:
the writer's per-kind encoding gives the bytes of the full conversion."""

from __future__ import annotations

import pytest

from amqp_protocol import SPEC_0_9_1
from amqp_protocol.amqp10 import from_amqp091
from broker.model.message import Message
from broker.streams.amqp10_records import Amqp10Writer

BASIC = SPEC_0_9_1.properties("basic")


@pytest.mark.parametrize("size", [0, 1, 255, 256, 70_000])
def test_the_writer_stores_what_the_full_conversion_gives(size: int) -> None:
    messages = [
        Message("ex", "key", BASIC(content_type="text/plain", headers={"h": 1}), b"a" * size),
        Message("ex", "key", BASIC(content_type="text/plain", headers={"h": 1}), b"b" * size),
        Message("ex", "other", BASIC(delivery_mode=2, message_id="m"), b"c" * size),
        Message("", "q", BASIC(type="amqp-1.0"), from_amqp091({}, b"inner")),
    ]
    writer = Amqp10Writer()
    for message in messages:
        expected = from_amqp091(
            message.properties.present(), message.body, message.exchange, message.routing_key
        )
        assert writer.encode(message) == expected


def test_messages_that_differ_only_in_their_ids_are_stored_as_the_full_conversion() -> None:
    """The cut around the first id of a shape gives every later id of its length the bytes
    of the full conversion; ids whose bytes are found elsewhere too (here the exchange's
    name, a header's value), an empty id and a urn:uuid id take the full conversion."""
    ids = [
        *(f"q:0:{row}" for row in range(120)),
        "ex",
        "ex",
        "xy",
        "1",
        "v",
        "",
        "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66",
        "urn:uuid:00000000-0000-0000-0000-000000000000",
    ]
    writer = Amqp10Writer()
    for index, message_id in enumerate(ids):
        properties = BASIC(message_id=message_id, content_type="text/plain", headers={"h": "v"})
        message = Message("ex", "key", properties, b"body %d" % index)
        expected = from_amqp091(properties.present(), message.body, "ex", "key")
        assert writer.encode(message) == expected, message_id
