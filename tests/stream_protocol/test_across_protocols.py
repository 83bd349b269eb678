"""A message published over either protocol is read over either, the same on the bundled
broker as on RabbitMQ 4; rstream publishes and consumes on both."""

from __future__ import annotations

import uuid
from typing import Any

import pika
from rstream import AMQPMessage

from amqp_protocol.amqp10 import decode_message, from_amqp091
from testbed.raw_stream_client import OK, RawClient
from tests.protocol.amqp10.stream_client import delete, publish, read_stored
from tests.stream_protocol.conftest import Endpoints

PROPERTIES = pika.BasicProperties(
    content_type="text/plain",
    headers={"color": "red", "count": 3},
    message_id="id-1",
    delivery_mode=2,
)


def _stream(endpoints: Endpoints) -> str:
    name = f"across-{uuid.uuid4().hex[:8]}"
    with RawClient(endpoints.stream) as c:
        assert c.handshake() == OK
        assert c.create(name) == OK
    return name


def consume_091(endpoints: Endpoints, stream: str, count: int) -> list[tuple[Any, bytes]]:
    """``count`` deliveries from the stream's start over 0-9-1: properties and body."""
    connection = pika.BlockingConnection(pika.URLParameters(endpoints.amqp))
    try:
        channel = connection.channel()
        channel.basic_qos(prefetch_count=100)
        got: list[tuple[Any, bytes]] = []
        arguments = {"x-stream-offset": "first"}
        for method, properties, body in channel.consume(
            stream, arguments=arguments, inactivity_timeout=10
        ):
            assert method is not None, f"only {len(got)} of {count} deliveries"
            got.append((properties, body))
            channel.basic_ack(method.delivery_tag)
            if len(got) == count:
                break
        channel.cancel()
        return got
    finally:
        connection.close()


def test_091_publish_reads_as_the_same_amqp10_bytes(endpoints: Endpoints) -> None:
    stream = _stream(endpoints)
    try:
        connection = pika.BlockingConnection(pika.URLParameters(endpoints.amqp))
        channel = connection.channel()
        channel.confirm_delivery()
        channel.basic_publish("", stream, b"over 0-9-1", PROPERTIES)
        connection.close()
        # the bytes RabbitMQ 4 stores for this publish (amqp_protocol.amqp10's measured mapping)
        (stored,) = read_stored(endpoints.stream, stream, 1)
        # equal as messages: RabbitMQ writes the properties list's trailing nulls, the codec not
        assert decode_message(stored) == decode_message(_expected_amqp10(stream))
    finally:
        delete(endpoints.stream, stream)


def _expected_amqp10(stream: str) -> bytes:
    properties = {
        "content_type": "text/plain",
        "headers": {"color": "red", "count": 3},
        "message_id": "id-1",
        "delivery_mode": 2,
    }
    return from_amqp091(properties, b"over 0-9-1", "", stream)


def test_stream_publish_consumed_over_091(endpoints: Endpoints) -> None:
    stream = _stream(endpoints)
    try:
        message = AMQPMessage(body=b"over the stream protocol", application_properties={"k": "v"})
        publish(endpoints.stream, stream, [message])
        ((properties, body),) = consume_091(endpoints, stream, 1)
        assert body == b"over the stream protocol"
        assert properties.headers["k"] == "v"
        assert properties.headers["x-stream-offset"] >= 0
    finally:
        delete(endpoints.stream, stream)


def test_bundled_gives_091_consumers_non_amqp10_bytes_as_the_body(
    bundled_endpoints: Endpoints,
) -> None:
    """RabbitMQ 4 closes the 0-9-1 consumer's connection with 541 INTERNAL_ERROR for a record
    that is no AMQP 1.0 message; the bundled broker delivers the bytes as they are."""
    stream = _stream(bundled_endpoints)
    try:
        publish(bundled_endpoints.stream, stream, [b"not an AMQP 1.0 message"])
        ((properties, body),) = consume_091(bundled_endpoints, stream, 1)
        assert body == b"not an AMQP 1.0 message"
        assert properties.headers == {"x-stream-offset": 0}
    finally:
        delete(bundled_endpoints.stream, stream)


def test_rstream_reads_back_what_it_published(endpoints: Endpoints) -> None:
    stream = _stream(endpoints)
    bodies = [f"message {i}".encode() for i in range(50)]
    try:
        publish(endpoints.stream, stream, bodies)
        assert read_stored(endpoints.stream, stream, len(bodies)) == bodies
    finally:
        delete(endpoints.stream, stream)
