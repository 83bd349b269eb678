"""Flow control in the model: the memory gauge that blocks publishers once the queues hold
more body bytes than the high watermark and lets them go under 80% of it, and the length
limits (``x-max-length``, ``x-max-length-bytes``) with their overflow modes."""

from __future__ import annotations

from .fakes import Host, RecordingSink, consume, message, ready_bodies


def test_bytes_past_the_watermark_block_publishers_until_they_fall_under_80_percent() -> None:
    host = Host(memory_high=100)
    changes: list[bool] = []
    host.memory.on_change = changes.append
    queue = host.queue()
    for _ in range(10):
        queue.publish(message(b"x" * 10))
    assert changes == []  # 100 bytes: at the watermark, not past it
    queue.publish(message(b"x"))
    assert (changes, host.memory.blocked) == ([True], True)
    for _ in range(2):
        entry = queue.get()
        assert entry is not None
        queue.settle(entry)
    assert changes == [True]  # 81 bytes: not under 80 yet
    entry = queue.get()
    assert entry is not None
    queue.settle(entry)
    assert (changes, host.memory.blocked, host.memory.used) == ([True, False], False, 71)


def test_unacked_deliveries_count_against_the_watermark_until_they_are_settled() -> None:
    host = Host(memory_high=10)
    queue = host.queue()
    sink = RecordingSink()
    consumer = consume(queue, sink, "c")
    queue.publish(message(b"x" * 11))
    assert (queue.message_count, host.memory.blocked) == (0, True)
    sink.settle(consumer, sink.deliveries[0][1])
    assert (host.memory.used, host.memory.blocked) == (0, False)


def test_x_max_length_drops_the_head_and_dead_letters_it_as_maxlen() -> None:
    host = Host()
    queue = host.queue(x_max_length=2)
    for body in (b"0", b"1", b"2", b"3"):
        assert queue.publish(message(body))
    assert ready_bodies(queue) == [b"2", b"3"]
    assert host.dead_letters == [("q", b"0", "maxlen"), ("q", b"1", "maxlen")]


def test_x_max_length_bytes_drops_the_head() -> None:
    queue = Host().queue(x_max_length_bytes=10)
    for body in (b"0000", b"1111", b"2222", b"3333"):
        queue.publish(message(body))
    assert ready_bodies(queue) == [b"2222", b"3333"]


def test_reject_publish_refuses_the_message_past_the_limit_and_keeps_the_others() -> None:
    host = Host()
    queue = host.queue(x_max_length=1, x_overflow="reject-publish")
    assert queue.publish(message(b"first"))
    assert not queue.publish(message(b"second"))
    assert (ready_bodies(queue), host.dead_letters) == ([b"first"], [])


def test_reject_publish_counts_a_message_with_an_empty_body() -> None:
    queue = Host().queue(x_max_length=2, x_overflow="reject-publish")
    assert [queue.publish(message(b"")) for _ in range(3)] == [True, True, False]


def test_reject_publish_dlx_dead_letters_the_refused_message_as_maxlen() -> None:
    host = Host()
    queue = host.queue(x_max_length=1, x_overflow="reject-publish-dlx")
    queue.publish(message(b"kept"))
    assert not queue.publish(message(b"refused"))
    assert host.dead_letters == [("q", b"refused", "maxlen")]


def test_drop_lowest_priority_drops_the_oldest_of_the_lowest_priority() -> None:
    queue = Host().queue(x_max_length=2, x_max_priority=5, x_overflow="drop-lowest-priority")
    queue.publish(message(b"low-1", priority=1))
    queue.publish(message(b"low-2", priority=1))
    queue.publish(message(b"high", priority=5))
    assert ready_bodies(queue) == [b"high", b"low-2"]
