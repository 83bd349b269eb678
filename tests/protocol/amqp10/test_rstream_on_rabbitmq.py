"""The test RabbitMQ 4 node serves the stream protocol: rstream publishes to it and reads
back what it published (through the node's Metadata answer too: rstream connects to the
stream's leader where the node advertises it), and its AMQP 1.0 messages decode with ours."""

from __future__ import annotations

import uuid

import pytest
from rstream import AMQPMessage
from rstream import Properties as RstreamProperties

from amqp_protocol.amqp10 import Message, Properties, decode_message
from tests.protocol.amqp10.stream_client import delete, publish, read_stored

pytestmark = pytest.mark.rabbitmq


def test_rstream_reads_back_what_it_published(rabbitmq_stream_url: str) -> None:
    stream = f"rstream-smoke-{uuid.uuid4().hex[:8]}"
    bodies = [f"message {i}".encode() for i in range(5)]
    try:
        publish(rabbitmq_stream_url, stream, bodies)
        assert read_stored(rabbitmq_stream_url, stream, len(bodies)) == bodies
    finally:
        delete(rabbitmq_stream_url, stream)


def test_rstreams_amqp10_messages_decode_as_they_were_built(rabbitmq_stream_url: str) -> None:
    stream = f"rstream-amqp10-{uuid.uuid4().hex[:8]}"
    sent = AMQPMessage(
        body=b"hi",
        properties=RstreamProperties(message_id="m1", content_type="text/plain"),
        application_properties={"k": "v"},
    )
    try:
        publish(rabbitmq_stream_url, stream, [sent])
        (stored,) = read_stored(rabbitmq_stream_url, stream, 1)
    finally:
        delete(rabbitmq_stream_url, stream)
    assert decode_message(stored) == Message(
        body=[b"hi"],
        properties=Properties(message_id="m1", content_type="text/plain"),
        application_properties={"k": "v"},
    )
