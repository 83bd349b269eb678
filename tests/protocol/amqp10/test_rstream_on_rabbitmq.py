"""The test RabbitMQ 4 node serves the stream protocol: rstream publishes to it and reads
back what it published (through the node's Metadata answer too: rstream connects to the
stream's leader where the node advertises it)."""

from __future__ import annotations

import uuid

import pytest

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
