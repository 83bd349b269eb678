"""``drop-head`` on a priority queue is RabbitMQ's (the highest-priority head goes); the
bundled broker's own ``drop-lowest-priority`` is an opt-in that changes nothing else."""

from __future__ import annotations

from pika.adapters.blocking_connection import BlockingChannel
from pika.spec import BasicProperties

from .helpers import get_all


def test_drop_head_on_a_priority_queue_drops_the_highest_priority_head(
    channel: BlockingChannel, name: str
) -> None:
    arguments = {"x-max-length": 2, "x-overflow": "drop-head", "x-max-priority": 9}
    channel.queue_declare(name, auto_delete=False, arguments=arguments)
    for body, priority in ((b"low", 1), (b"top", 9), (b"mid", 5)):
        channel.basic_publish("", name, body, BasicProperties(priority=priority))
    assert get_all(channel, name) == [b"mid", b"low"]
    channel.queue_delete(name)
