"""Message TTL in a classic queue (``x-message-ttl`` and the ``expiration`` property), on a
fake clock: a message expires when the lower of the two runs out, at the head of the queue,
and is dead-lettered with the reason ``expired``."""

from __future__ import annotations

from broker.model.memory import MemoryGauge
from broker.model.vhost import VirtualHost

from .fakes import FakeClock, Host, RecordingSink, consume, message, ready_bodies


def test_a_message_expires_when_the_queue_ttl_runs_out_and_is_dead_lettered_as_expired() -> None:
    host = Host()
    queue = host.queue(x_message_ttl=50)
    queue.publish(message(b"old"))
    host.clock.advance(0.049)
    assert (queue.message_count, host.dead_letters) == (1, [])
    host.clock.advance(0.002)
    assert (queue.message_count, host.dead_letters) == (0, [("q", b"old", "expired")])


def test_a_message_expiration_shorter_than_the_queue_ttl_wins() -> None:
    host = Host()
    queue = host.queue(x_message_ttl=100)
    queue.publish(message(b"short", expiration="30"))
    queue.publish(message(b"long", expiration="500"))
    host.clock.advance(0.03)
    assert [body for _, body, _ in host.dead_letters] == [b"short"]
    host.clock.advance(0.069)
    assert queue.message_count == 1
    host.clock.advance(0.002)  # the queue's 100 ms caps the 500 ms expiration
    assert [body for _, body, _ in host.dead_letters] == [b"short", b"long"]


def test_a_message_with_a_long_expiration_outlives_a_short_one_behind_it() -> None:
    host = Host()
    queue = host.queue()
    queue.publish(message(b"short", expiration="30"))
    queue.publish(message(b"long", expiration="60000"))
    host.clock.advance(0.2)
    assert ready_bodies(queue) == [b"long"]


def test_an_expired_message_behind_a_live_one_goes_only_when_it_reaches_the_head() -> None:
    """As in RabbitMQ, only the head is expired: the expired message behind waits, counted."""
    host = Host()
    queue = host.queue()
    queue.publish(message(b"long", expiration="60000"))
    queue.publish(message(b"short", expiration="30"))
    host.clock.advance(1.0)
    assert (queue.message_count, host.dead_letters) == (2, [])
    entry = queue.get()
    assert entry is not None and entry.message.body == b"long"
    assert queue.get() is None  # get expires the head first
    assert host.dead_letters == [("q", b"short", "expired")]


def test_a_message_whose_ttl_ran_out_before_its_timer_fired_is_dead_lettered_not_sent() -> None:
    host = Host()
    queue = host.queue(x_message_ttl=50)
    sink = RecordingSink()
    sink.blocked = True
    consume(queue, sink, "c")
    queue.publish(message(b"stale"))
    host.clock.now += 0.06  # the event loop reaches the dispatch before the expiry timer
    sink.blocked = False
    queue.dispatch()
    assert (sink.deliveries, host.dead_letters) == ([], [("q", b"stale", "expired")])


def test_a_message_delivered_before_its_ttl_ran_out_does_not_expire_while_unacked() -> None:
    host = Host()
    queue = host.queue(x_message_ttl=50)
    sink = RecordingSink()
    consume(queue, sink, "c")
    queue.publish(message(b"taken"))
    host.clock.advance(1.0)
    assert (sink.bodies(), queue.unacked, host.dead_letters) == ([b"taken"], 1, [])


def test_a_restored_message_counts_its_ttl_from_its_publish() -> None:
    """Recovery gives each message its age: its TTL ran on while the broker was down."""
    host = Host()
    queue = host.queue(x_message_ttl=50)
    queue.restore(message(b"recovered"), age=0.04)
    queue.expire()  # as the store does once recovery is done
    host.clock.advance(0.009)
    assert queue.message_count == 1
    host.clock.advance(0.002)
    assert host.dead_letters == [("q", b"recovered", "expired")]


def test_a_restored_message_past_its_ttl_expires_at_once() -> None:
    host = Host()
    queue = host.queue(x_message_ttl=50)
    queue.restore(message(b"recovered"), age=10.0)
    queue.expire()
    assert host.dead_letters == [("q", b"recovered", "expired")]


def test_one_expiry_timer_is_armed_for_the_head_and_none_once_the_queue_is_empty() -> None:
    host = Host()
    queue = host.queue(x_message_ttl=50)
    for body in (b"a", b"b", b"c"):
        queue.publish(message(body))
    assert host.clock.pending == 1
    host.clock.advance(0.051)
    assert (queue.message_count, host.clock.pending) == (0, 0)


def test_an_expired_message_reaches_the_dead_letter_queue_with_its_death_recorded() -> None:
    """Through a ``VirtualHost`` on the fake clock: the queue's dead-letter exchange and key
    route the copy, whose ``x-death`` names the reason, queue, exchange and routing keys."""
    clock = FakeClock()
    vhost = VirtualHost("/", clock, MemoryGauge(1 << 30))
    dlq = vhost.declare_queue("dlq", owner=None)
    arguments = {
        "x-message-ttl": 50,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": "dlq",
    }
    queue = vhost.declare_queue("q", owner=None, arguments=arguments)
    queue.publish(message(b"old", headers={"h": 1}))
    clock.advance(0.051)
    entry = dlq.get()
    assert entry is not None and entry.message.body == b"old"
    headers = entry.message.headers
    death = headers["x-death"][0]
    assert (death["reason"], death["queue"], death["count"]) == ("expired", "q", 1)
    assert (death["exchange"], death["routing-keys"]) == ("", ["q"])
    assert (headers["x-first-death-reason"], headers["h"]) == ("expired", 1)
    assert queue.message_count == 0
