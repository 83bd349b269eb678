"""``x-delivery-limit`` as 0-9-1 clients know it from RabbitMQ 4.0's quorum queues: a
delivery carries ``x-delivery-count`` (the returns so far) once the message came back (none
at first: 3.10 gave a basic.get-ok 0), and a message returned more times than the limit is
dead-lettered with reason ``delivery_limit``. Without the argument the limit is 20 (3.10:
none); a negative one sets none (3.10: as 0). The queue is a quorum queue: over 0-9-1 both
brokers refuse the argument on a classic queue (``test_classic_delivery_limit``); the bundled
broker's 0-9 lanes take it on any queue (rule basic.deliver:01, tests/spec09)."""

from __future__ import annotations

from typing import Any

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from testbed.waiting import holds_within

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
    assert seen == [(False, None), (True, 1), (True, 2)]
    assert body == b"poison"
    death = properties.headers["x-death"][0]
    assert (death["reason"], death["queue"], death["count"]) == ("delivery_limit", name, 1)
    assert properties.headers["x-first-death-reason"] == "delivery_limit"
    channel.queue_delete(name)
    channel.queue_delete(dlq)


def _returns_before_dead_lettered(channel: BlockingChannel, name: str, arguments: Any) -> int:
    """How many times a message of a new quorum queue ``name`` with ``arguments`` is fetched
    and nacked with requeue before it is gone (dead-lettered or dropped), up to 30."""
    channel.queue_declare(name, durable=True, arguments={"x-queue-type": "quorum", **arguments})
    channel.confirm_delivery()
    channel.basic_publish("", name, b"poison")
    returns = 0
    # The message is there or gone once the nack is done: the queue's count says which
    # (RabbitMQ puts a returned message back asynchronously; basic.get alone may miss it).
    while returns < 30 and holds_within(
        lambda: channel.queue_declare(name, passive=True).method.message_count == 1, timeout=2
    ):
        method, _, _ = get_when_there(channel, name)
        channel.basic_nack(method.delivery_tag, requeue=True)
        returns += 1
    channel.queue_delete(name)
    return returns


@pytest.mark.parametrize(
    ("arguments", "returns"),
    [({}, 21), ({"x-delivery-limit": -1}, 30), ({"x-delivery-limit": 0}, 1)],
    ids=["none given: 20", "negative: no limit", "zero"],
)
def test_a_quorum_queue_limits_deliveries_to_20_unless_told_otherwise(
    channel: BlockingChannel, name: str, arguments: dict[str, Any], returns: int
) -> None:
    assert _returns_before_dead_lettered(channel, name, arguments) == returns
