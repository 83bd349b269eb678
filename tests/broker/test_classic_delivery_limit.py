"""``x-delivery-limit`` is a quorum-queue argument: a classic queue declared over AMQP 0-9-1
refuses it, whatever its value, with RabbitMQ 3.10's 406 and text. (The bundled broker's
0-9 and 0-8 connections keep it on any queue: rule basic.deliver:01, tests/spec09.)"""

from __future__ import annotations

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel


@pytest.mark.parametrize("limit", [3, "three"])
def test_a_classic_queue_refuses_x_delivery_limit(
    channel: BlockingChannel, name: str, limit: object
) -> None:
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        channel.queue_declare(name, arguments={"x-delivery-limit": limit})
    assert (refused.value.reply_code, refused.value.reply_text) == (
        406,
        f"PRECONDITION_FAILED - invalid arg 'x-delivery-limit' for queue '{name}' in vhost '/' "
        "of queue type rabbit_classic_queue",
    )
