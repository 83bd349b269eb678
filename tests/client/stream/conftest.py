"""The stream-protocol endpoint of the broker under test, and a client connected to it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from amqp_spark.client.stream import StreamClient, connect


@pytest.fixture
def stream_url(rabbitmq_stream_url: str) -> str:
    return rabbitmq_stream_url


@pytest.fixture
def client(stream_url: str) -> Iterator[StreamClient]:
    with connect(stream_url) as conn:
        yield conn


@pytest.fixture
def stream(client: StreamClient) -> Iterator[str]:
    """A new stream, deleted after the test."""
    name = f"client-stream-{uuid.uuid4().hex[:8]}"
    assert client.create_stream(name)
    yield name
    if client.is_open:
        client.delete_stream(name)
