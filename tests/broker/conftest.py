"""Fixtures of the broker tests: a pika connection and channel to ``broker_url`` (each test
runs against the bundled broker and RabbitMQ), and unique names so runs do not collide."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel


@pytest.fixture
def connection(broker_url: str) -> Iterator[pika.BlockingConnection]:
    conn = pika.BlockingConnection(pika.URLParameters(broker_url))
    yield conn
    if conn.is_open:
        conn.close()


@pytest.fixture
def channel(connection: pika.BlockingConnection) -> BlockingChannel:
    return connection.channel()


@pytest.fixture
def name() -> str:
    """A name no other test uses, for queues and exchanges."""
    return f"test-{uuid.uuid4().hex[:12]}"
