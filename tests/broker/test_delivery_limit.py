"""``x-delivery-limit`` as 0-9-1 clients know it from RabbitMQ's quorum queues: each
delivery carries ``x-delivery-count`` (the returns so far, 0 at first), and a message returned more
times than the limit is dead-lettered with reason ``delivery_limit``. The queue is a quorum
queue: over 0-9-1 both brokers refuse the argument on a classic queue
(``test_classic_delivery_limit``); the bundled broker's 0-9 lanes take it on any queue
(rule basic.deliver:01, tests/spec09)."""

from __future__ import annotations

from typing import Any

import pika
from pika.adapters.blocking_connection import BlockingChannel

from .helpers import get_when_there

LIMIT = 2


def _declare(connection: pika.BlockingConnection, channel: BlockingChannel, name: str) -> str:
    """``name`` with the delivery limit, dead-lettering to a new queue; that queue's name."""
    dlq = channel.queue_declare(f"{name}-dlq").method.queue
    arguments: dict[str, Any] = {
        "x-delivery-limit": LIMIT,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": dlq,
    }
    arguments["x-queue-type"] = "quorum"
    channel.queue_declare(name, durable=True, arguments=arguments)
    return dlq


def test_nacked_redeliveries_count_and_the_last_one_is_dead_lettered(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    dlq = _declare(connection, channel, name)
    channel.basic_publish("", name, b"poison")
    seen = []
    for _ in range(LIMIT + 1):
        method, properties, _ = get_when_there(channel, name)
        seen.append((method.redelivered, (properties.headers or {}).get("x-delivery-count")))
        channel.basic_nack(method.delivery_tag, requeue=True)
    method, properties, body = get_when_there(channel, dlq)
    channel.basic_ack(method.delivery_tag)
    assert seen == [(False, 0), (True, 1), (True, 2)]
    assert body == b"poison"
    death = properties.headers["x-death"][0]
    assert (death["reason"], death["queue"], death["count"]) == ("delivery_limit", name, 1)
    assert properties.headers["x-first-death-reason"] == "delivery_limit"
    channel.queue_delete(name)
    channel.queue_delete(dlq)
