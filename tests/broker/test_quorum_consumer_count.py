"""The consumer count queue.declare-ok reports while basic.get deliveries, or those of a
cancelled consumer, are unacknowledged: the same test code against the bundled broker and
RabbitMQ 3.10.8, for a quorum and a classic queue.

RabbitMQ counts each unsettled basic.get on a quorum queue as a consumer (two on one channel
count 2) until its message is acked, requeued, rejected or its channel closes; a no-ack get
counts nothing, and a classic queue counts only its real consumers. Likewise a quorum
consumer cancelled with unacknowledged deliveries counts once until the last of them is
settled, whichever way (a classic queue drops it at the cancel). A quorum queue on RabbitMQ
settles asynchronously, so a count that must fall is polled for (bounded)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from testbed.waiting import holds_within

ARGUMENTS = {"quorum": {"x-queue-type": "quorum"}, "classic": {}}


@pytest.fixture(params=sorted(ARGUMENTS))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def held(kind: str) -> Callable[[int], int]:
    """The consumer count ``n`` unsettled gets add: ``n`` on a quorum queue, none on a
    classic one."""
    return lambda n: n if kind == "quorum" else 0


@pytest.fixture
def queue(connection: pika.BlockingConnection, name: str, kind: str) -> Iterator[str]:
    """A durable queue of ``kind`` holding three messages (published with confirms)."""
    publisher = connection.channel()
    publisher.queue_declare(name, durable=True, arguments=ARGUMENTS[kind])
    publisher.confirm_delivery()
    for body in (b"a", b"b", b"c"):
        publisher.basic_publish("", name, body)
    yield name
    if connection.is_open:
        connection.channel().queue_delete(name)


def _count(channel: BlockingChannel, queue: str) -> int:
    count: int = channel.queue_declare(queue, passive=True).method.consumer_count
    return count


def _settled_count(channel: BlockingChannel, queue: str, expected: int) -> int:
    """The count once it reached ``expected`` (or after a bounded wait: then the test fails
    on the value it shows)."""
    holds_within(lambda: _count(channel, queue) == expected)
    return _count(channel, queue)


def _get(channel: BlockingChannel, queue: str) -> int:
    """An unacknowledged basic.get; its delivery tag."""
    method, _, _ = channel.basic_get(queue)
    assert method is not None
    tag: int = method.delivery_tag
    return tag


@pytest.mark.parametrize("asked_on", ["same channel", "another channel"])
@pytest.mark.parametrize("passive", [True, False], ids=["passive", "redeclared"])
def test_an_unacked_get_counts_as_a_consumer_of_a_quorum_queue_until_acked(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    queue: str,
    kind: str,
    held: Callable[[int], int],
    asked_on: str,
    passive: bool,
) -> None:
    tag = _get(channel, queue)
    asking = channel if asked_on == "same channel" else connection.channel()
    ok = asking.queue_declare(queue, passive=passive, durable=True, arguments=ARGUMENTS[kind])
    assert ok.method.consumer_count == held(1)
    channel.basic_ack(tag)
    assert _settled_count(asking, queue, 0) == 0


def test_a_no_ack_get_counts_no_consumer(channel: BlockingChannel, queue: str) -> None:
    method, _, _ = channel.basic_get(queue, auto_ack=True)
    assert method is not None
    assert _count(channel, queue) == 0


def test_an_empty_get_counts_no_consumer(channel: BlockingChannel, queue: str) -> None:
    channel.queue_purge(queue)
    method, _, _ = channel.basic_get(queue)
    assert method is None
    assert _count(channel, queue) == 0


def test_each_unacked_get_of_one_channel_counts_once_until_its_own_ack(
    channel: BlockingChannel, queue: str, held: Callable[[int], int]
) -> None:
    first, second = _get(channel, queue), _get(channel, queue)
    assert _count(channel, queue) == held(2)
    channel.basic_ack(first)
    assert _settled_count(channel, queue, held(1)) == held(1)
    channel.basic_ack(second)
    assert _settled_count(channel, queue, 0) == 0


def test_unacked_gets_of_two_channels_add_up(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    queue: str,
    held: Callable[[int], int],
) -> None:
    other = connection.channel()
    mine, theirs = _get(channel, queue), _get(other, queue)
    assert _count(channel, queue) == held(2)
    other.basic_ack(theirs)
    assert _settled_count(channel, queue, held(1)) == held(1)
    channel.basic_ack(mine)
    assert _settled_count(channel, queue, 0) == 0


def test_unacked_gets_add_to_the_consumers_of_a_quorum_queue(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    queue: str,
    held: Callable[[int], int],
) -> None:
    tag = _get(channel, queue)
    consuming = connection.channel()
    consuming.basic_consume(queue, lambda *delivery: None, auto_ack=True)
    assert _count(channel, queue) == 1 + held(1)
    channel.basic_ack(tag)
    assert _settled_count(channel, queue, 1) == 1


@pytest.mark.parametrize(
    "settle",
    [
        pytest.param(lambda ch, tag: ch.basic_nack(tag, requeue=True), id="nack-requeue"),
        pytest.param(lambda ch, tag: ch.basic_reject(tag, requeue=True), id="reject-requeue"),
        pytest.param(lambda ch, tag: ch.basic_reject(tag, requeue=False), id="reject-drop"),
        pytest.param(lambda ch, tag: ch.basic_recover(requeue=True), id="recover"),
        pytest.param(lambda ch, tag: ch.close(), id="channel-close"),
    ],
)
def test_an_unacked_get_stops_counting_once_returned_or_rejected(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    queue: str,
    held: Callable[[int], int],
    settle: Callable[[BlockingChannel, int], None],
) -> None:
    tag = _get(channel, queue)
    asking = connection.channel()
    assert _count(asking, queue) == held(1)
    settle(channel, tag)
    assert _settled_count(asking, queue, 0) == 0


@pytest.mark.parametrize(
    "settle_both",
    [
        pytest.param(lambda ch, tag: ch.basic_ack(tag, multiple=True), id="ack-multiple"),
        pytest.param(
            lambda ch, tag: ch.basic_nack(tag, multiple=True, requeue=True),
            id="nack-multiple-requeue",
        ),
        pytest.param(lambda ch, tag: ch.close(), id="channel-close"),
    ],
)
def test_two_unacked_gets_of_one_channel_stop_counting_together(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    queue: str,
    held: Callable[[int], int],
    settle_both: Callable[[BlockingChannel, int], None],
) -> None:
    _get(channel, queue)
    last = _get(channel, queue)
    asking = connection.channel()
    assert _count(asking, queue) == held(2)
    settle_both(channel, last)
    assert _settled_count(asking, queue, 0) == 0


def test_a_get_acked_in_a_transaction_counts_until_commit(
    channel: BlockingChannel, queue: str, held: Callable[[int], int]
) -> None:
    channel.tx_select()
    channel.basic_ack(_get(channel, queue))
    assert _count(channel, queue) == held(1)
    channel.tx_commit()
    assert _settled_count(channel, queue, 0) == 0


# -- cancelled consumers ------------------------------------------------------------------


def _consume(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    queue: str,
    expected: int,
    *,
    no_ack: bool = False,
    consumer_tag: str | None = None,
) -> tuple[str, list[int]]:
    """A consumer that received ``expected`` deliveries (bounded wait): its tag and their
    delivery tags, unacknowledged unless ``no_ack``."""
    tags: list[int] = []
    consumer = channel.basic_consume(
        queue,
        lambda ch, method, properties, body: tags.append(method.delivery_tag),
        auto_ack=no_ack,
        consumer_tag=consumer_tag,
    )
    for _ in range(100):
        if len(tags) >= expected:
            break
        connection.process_data_events(0.05)
    assert len(tags) == expected
    return consumer, tags


def _cancelled_holding_one(
    connection: pika.BlockingConnection, channel: BlockingChannel, queue: str
) -> tuple[str, int]:
    """A consumer (prefetch 1) cancelled while its one delivery is unacknowledged: its tag
    and the delivery's."""
    channel.basic_qos(prefetch_count=1)
    consumer, (delivered,) = _consume(connection, channel, queue, 1)
    channel.basic_cancel(consumer)
    return consumer, delivered


@pytest.mark.parametrize(
    "settle",
    [
        pytest.param(lambda ch, tag: ch.basic_ack(tag), id="ack"),
        pytest.param(lambda ch, tag: ch.basic_nack(tag, requeue=True), id="nack-requeue"),
        pytest.param(lambda ch, tag: ch.basic_reject(tag, requeue=True), id="reject-requeue"),
        pytest.param(lambda ch, tag: ch.basic_reject(tag, requeue=False), id="reject-drop"),
    ],
)
def test_a_cancelled_consumer_counts_until_its_last_delivery_is_settled(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    queue: str,
    held: Callable[[int], int],
    settle: Callable[[BlockingChannel, int], None],
) -> None:
    consumer, (*first, last) = _consume(connection, channel, queue, 3)
    channel.basic_cancel(consumer)
    asking = connection.channel()
    assert _count(asking, queue) == held(1)
    for tag in first:
        settle(channel, tag)
        assert _count(asking, queue) == held(1)
    settle(channel, last)
    assert _settled_count(asking, queue, 0) == 0


@pytest.mark.parametrize(
    "settle_all",
    [
        pytest.param(lambda ch, tag: ch.basic_ack(tag, multiple=True), id="ack-multiple"),
        pytest.param(
            lambda ch, tag: ch.basic_nack(tag, multiple=True, requeue=True),
            id="nack-multiple-requeue",
        ),
        pytest.param(lambda ch, tag: ch.basic_recover(requeue=True), id="recover"),
        pytest.param(lambda ch, tag: ch.close(), id="channel-close"),
    ],
)
def test_a_cancelled_consumer_stops_counting_once_its_deliveries_are_settled_together(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    queue: str,
    held: Callable[[int], int],
    settle_all: Callable[[BlockingChannel, int], None],
) -> None:
    consumer, tags = _consume(connection, channel, queue, 3)
    channel.basic_cancel(consumer)
    asking = connection.channel()
    assert _count(asking, queue) == held(1)
    settle_all(channel, tags[-1])
    assert _settled_count(asking, queue, 0) == 0


def test_a_consumer_cancelled_with_every_delivery_acked_stops_counting(
    connection: pika.BlockingConnection, channel: BlockingChannel, queue: str
) -> None:
    consumer, tags = _consume(connection, channel, queue, 3)
    channel.basic_ack(tags[-1], multiple=True)
    assert _count(channel, queue) == 1
    channel.basic_cancel(consumer)
    assert _settled_count(channel, queue, 0) == 0


def test_a_cancelled_no_ack_consumer_stops_counting(
    connection: pika.BlockingConnection, channel: BlockingChannel, queue: str
) -> None:
    consumer, _ = _consume(connection, channel, queue, 3, no_ack=True)
    assert _count(channel, queue) == 1
    channel.basic_cancel(consumer)
    assert _settled_count(channel, queue, 0) == 0


def test_two_cancelled_consumers_of_one_channel_count_until_each_own_delivery_is_acked(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    queue: str,
    held: Callable[[int], int],
) -> None:
    channel.basic_qos(prefetch_count=1)
    first, (first_tag,) = _consume(connection, channel, queue, 1)
    second, (second_tag,) = _consume(connection, channel, queue, 1)
    asking = connection.channel()
    assert _count(asking, queue) == 2
    channel.basic_cancel(first)
    assert _count(asking, queue) == 1 + held(1)
    channel.basic_cancel(second)
    assert _count(asking, queue) == held(2)
    channel.basic_ack(second_tag)
    assert _settled_count(asking, queue, held(1)) == held(1)
    channel.basic_ack(first_tag)
    assert _settled_count(asking, queue, 0) == 0


def test_a_cancelled_consumer_and_an_unacked_get_count_apart(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    queue: str,
    held: Callable[[int], int],
) -> None:
    _, delivered = _cancelled_holding_one(connection, channel, queue)
    got = _get(channel, queue)
    asking = connection.channel()
    assert _count(asking, queue) == held(2)
    channel.basic_ack(got)
    assert _settled_count(asking, queue, held(1)) == held(1)
    channel.basic_ack(delivered)
    assert _settled_count(asking, queue, 0) == 0


def test_a_cancelled_consumer_acked_in_a_transaction_counts_until_commit(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    queue: str,
    held: Callable[[int], int],
) -> None:
    _, delivered = _cancelled_holding_one(connection, channel, queue)
    channel.tx_select()
    channel.basic_ack(delivered)
    assert _count(channel, queue) == held(1)
    channel.tx_commit()
    assert _settled_count(channel, queue, 0) == 0


def test_a_consumer_cancelled_and_consuming_again_with_its_tag_counts_once(
    connection: pika.BlockingConnection, channel: BlockingChannel, queue: str
) -> None:
    """RabbitMQ's quorum queue takes the new consumer for the cancelled one (same channel,
    same tag): one consumer, before and after the cancelled one's delivery is acked."""
    consumer, delivered = _cancelled_holding_one(connection, channel, queue)
    channel.basic_consume(queue, lambda *delivery: None, consumer_tag=consumer)
    asking = connection.channel()
    assert _count(asking, queue) == 1
    channel.basic_ack(delivered)
    assert _count(asking, queue) == 1


# -- single active consumer ---------------------------------------------------------------


@pytest.fixture
def single_active_queue(connection: pika.BlockingConnection, name: str, kind: str) -> Iterator[str]:
    """A durable single-active-consumer queue of ``kind`` holding three messages."""
    queue = f"{name}-sac"
    publisher = connection.channel()
    arguments = {**ARGUMENTS[kind], "x-single-active-consumer": True}
    publisher.queue_declare(queue, durable=True, arguments=arguments)
    publisher.confirm_delivery()
    for body in (b"a", b"b", b"c"):
        publisher.basic_publish("", queue, body)
    yield queue
    if connection.is_open:
        connection.channel().queue_delete(queue)


def test_consumers_waiting_to_be_the_single_active_one_count_on_a_classic_queue_only(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    single_active_queue: str,
    kind: str,
) -> None:
    waiting = (lambda n: n) if kind == "classic" else (lambda n: 0)
    channel.basic_qos(prefetch_count=1)
    active, _ = _consume(connection, channel, single_active_queue, 1)
    channel.basic_ack(0, multiple=True)
    channel.basic_consume(single_active_queue, lambda *delivery: None)
    connection.channel().basic_consume(single_active_queue, lambda *delivery: None)
    asking = connection.channel()
    assert _count(asking, single_active_queue) == 1 + waiting(2)
    channel.basic_cancel(active)
    assert _settled_count(asking, single_active_queue, 1 + waiting(1)) == 1 + waiting(1)


def test_a_cancelled_single_active_consumer_counts_beside_its_successor_until_settled(
    connection: pika.BlockingConnection,
    channel: BlockingChannel,
    single_active_queue: str,
    kind: str,
    held: Callable[[int], int],
) -> None:
    waiting = 1 if kind == "classic" else 0
    channel.basic_qos(prefetch_count=1)
    active, (delivered,) = _consume(connection, channel, single_active_queue, 1)
    channel.basic_consume(single_active_queue, lambda *delivery: None)
    asking = connection.channel()
    assert _count(asking, single_active_queue) == 1 + waiting
    channel.basic_cancel(active)
    assert _count(asking, single_active_queue) == 1 + held(1)
    channel.basic_ack(delivered)
    assert _settled_count(asking, single_active_queue, 1) == 1
