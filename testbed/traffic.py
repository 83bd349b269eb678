"""Well-behaved pika traffic for the load tests and benchmark: a confirmed publisher and an
acking consumer that counts."""

from __future__ import annotations

import time

import pika


def publish(url: str, queue: str, count: int, size: int) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.queue_declare(queue)
    ch.confirm_delivery()
    body = b"m" * size
    for _ in range(count):
        ch.basic_publish("", queue, body)
    conn.close()


def consume(url: str, queue: str, count: int, timeout: float = 30.0) -> tuple[int, float]:
    """Consume (acking each) until ``count`` messages arrived or ``timeout`` passed: how
    many arrived and the seconds that took."""
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.basic_qos(prefetch_count=200)
    received = 0

    def on_message(channel, method, properties, body):  # type: ignore[no-untyped-def]
        nonlocal received
        received += 1
        channel.basic_ack(method.delivery_tag)

    began = time.monotonic()
    ch.basic_consume(queue, on_message)
    while received < count and time.monotonic() - began < timeout:
        conn.process_data_events(0.01)
    elapsed = time.monotonic() - began
    conn.close()
    return received, elapsed
