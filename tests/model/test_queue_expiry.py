"""Queue expiry (``x-expires``) and auto-delete on a fake clock: a queue unused for its
``x-expires`` is handed to its context as unused; a consumer, a get or a passive declare is a
use and restarts the countdown. Through a ``VirtualHost``, the unused queue is deleted unless
a 0-9 lane of it still has consumers."""

from __future__ import annotations

from broker.model.memory import MemoryGauge
from broker.model.vhost import VirtualHost

from .fakes import FakeClock, Host, RecordingSink, consume, message


def test_a_queue_unused_for_its_x_expires_is_found_unused() -> None:
    host = Host()
    host.queue(x_expires=100)
    host.clock.advance(0.099)
    assert host.unused == []
    host.clock.advance(0.002)
    assert host.unused == ["q"]


def test_a_queue_with_a_consumer_does_not_expire_and_counts_from_the_consumer_leaving() -> None:
    host = Host()
    queue = host.queue(x_expires=100)
    consumer = consume(queue, RecordingSink(), "c")
    host.clock.advance(10.0)
    assert host.unused == []
    queue.remove_consumer(consumer)
    host.clock.advance(0.099)
    assert host.unused == []
    host.clock.advance(0.002)
    assert host.unused == ["q"]


def test_a_get_restarts_the_x_expires_countdown() -> None:
    host = Host()
    queue = host.queue(x_expires=100)
    host.clock.advance(0.08)
    assert queue.get() is None
    host.clock.advance(0.08)
    assert host.unused == []
    host.clock.advance(0.021)
    assert host.unused == ["q"]


def test_a_queue_without_x_expires_never_expires() -> None:
    host = Host()
    host.queue()
    host.clock.advance(3600.0)
    assert (host.unused, host.clock.pending) == ([], 0)


def test_an_auto_delete_queue_is_found_unused_when_its_last_consumer_goes() -> None:
    host = Host()
    queue = host.queue()
    queue.auto_delete = True
    sink = RecordingSink()
    first, second = consume(queue, sink, "a"), consume(queue, sink, "b")
    queue.remove_consumer(first)
    assert host.unused == []
    queue.remove_consumer(second)
    assert host.unused == ["q"]


def test_an_auto_delete_queue_that_never_had_a_consumer_stays() -> None:
    host = Host()
    queue = host.queue()
    queue.auto_delete = True
    queue.publish(message(b"m"))
    assert queue.get() is not None
    assert host.unused == []


def test_a_virtual_host_deletes_its_queue_unused_for_its_x_expires() -> None:
    clock = FakeClock()
    vhost = VirtualHost("/", clock, MemoryGauge(1 << 30))
    vhost.declare_queue("q", owner=None, arguments={"x-expires": 100})
    clock.advance(0.05)
    vhost.declare_queue("q", owner=None, passive=True)  # a use: the countdown restarts
    clock.advance(0.099)
    assert "q" in vhost.queues
    clock.advance(0.002)
    assert "q" not in vhost.queues
