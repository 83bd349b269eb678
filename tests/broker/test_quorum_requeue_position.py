"""Where a quorum queue puts a message that comes back (basic.nack, basic.reject,
basic.recover, a closing channel), on the bundled broker and RabbitMQ 4.0: ahead of every
message never delivered, whatever its arguments, and behind the messages that came back
before it and wait to be delivered again, so returns are served first, in the order they
came back (measured on 4.0.5). RabbitMQ 3.10 put a nack, reject or recover at the back
unless the queue had an ``x-delivery-limit`` argument (docs/rabbitmq-4-differences.md)."""

from __future__ import annotations

from typing import Any

import pytest
from pika.adapters.blocking_connection import BlockingChannel

from testbed.waiting import holds_within

from .helpers import get_when_there


@pytest.mark.parametrize(
    "arguments",
    [{}, {"x-delivery-limit": 5}, {"x-delivery-limit": "none"}],
    ids=["no delivery limit", "delivery limit", "non-numeric delivery limit"],
)
@pytest.mark.parametrize("settle", ["nack", "reject", "recover", "close"])
def test_a_quorum_queue_puts_a_returned_message_back_at_the_head(
    channel: BlockingChannel, name: str, arguments: dict[str, Any], settle: str
) -> None:
    channel.queue_declare(name, durable=True, arguments={"x-queue-type": "quorum", **arguments})
    channel.confirm_delivery()
    for body in (b"a", b"b", b"c"):
        channel.basic_publish("", name, body)
    holder = channel.connection.channel()
    method, _, _ = get_when_there(holder, name)
    if settle == "nack":
        holder.basic_nack(method.delivery_tag, requeue=True)
    elif settle == "reject":
        holder.basic_reject(method.delivery_tag, requeue=True)
    elif settle == "recover":
        holder.basic_recover(requeue=True)
    else:
        holder.close()
    assert holds_within(lambda: channel.queue_declare(name, passive=True).method.message_count == 3)
    channel.basic_publish("", name, b"d")
    bodies = [channel.basic_get(name, auto_ack=True)[2] for _ in range(4)]
    assert bodies == [b"a", b"b", b"c", b"d"]
    channel.queue_delete(name)


@pytest.mark.parametrize(
    ("returns", "order"),
    [
        ([b"b", b"a", b"c"], [b"b", b"a", b"c", b"d", b"e"]),
        ([b"a", b"b", b"c"], [b"a", b"b", b"c", b"d", b"e"]),
        ([b"c", b"a"], [b"c", b"a", b"d", b"e"]),
    ],
    ids=["b, a, c", "a, b, c", "c, a (b acked)"],
)
def test_returned_messages_are_served_first_in_the_order_they_came_back(
    channel: BlockingChannel, name: str, returns: list[bytes], order: list[bytes]
) -> None:
    """Messages nacked one by one come back ahead of the never-delivered ones, each behind
    those returned before it (not at their places of publication, as on a classic queue)."""
    channel.queue_declare(name, durable=True, arguments={"x-queue-type": "quorum"})
    channel.confirm_delivery()
    for body in (b"a", b"b", b"c", b"d"):
        channel.basic_publish("", name, body)
    holder = channel.connection.channel()
    tags = {body: get_when_there(holder, name)[0].delivery_tag for body in (b"a", b"b", b"c")}
    for body in (b"a", b"b", b"c"):
        if body not in returns:
            holder.basic_ack(tags[body])
    for body in returns:
        holder.basic_nack(tags[body], requeue=True)
    expected = len(order) - 1
    assert holds_within(
        lambda: channel.queue_declare(name, passive=True).method.message_count == expected
    )
    channel.basic_publish("", name, b"e")
    assert [channel.basic_get(name, auto_ack=True)[2] for _ in order] == order
    channel.queue_delete(name)
