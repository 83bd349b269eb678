"""A quorum queue across a restart: the order its messages had, and ``x-delivery-limit``
counted against the return the restart makes. The same traffic runs against the bundled
broker (``python -m broker`` on a data directory, stopped cleanly or with kill -9) and a
private RabbitMQ node restarted with ``rabbitmqctl stop_app``/``start_app`` (the
``restartable`` fixture). Measured on RabbitMQ 4.0.5 (and 3.10.8 before it):

* a message nacked or rejected with requeue goes back to the head (3.10: to the back, where
  it stayed across the restart); the messages held unacknowledged at the restart come back
  at the head, in delivery order (the restart returns them, as a closing channel does),
  each return counted in ``x-delivery-count``;
* a message whose return by the restart takes its count past ``x-delivery-limit`` is
  dead-lettered (reason ``delivery_limit``) at the restart, not delivered again; one at the
  limit comes back with ``x-delivery-count`` equal to it. The dead-lettered copy reached the
  dead-letter queue (a durable classic one) in 1 run of 4 only: RabbitMQ dead-letters while
  it boots, apparently before that queue is back, and the copy is lost (at-most-once). The
  bundled broker dead-letters once the queues and bindings are back, so the copy arrives;
  that is checked on it alone.

RabbitMQ applies both asynchronously after ``start_app``, so the checks wait (bounded) for
the queue to show the expected message count.
"""

from __future__ import annotations

from typing import Any

import pika
from pika.adapters.blocking_connection import BlockingChannel

from testbed.waiting import holds_within

from .helpers import get_when_there
from .restarts import Restartable, wait_until_on_disk

PERSISTENT = pika.BasicProperties(delivery_mode=2)
QUORUM = {"x-queue-type": "quorum"}


def _channel(url: str) -> tuple[pika.BlockingConnection, BlockingChannel]:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.confirm_delivery()
    return connection, channel


def _publish(channel: BlockingChannel, queue: str, *bodies: bytes) -> None:
    for body in bodies:
        channel.basic_publish("", queue, body, PERSISTENT)


def _taken(channel: BlockingChannel, queue: str, count: int) -> list[tuple[bytes, bool, Any]]:
    """(body, redelivered, x-delivery-count) of every message of ``queue``, in order, once it
    holds ``count`` (basic.get with auto-ack)."""
    assert holds_within(
        lambda: channel.queue_declare(queue, passive=True).method.message_count == count
    ), f"{queue} did not come to {count} messages"
    out = []
    for _ in range(count + 1):
        method, properties, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            break
        out.append((body, method.redelivered, (properties.headers or {}).get("x-delivery-count")))
    return out


def test_a_quorum_queue_keeps_its_order_across_a_restart_with_returns_first(
    restartable: Restartable, name: str
) -> None:
    connection, channel = _channel(restartable.url())
    channel.queue_declare(name, durable=True, arguments=QUORUM)
    _publish(channel, name, b"m0", b"m1", b"m2", b"m3", b"m4", b"m5")
    method, _, _ = get_when_there(channel, name)
    channel.basic_nack(method.delivery_tag, requeue=True)  # m0 back to the head
    get_when_there(channel, name)  # m0 again, held: the restart returns it
    method, _, _ = get_when_there(channel, name)
    channel.basic_reject(method.delivery_tag, requeue=True)  # m1 back to the head
    _publish(channel, name, b"m6")  # at the back
    get_when_there(channel, name)  # m1 again, held too
    method, _, _ = get_when_there(channel, name)
    channel.basic_ack(method.delivery_tag)  # m2
    wait_until_on_disk(connection)
    restartable.restart()
    connection, channel = _channel(restartable.url())
    with connection:
        assert _taken(channel, name, 6) == [
            (b"m0", True, 2),
            (b"m1", True, 2),
            (b"m3", False, None),
            (b"m4", False, None),
            (b"m5", False, None),
            (b"m6", False, None),
        ]
        channel.queue_delete(name)


def test_a_quorum_message_the_restart_returns_past_its_delivery_limit_is_dead_lettered(
    restartable: Restartable, name: str
) -> None:
    dlq = f"{name}-dlq"
    connection, channel = _channel(restartable.url())
    channel.queue_declare(dlq, durable=True)
    arguments = {
        **QUORUM,
        "x-delivery-limit": 1,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": dlq,
    }
    channel.queue_declare(name, durable=True, arguments=arguments)
    _publish(channel, name, b"over", b"at")
    method, _, body = get_when_there(channel, name)
    assert body == b"over"
    channel.basic_nack(method.delivery_tag, requeue=True)  # returned once (to the head): the limit
    _, properties, body = get_when_there(channel, name)
    assert (body, properties.headers["x-delivery-count"]) == (b"over", 1)  # held
    _, _, body = get_when_there(channel, name)
    assert body == b"at"  # held: the restart's return is its first
    restartable.restart()
    connection, channel = _channel(restartable.url())
    with connection:
        assert _taken(channel, name, 1) == [(b"at", True, 1)]
        if restartable.bundled:
            _, properties, body = get_when_there(channel, dlq)
            death = properties.headers["x-death"][0]
            assert (body, death["reason"], death["queue"]) == (b"over", "delivery_limit", name)
        channel.queue_delete(name)
        channel.queue_delete(dlq)
