"""How a classic queue hands ready messages to its consumers: round robin among those of
the highest priority that can take one, up to each consumer's prefetch, to the first
consumer only with a single active consumer, and again whenever a slot frees."""

from __future__ import annotations

import pytest

from amqp_protocol import errors
from broker.model.queues import Consumer

from .fakes import Host, RecordingSink, consume, message


def test_consumers_of_one_priority_take_turns() -> None:
    queue = Host().queue()
    sink = RecordingSink()
    for tag in ("a", "b", "c"):
        consume(queue, sink, tag)
    for i in range(6):
        queue.publish(message(b"%d" % i))
    assert [tag for tag, _ in sink.deliveries] == ["a", "b", "c", "a", "b", "c"]


class AskCountingSink(RecordingSink):
    """Counts how often the queue asks whether a consumer can take a message."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: dict[str, int] = {}

    def can_deliver(self, consumer: Consumer) -> bool:
        self.asked[consumer.tag] = self.asked.get(consumer.tag, 0) + 1
        return super().can_deliver(consumer)


def test_a_backlog_goes_round_robin_past_full_consumers_and_the_turn_carries_on() -> None:
    queue = Host().queue()
    sink = RecordingSink()
    sink.blocked = True
    consume(queue, sink, "a", prefetch=1)
    consume(queue, sink, "b")
    consume(queue, sink, "c", prefetch=2)
    for i in range(6):
        queue.publish(message(b"%d" % i))
    sink.blocked = False
    queue.dispatch()  # six ready messages in one delivery loop
    assert [tag for tag, _ in sink.deliveries] == ["a", "b", "c", "b", "c", "b"]
    queue.publish(message(b"6"))  # the next turn is c's, full, then a's, full: b
    assert sink.deliveries[-1][0] == "b"


def test_a_full_consumer_is_asked_once_per_delivery_loop_not_once_per_message() -> None:
    queue = Host().queue()
    sink = AskCountingSink()
    sink.blocked = True
    for tag in ("full-1", "full-2", "open"):
        consume(queue, sink, tag, prefetch=0 if tag == "open" else 1)
    for i in range(1000):
        queue.publish(message(b"%d" % i))
    sink.blocked = False
    sink.asked.clear()
    queue.dispatch()
    assert len(sink.deliveries) == 1000
    assert (sink.asked["full-1"], sink.asked["full-2"]) == (2, 2)  # once to fill, once to skip


def test_the_highest_priority_consumers_are_served_first_the_others_when_they_are_full() -> None:
    queue = Host().queue()
    sink = RecordingSink()
    consume(queue, sink, "low", prefetch=2, priority=0)
    consume(queue, sink, "high", prefetch=2, priority=10)
    for i in range(4):
        queue.publish(message(b"%d" % i))
    assert (sink.bodies("high"), sink.bodies("low")) == ([b"0", b"1"], [b"2", b"3"])


def test_a_consumer_takes_no_more_than_its_prefetch_until_it_acks() -> None:
    queue = Host().queue()
    sink = RecordingSink()
    consumer = consume(queue, sink, "c", prefetch=2)
    for i in range(5):
        queue.publish(message(b"%d" % i))
    assert (sink.bodies(), queue.message_count) == ([b"0", b"1"], 3)
    sink.settle(consumer, sink.deliveries[0][1])
    assert (sink.bodies(), queue.message_count, queue.unacked) == ([b"0", b"1", b"2"], 2, 2)


def test_messages_wait_while_no_consumer_can_take_one_and_go_when_the_sink_drains() -> None:
    queue = Host().queue()
    sink = RecordingSink()
    sink.blocked = True
    consume(queue, sink, "c")
    queue.publish(message(b"m"))
    assert (sink.deliveries, queue.message_count) == ([], 1)
    sink.blocked = False
    queue.dispatch()  # the channel's socket became writable
    assert (sink.bodies(), queue.message_count) == ([b"m"], 0)


def test_a_single_active_consumer_takes_everything_until_it_goes() -> None:
    queue = Host().queue(x_single_active_consumer=True)
    sink = RecordingSink()
    first = consume(queue, sink, "first")
    consume(queue, sink, "second")
    for i in range(3):
        queue.publish(message(b"%d" % i))
    assert sink.bodies("second") == []
    queue.remove_consumer(first)
    queue.publish(message(b"3"))
    assert (sink.bodies("first"), sink.bodies("second")) == ([b"0", b"1", b"2"], [b"3"])


def test_a_full_single_active_consumer_holds_the_others_back() -> None:
    queue = Host().queue(x_single_active_consumer=True)
    sink = RecordingSink()
    consume(queue, sink, "first", prefetch=1)
    consume(queue, sink, "second")
    queue.publish(message(b"0"))
    queue.publish(message(b"1"))
    assert (sink.bodies("first"), sink.bodies("second"), queue.message_count) == ([b"0"], [], 1)


def test_a_no_ack_delivery_leaves_the_queue_for_good() -> None:
    host = Host()
    queue = host.queue()
    sink = RecordingSink()
    consume(queue, sink, "c", no_ack=True)
    queue.publish(message(b"12345"))
    assert (sink.bodies(), queue.unacked, host.memory.used) == ([b"12345"], 0, 0)


def test_an_unacked_delivery_holds_its_bytes_until_it_is_settled() -> None:
    host = Host()
    queue = host.queue()
    sink = RecordingSink()
    consumer = consume(queue, sink, "c")
    queue.publish(message(b"12345"))
    assert (queue.unacked, host.memory.used) == (1, 5)
    sink.settle(consumer, sink.deliveries[0][1])
    assert (queue.unacked, host.memory.used) == (0, 0)


def test_a_priority_queue_delivers_the_highest_priority_first_capped_at_its_maximum() -> None:
    queue = Host().queue(x_max_priority=5)
    for priority in (1, 5, 3, 0, 9):
        queue.publish(message(b"%d" % priority, priority=priority))
    sink = RecordingSink()
    consume(queue, sink, "c")
    assert sink.bodies() == [b"5", b"9", b"3", b"1", b"0"]


def test_an_exclusive_consumer_keeps_the_others_out() -> None:
    queue = Host().queue()
    sink = RecordingSink()
    consume(queue, sink, "only", exclusive=True)
    with pytest.raises(errors.AccessRefused, match="in exclusive use"):
        consume(queue, sink, "other")


def test_deleting_a_queue_hands_back_its_consumers() -> None:
    queue = Host().queue()
    sink = RecordingSink()
    consume(queue, sink, "a")
    consume(queue, sink, "b")
    assert [c.tag for c in queue.destroy()] == ["a", "b"]
    assert queue.deleted and queue.consumers == []
