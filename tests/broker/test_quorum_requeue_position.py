"""Where a quorum queue puts a requeued message (basic.nack, basic.reject, basic.recover), on
the bundled broker and RabbitMQ 3.10.8: at the back, unless the queue has an
``x-delivery-limit`` argument, whatever its value (even one that sets no limit): then at the
head, where RabbitMQ counts the return in place."""

from __future__ import annotations

from typing import Any

import pytest
from pika.adapters.blocking_connection import BlockingChannel

from .helpers import get_when_there, wait_for


@pytest.mark.parametrize(
    ("arguments", "order"),
    [
        ({}, [b"b", b"c", b"a", b"d"]),
        ({"x-delivery-limit": 5}, [b"a", b"b", b"c", b"d"]),
        ({"x-delivery-limit": "none"}, [b"a", b"b", b"c", b"d"]),
    ],
    ids=["no delivery limit: back", "delivery limit: head", "non-numeric delivery limit: head"],
)
@pytest.mark.parametrize("settle", ["nack", "reject", "recover"])
def test_a_quorum_queue_requeues_to_the_back_unless_it_has_a_delivery_limit_argument(
    channel: BlockingChannel, name: str, arguments: dict[str, Any], order: list[bytes], settle: str
) -> None:
    channel.queue_declare(name, durable=True, arguments={"x-queue-type": "quorum", **arguments})
    channel.confirm_delivery()
    for body in (b"a", b"b", b"c"):
        channel.basic_publish("", name, body)
    method, _, _ = get_when_there(channel, name)
    if settle == "nack":
        channel.basic_nack(method.delivery_tag, requeue=True)
    elif settle == "reject":
        channel.basic_reject(method.delivery_tag, requeue=True)
    else:
        channel.basic_recover(requeue=True)
    assert wait_for(lambda: channel.queue_declare(name, passive=True).method.message_count == 3)
    channel.basic_publish("", name, b"d")
    bodies = [channel.basic_get(name, auto_ack=True)[2] for _ in range(4)]
    assert bodies == order
    channel.queue_delete(name)
