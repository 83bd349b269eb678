"""Consuming: prefetch, get, acknowledgements, requeueing, cancels, transactions."""

from __future__ import annotations

import time

import pytest

from amqp_spark.client import Channel, Connection, ConsumerCancelled, Delivery
from tests.client.conftest import message_count

pytestmark = pytest.mark.timeout(60)


def publish(channel: Channel, queue: str, count: int) -> None:
    channel.basic_publish_batch("", [(queue, b"%d" % i, None) for i in range(count)])


def settle(channel: Channel, expected: int, timeout: float = 5.0) -> list[Delivery]:
    """Collect deliveries until ``expected`` arrived, then check no more come."""
    got: list[Delivery] = []
    deadline = time.monotonic() + timeout
    while len(got) < expected and time.monotonic() < deadline:
        d = channel.next_delivery(timeout=0.2)
        if d is not None:
            got.append(d)
    time.sleep(0.3)
    return got + channel.drain_deliveries()


def get(channel: Channel, queue: str) -> Delivery:
    d = channel.basic_get(queue)
    assert d is not None
    return d


def test_prefetch_bounds_unacknowledged_deliveries(channel: Channel, queue: str) -> None:
    publish(channel, queue, 50)
    channel.basic_qos(prefetch_count=10)
    channel.basic_consume(queue)
    first = settle(channel, 10)
    assert [d.body for d in first] == [b"%d" % i for i in range(10)]
    channel.basic_ack(first[-1].delivery_tag, multiple=True)
    second = settle(channel, 10)
    assert [d.body for d in second] == [b"%d" % i for i in range(10, 20)]


def test_drain_deliveries_never_blocks_and_respects_max_count(channel: Channel, queue: str) -> None:
    assert channel.drain_deliveries() == []
    publish(channel, queue, 30)
    channel.basic_consume(queue, no_ack=True)
    deadline = time.monotonic() + 5
    while message_count(channel, queue) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    first, rest = channel.drain_deliveries(max_count=12), channel.drain_deliveries(max_count=100)
    assert (len(first), len(rest)) == (12, 18)
    assert [d.body for d in first + rest] == [b"%d" % i for i in range(30)]
    assert channel.drain_deliveries() == []


def test_next_delivery_times_out_with_none(channel: Channel, queue: str) -> None:
    channel.basic_consume(queue)
    began = time.monotonic()
    assert channel.next_delivery(timeout=0.3) is None
    assert 0.25 < time.monotonic() - began < 2


def test_basic_get_reports_remaining_count_and_none_when_empty(
    channel: Channel, queue: str
) -> None:
    publish(channel, queue, 2)
    d = get(channel, queue)
    assert (d.body, d.message_count, d.consumer_tag) == (b"0", 1, "")
    assert get(channel, queue).message_count == 0
    assert channel.basic_get(queue) is None


def test_ack_removes_the_message(connection: Connection, channel: Channel, queue: str) -> None:
    publish(channel, queue, 1)
    channel.basic_ack(get(channel, queue).delivery_tag)
    channel.close()
    with connection.channel() as again:
        assert message_count(again, queue) == 0


def test_nack_with_requeue_redelivers(channel: Channel, queue: str) -> None:
    publish(channel, queue, 1)
    first = get(channel, queue)
    assert not first.redelivered
    channel.basic_nack(first.delivery_tag, requeue=True)
    again = get(channel, queue)
    assert (again.body, again.redelivered) == (b"0", True)


def test_nack_multiple_without_requeue_drops_all(channel: Channel, queue: str) -> None:
    publish(channel, queue, 3)
    tags = [get(channel, queue).delivery_tag for _ in range(3)]
    channel.basic_nack(tags[-1], multiple=True, requeue=False)
    assert channel.basic_get(queue) is None
    assert message_count(channel, queue) == 0


def test_reject_requeues_or_drops(channel: Channel, queue: str) -> None:
    publish(channel, queue, 2)
    channel.basic_reject(get(channel, queue).delivery_tag, requeue=False)
    d = get(channel, queue)
    assert d.body == b"1"
    channel.basic_reject(d.delivery_tag, requeue=True)
    again = get(channel, queue)
    assert (again.body, again.redelivered) == (b"1", True)


def test_recover_requeues_unacknowledged_deliveries(channel: Channel, queue: str) -> None:
    publish(channel, queue, 2)
    channel.basic_consume(queue)
    assert len(settle(channel, 2)) == 2
    channel.basic_recover(requeue=True)
    redelivered = settle(channel, 2)
    assert sorted(d.body for d in redelivered) == [b"0", b"1"]
    assert all(d.redelivered for d in redelivered)


def test_cancel_stops_deliveries(channel: Channel, queue: str) -> None:
    tag = channel.basic_consume(queue, consumer_tag="mine")
    assert tag == "mine"
    channel.basic_cancel(tag)
    publish(channel, queue, 1)
    assert channel.next_delivery(timeout=0.3) is None
    assert message_count(channel, queue) == 1


def test_deleting_the_queue_cancels_the_consumer(connection: Connection, channel: Channel) -> None:
    queue = channel.queue_declare("").queue
    channel.basic_consume(queue)
    with connection.channel() as other:
        other.queue_delete(queue)
    with pytest.raises(ConsumerCancelled) as e:
        channel.next_delivery(timeout=5)
    assert len(e.value.consumer_tags) == 1
    assert channel.next_delivery(timeout=0.1) is None  # reported once; the channel is fine


def test_transaction_commit_and_rollback(channel: Channel, queue: str) -> None:
    channel.tx_select()
    channel.basic_publish("", queue, b"rolled back")
    channel.tx_rollback()
    assert message_count(channel, queue) == 0
    channel.basic_publish("", queue, b"committed")
    channel.tx_commit()
    assert message_count(channel, queue) == 1
    d = get(channel, queue)
    channel.basic_ack(d.delivery_tag)
    channel.tx_rollback()  # the ack is undone: the message stays unacknowledged
    channel.basic_ack(d.delivery_tag)
    channel.tx_commit()
    assert channel.basic_get(queue) is None
