"""Small helpers shared by the broker tests."""

from __future__ import annotations

import time
from typing import Any

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel


def drain(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    queue: str,
    expected: int,
    timeout: float = 5.0,
    **consume_kwargs: object,
) -> list[bytes]:
    """Consume (with auto-ack) until ``expected`` bodies arrived or ``timeout`` passed."""
    bodies: list[bytes] = []
    tag = channel.basic_consume(
        queue, lambda ch, m, p, body: bodies.append(body), auto_ack=True, **consume_kwargs
    )
    deadline = time.monotonic() + timeout
    while len(bodies) < expected and time.monotonic() < deadline:
        connection.process_data_events(0.05)
    channel.basic_cancel(tag)
    return bodies


def get_all(channel: BlockingChannel, queue: str, limit: int = 1000) -> list[bytes]:
    """basic.get with auto-ack until the queue is empty."""
    bodies = []
    for _ in range(limit):
        _, _, body = channel.basic_get(queue, auto_ack=True)
        if body is None:
            break
        bodies.append(body)
    return bodies


def get_when_there(
    channel: BlockingChannel, queue: str, timeout: float = 5.0
) -> tuple[Any, Any, bytes]:
    """basic.get (acked by the caller) until a message is there: a quorum queue on RabbitMQ
    puts a returned message back asynchronously."""
    for _ in range(int(timeout / 0.05)):
        method, properties, body = channel.basic_get(queue)
        if method is not None:
            return method, properties, body
        channel.connection.sleep(0.05)
    pytest.fail(f"no message in {queue} within {timeout}s")
