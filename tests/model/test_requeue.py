"""What happens to a delivery that comes back (basic.nack or basic.reject with requeue,
basic.recover, a closing channel) or is rejected for good: a classic queue puts it back in
its original place, a quorum queue ahead of the messages never delivered; both mark it
redelivered, and past ``x-delivery-limit`` returns it is dead-lettered (rule
basic.deliver:01)."""

from __future__ import annotations

from broker.model.message import QueuedMessage
from broker.model.queues import Queue
from broker.model.quorum import QuorumQueue

from .fakes import Host, RecordingSink, consume, message, ready_bodies


def _take_all(queue: Queue, *bodies: bytes) -> dict[bytes, QueuedMessage]:
    """Publish ``bodies`` and take them all with an unacknowledged get."""
    for body in bodies:
        queue.publish(message(body))
    taken = {}
    while (entry := queue.get()) is not None:
        taken[entry.message.body] = entry
    return taken


def test_a_classic_queue_puts_requeued_messages_back_in_their_original_places() -> None:
    """RabbitMQ 4.0.5: of 1..6 all taken, nack 5, 2, 4 gives 2, 4, 5."""
    queue = Host().queue()
    taken = _take_all(queue, *(b"%d" % i for i in range(1, 7)))
    for body in (b"5", b"2", b"4"):
        queue.requeue([taken[body]])
    assert ready_bodies(queue) == [b"2", b"4", b"5"]


def test_requeued_messages_go_back_ahead_of_those_never_delivered_in_a_classic_queue() -> None:
    queue = Host().queue()
    taken = _take_all(queue, b"1", b"2")
    queue.publish(message(b"3"))
    queue.requeue([taken[b"2"], taken[b"1"]])
    assert ready_bodies(queue) == [b"1", b"2", b"3"]


def test_a_requeued_message_is_marked_redelivered_and_no_longer_unacked() -> None:
    queue = Host().queue()
    taken = _take_all(queue, b"m")
    assert queue.unacked == 1
    queue.requeue([taken[b"m"]])
    entry = queue.get()
    assert entry is not None and entry.redelivered and queue.unacked == 1


def test_a_quorum_queue_serves_returns_first_in_the_order_they_came_back() -> None:
    """RabbitMQ 4.0 (3.10 put them at the back)."""
    queue = Host().queue(factory=QuorumQueue, durable=True, x_queue_type="quorum")
    taken = _take_all(queue, b"1", b"2", b"3")
    queue.publish(message(b"4"))
    queue.requeue([taken[b"3"]])
    queue.requeue([taken[b"1"]])
    assert ready_bodies(queue) == [b"3", b"1", b"4"]


def test_a_quorum_queue_counts_every_return_in_x_delivery_count() -> None:
    queue = Host().queue(factory=QuorumQueue, durable=True, x_queue_type="quorum")
    entry = _take_all(queue, b"m")[b"m"]
    assert queue.as_delivered(entry).headers.get("x-delivery-count") is None
    for count in (1, 2):
        queue.requeue([entry])
        got = queue.get()
        assert got is entry
        assert queue.as_delivered(entry).headers["x-delivery-count"] == count


def test_a_message_returned_more_times_than_the_delivery_limit_is_dead_lettered() -> None:
    host = Host()
    queue = host.queue(x_delivery_limit=1)
    entry = _take_all(queue, b"poison")[b"poison"]
    queue.requeue([entry])  # the first return: within the limit
    assert queue.get() is entry and host.dead_letters == []
    queue.requeue([entry])
    assert host.dead_letters == [("q", b"poison", "delivery_limit")]
    assert (queue.message_count, queue.unacked, host.memory.used) == (0, 0, 0)


def test_a_quorum_queue_without_x_delivery_limit_dead_letters_after_twenty_returns() -> None:
    host = Host()
    queue = host.queue(factory=QuorumQueue, durable=True, x_queue_type="quorum")
    entry = _take_all(queue, b"poison")[b"poison"]
    for _ in range(20):
        queue.requeue([entry])
        assert queue.get() is entry
    assert host.dead_letters == []
    queue.requeue([entry])
    assert host.dead_letters == [("q", b"poison", "delivery_limit")]


def test_a_rejected_message_is_dead_lettered_as_rejected() -> None:
    host = Host()
    queue = host.queue()
    entry = _take_all(queue, b"bad")[b"bad"]
    queue.reject(entry)
    assert (host.dead_letters, queue.unacked, host.memory.used) == (
        [("q", b"bad", "rejected")],
        0,
        0,
    )


def test_a_message_returned_to_a_deleted_queue_is_dropped() -> None:
    host = Host()
    queue = host.queue()
    entry = _take_all(queue, b"late")[b"late"]
    queue.destroy()
    queue.requeue([entry])
    assert (queue.message_count, host.dead_letters, host.memory.used) == (0, [], 0)


def test_a_requeue_redelivers_to_a_consumer_that_can_take_it() -> None:
    queue = Host().queue()
    sink = RecordingSink()
    taken = _take_all(queue, b"m")
    consume(queue, sink, "c")
    queue.requeue([taken[b"m"]])
    assert sink.bodies() == [b"m"] and sink.deliveries[0][1].redelivered
