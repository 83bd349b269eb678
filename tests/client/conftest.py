"""A connection, a channel and a private queue on the broker under test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from amqp_spark.client import Channel, Connection, connect


@pytest.fixture
def connection(broker_url: str) -> Iterator[Connection]:
    with connect(broker_url) as conn:
        yield conn


@pytest.fixture
def channel(connection: Connection) -> Iterator[Channel]:
    with connection.channel() as ch:
        yield ch


@pytest.fixture
def queue(channel: Channel) -> str:
    """A server-named exclusive queue, deleted with the connection."""
    return str(channel.queue_declare("", exclusive=True).queue)


def message_count(channel: Channel, queue: str) -> int:
    return int(channel.queue_declare(queue, passive=True).message_count)
