"""Helpers of the sink tests: an independent consumer (pika) and exchange/queue set-up."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pika


@dataclass
class Received:
    """One message as pika saw it."""

    exchange: str
    routing_key: str
    properties: Any  # pika.BasicProperties
    body: bytes


@contextmanager
def pika_channel(url: str) -> Iterator[Any]:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        yield conn.channel()
    finally:
        conn.close()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def bound_queue(url: str, exchange: str, exchange_type: str = "direct", key: str = "k") -> str:
    """Declare ``exchange`` (unless it is the default one) and a queue bound to it."""
    queue = unique("sinkq")
    with pika_channel(url) as ch:
        if exchange:
            ch.exchange_declare(exchange, exchange_type, auto_delete=False)
        ch.queue_declare(queue)
        if exchange:
            ch.queue_bind(queue, exchange, routing_key=key)
    return queue


def consume(url: str, queue: str, count: int, timeout: float = 60.0) -> list[Received]:
    """Exactly the ``count`` messages of ``queue`` (acked), or fewer if ``timeout`` ran out;
    then checks that nothing more is there."""
    got: list[Received] = []
    deadline = time.monotonic() + timeout
    with pika_channel(url) as ch:
        while len(got) < count and time.monotonic() < deadline:
            method, properties, body = ch.basic_get(queue, auto_ack=True)
            if method is None:
                time.sleep(0.05)
                continue
            got.append(Received(method.exchange, method.routing_key, properties, body))
        if len(got) == count:
            method, _, _ = ch.basic_get(queue, auto_ack=True)
            assert method is None, f"more than the {count} expected messages in {queue}"
    return got
