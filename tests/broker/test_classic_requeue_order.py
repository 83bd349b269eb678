"""A classic queue puts a message that comes back unacknowledged (nack or reject with
requeue, basic.recover, its channel closed) in its original place, so a consumer sees the
queue in publish order again, as RabbitMQ 4 does (measured on 4.0.5; aio-pika's
test_non_acked_messages_are_redelivered_to_queue). Quorum queues differ:
test_quorum_requeue_position.py."""

from __future__ import annotations

from typing import Any

import pika
from pika.adapters.blocking_connection import BlockingChannel


def _queue_of(channel: BlockingChannel, count: int) -> str:
    queue = channel.queue_declare("", exclusive=True).method.queue
    for i in range(1, count + 1):
        channel.basic_publish("", queue, str(i).encode())
    return queue


def _take(channel: BlockingChannel, queue: str, count: int) -> dict[str, int]:
    """Get ``count`` messages unacknowledged: their delivery tags by body."""
    tags = {}
    for _ in range(count):
        method, _, body = channel.basic_get(queue)
        assert method is not None
        tags[body.decode()] = method.delivery_tag
    return tags


def _drain(channel: BlockingChannel, queue: str) -> list[str]:
    """The bodies left, in order; ``r`` marks a redelivery."""
    out: list[str] = []
    while True:
        method, _, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append(body.decode() + ("r" if method.redelivered else ""))


def test_nacked_messages_go_back_in_publish_order(channel: BlockingChannel) -> None:
    queue = _queue_of(channel, 6)
    tags = _take(channel, queue, 6)
    for body in "524":
        channel.basic_nack(tags[body], requeue=True)
    assert _drain(channel, queue) == ["2r", "4r", "5r"]


def test_nacked_messages_go_back_ahead_of_those_never_delivered(
    channel: BlockingChannel,
) -> None:
    queue = _queue_of(channel, 6)
    tags = _take(channel, queue, 3)
    for body in "31":
        channel.basic_nack(tags[body], requeue=True)
    assert _drain(channel, queue) == ["1r", "3r", "4", "5", "6"]


def test_recovered_messages_go_back_in_publish_order(channel: BlockingChannel) -> None:
    queue = _queue_of(channel, 6)
    tags = _take(channel, queue, 4)
    channel.basic_ack(tags["2"])
    channel.basic_recover(requeue=True)
    assert _drain(channel, queue) == ["1r", "3r", "4r", "5", "6"]


def test_a_closed_channels_messages_join_earlier_rejects_in_publish_order(
    connection: pika.BlockingConnection,
) -> None:
    channel = connection.channel()
    queue = _queue_of(channel, 6)
    tags = _take(channel, queue, 4)
    channel.basic_reject(tags["4"], requeue=True)
    channel.basic_reject(tags["1"], requeue=True)
    other = connection.channel()
    channel.close()
    assert _drain(other, queue) == ["1r", "2r", "3r", "4r", "5", "6"]


def test_a_cancelled_consumers_nacked_delivery_goes_back_in_its_place(
    connection: pika.BlockingConnection, channel: BlockingChannel
) -> None:
    queue = _queue_of(channel, 6)
    got: list[tuple[int, str]] = []

    def on_message(_ch: object, method: Any, _props: object, body: bytes) -> None:
        got.append((method.delivery_tag, body.decode()))

    channel.basic_qos(prefetch_count=3)
    tag = channel.basic_consume(queue, on_message)
    for _ in range(100):
        if len(got) == 3:
            break
        connection.process_data_events(0.1)
    assert [body for _, body in got] == ["1", "2", "3"]
    channel.basic_cancel(tag)
    channel.basic_nack(got[1][0], requeue=True)
    channel.basic_nack(got[0][0], requeue=True)
    assert _drain(channel, queue) == ["1r", "2r", "4", "5", "6"]
