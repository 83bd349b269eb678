"""Queue declaration, arguments (TTL, length limits, overflow, dead-lettering, priority,
single active consumer), exclusivity, purge and delete."""

from __future__ import annotations

import time

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker, NackError

from testbed.waiting import holds_within

from .helpers import get_all


def test_server_named_queue_has_amq_gen_prefix(channel: BlockingChannel) -> None:
    q = channel.queue_declare("", exclusive=True).method.queue
    assert q.startswith("amq.gen-")


def test_amq_prefix_is_reserved_for_queues(channel: BlockingChannel, name: str) -> None:
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_declare("amq." + name)
    assert e.value.reply_code == 403


def test_passive_declare_of_missing_queue_is_404(channel: BlockingChannel, name: str) -> None:
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_declare(name, passive=True)
    assert e.value.reply_code == 404
    assert e.value.reply_text == f"NOT_FOUND - no queue '{name}' in vhost '/'"


def test_redeclare_with_different_arguments_is_406(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name, auto_delete=True, arguments={"x-message-ttl": 1000})
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_declare(name, auto_delete=True, arguments={"x-message-ttl": 2000})
    assert e.value.reply_code == 406


def test_exclusive_queue_is_locked_for_other_connections(
    broker_url: str, channel: BlockingChannel
) -> None:
    q = channel.queue_declare("", exclusive=True).method.queue
    other = pika.BlockingConnection(pika.URLParameters(broker_url))
    try:
        with pytest.raises(ChannelClosedByBroker) as e:
            other.channel().basic_consume(q, lambda *a: None)
        assert e.value.reply_code == 405
    finally:
        other.close()


_LOCKED = (
    "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '{}' in vhost '/'. It "
    "could be originally declared on another connection or the exclusive property value does "
    "not match that of the original declaration."
)


@pytest.mark.parametrize("exclusive_first", [False, True], ids=["to-exclusive", "to-shared"])
def test_redeclaring_a_queue_with_the_other_exclusive_flag_is_locked(
    channel: BlockingChannel, name: str, exclusive_first: bool
) -> None:
    """405 (not 406 inequivalent arg), and before the other properties are compared."""
    channel.queue_declare(name, auto_delete=True, exclusive=exclusive_first)
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_declare(name, durable=True, exclusive=not exclusive_first)
    assert (e.value.reply_code, e.value.reply_text) == (405, _LOCKED.format(name))


def test_exclusive_queue_goes_with_its_connection(
    broker_url: str, channel: BlockingChannel
) -> None:
    other = pika.BlockingConnection(pika.URLParameters(broker_url))
    q = other.channel().queue_declare("", exclusive=True).method.queue
    other.close()
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_declare(q, passive=True)
    assert e.value.reply_code == 404


def test_purge_returns_count_and_empties(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name, auto_delete=True)
    channel.confirm_delivery()
    for _ in range(3):
        channel.basic_publish("", name, b"x")
    assert channel.queue_purge(name).method.message_count == 3
    assert get_all(channel, name) == []


def test_delete_if_empty_and_if_unused(
    channel: BlockingChannel, connection: pika.BlockingConnection, name: str
) -> None:
    channel.queue_declare(name)
    channel.confirm_delivery()
    channel.basic_publish("", name, b"x")
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_delete(name, if_empty=True)
    assert e.value.reply_code == 406
    ch = connection.channel()
    ch.basic_consume(name, lambda *a: None)
    ch2 = connection.channel()
    with pytest.raises(ChannelClosedByBroker) as e:
        ch2.queue_delete(name, if_unused=True)
    assert e.value.reply_code == 406
    assert connection.channel().queue_delete(name).method.message_count == 0  # delivered to ch


def test_queue_ttl_dead_letters_with_x_death(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name + "dlq", auto_delete=True)
    channel.queue_declare(
        name,
        auto_delete=True,
        arguments={
            "x-message-ttl": 50,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": name + "dlq",
        },
    )
    channel.basic_publish("", name, b"old", pika.BasicProperties(headers={"h": 1}))
    assert holds_within(
        lambda: channel.queue_declare(name + "dlq", passive=True).method.message_count == 1
    )
    _, props, body = channel.basic_get(name + "dlq", auto_ack=True)
    assert body == b"old"
    death = props.headers["x-death"][0]
    assert death["reason"] == "expired" and death["queue"] == name and death["count"] == 1
    assert death["routing-keys"] == [name] and death["exchange"] == ""
    assert props.headers["x-first-death-reason"] == "expired"
    assert props.headers["h"] == 1


def test_per_message_expiration(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name, auto_delete=True)
    channel.basic_publish("", name, b"short", pika.BasicProperties(expiration="30"))
    channel.basic_publish("", name, b"long", pika.BasicProperties(expiration="60000"))
    time.sleep(0.2)
    assert get_all(channel, name) == [b"long"]


def test_reject_without_requeue_dead_letters(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name + "dlq", auto_delete=True)
    channel.queue_declare(
        name,
        auto_delete=True,
        arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": name + "dlq"},
    )
    channel.basic_publish("", name, b"bad")
    method, _, _ = channel.basic_get(name)
    channel.basic_reject(method.delivery_tag, requeue=False)
    assert holds_within(
        lambda: channel.queue_declare(name + "dlq", passive=True).method.message_count == 1
    )
    _, props, _ = channel.basic_get(name + "dlq", auto_ack=True)
    assert props.headers["x-death"][0]["reason"] == "rejected"


def test_max_length_drops_head(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name, auto_delete=True, arguments={"x-max-length": 2})
    channel.confirm_delivery()
    for i in range(4):
        channel.basic_publish("", name, b"%d" % i)
    assert get_all(channel, name) == [b"2", b"3"]


def test_max_length_bytes_drops_head(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name, auto_delete=True, arguments={"x-max-length-bytes": 10})
    channel.confirm_delivery()
    for i in range(4):
        channel.basic_publish("", name, b"%d" % i * 4)
    assert get_all(channel, name) == [b"2222", b"3333"]


def test_reject_publish_overflow_nacks_the_publish(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(
        name, auto_delete=True, arguments={"x-max-length": 1, "x-overflow": "reject-publish"}
    )
    channel.confirm_delivery()
    channel.basic_publish("", name, b"first")
    with pytest.raises(NackError):
        channel.basic_publish("", name, b"second")
    assert get_all(channel, name) == [b"first"]


def test_reject_publish_counts_a_message_with_an_empty_body(
    channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(
        name, auto_delete=True, arguments={"x-max-length": 2, "x-overflow": "reject-publish"}
    )
    channel.confirm_delivery()
    channel.basic_publish("", name, b"")
    channel.basic_publish("", name, b"")
    with pytest.raises(NackError):
        channel.basic_publish("", name, b"")
    assert get_all(channel, name) == [b"", b""]


def test_max_length_dead_letters_with_maxlen_reason(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name + "dlq", auto_delete=True)
    channel.queue_declare(
        name,
        auto_delete=True,
        arguments={
            "x-max-length": 1,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": name + "dlq",
        },
    )
    channel.confirm_delivery()
    channel.basic_publish("", name, b"a")
    channel.basic_publish("", name, b"b")
    assert holds_within(
        lambda: channel.queue_declare(name + "dlq", passive=True).method.message_count == 1
    )
    _, props, body = channel.basic_get(name + "dlq", auto_ack=True)
    assert body == b"a" and props.headers["x-death"][0]["reason"] == "maxlen"


def test_priority_queue_delivers_highest_priority_first(
    channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(name, auto_delete=True, arguments={"x-max-priority": 5})
    channel.confirm_delivery()
    for prio in (1, 5, 3, 0, 9):
        channel.basic_publish("", name, b"%d" % prio, pika.BasicProperties(priority=prio))
    # Priorities above x-max-priority count as the maximum, in publish order.
    assert get_all(channel, name) == [b"5", b"9", b"3", b"1", b"0"]


def test_single_active_consumer_gets_everything(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(name, auto_delete=True, arguments={"x-single-active-consumer": True})
    got: list[str] = []
    channel.basic_consume(name, lambda ch, m, p, b: got.append("first"), auto_ack=True)
    channel.basic_consume(name, lambda ch, m, p, b: got.append("second"), auto_ack=True)
    for _ in range(6):
        channel.basic_publish("", name, b"x")
    for _ in range(20):
        connection.process_data_events(0.05)
        if len(got) == 6:
            break
    assert got == ["first"] * 6


def test_deleting_queue_cancels_consumers(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(name)
    cancelled: list[str] = []
    tag = channel.basic_consume(name, lambda *a: None)
    channel.add_on_cancel_callback(lambda frame: cancelled.append(frame.method.consumer_tag))
    connection.channel().queue_delete(name)
    assert holds_within(
        lambda: (connection.process_data_events(0.05), cancelled)[1] != [], timeout=3
    )
    assert cancelled == [tag]


def test_auto_delete_queue_goes_when_last_consumer_cancels(
    channel: BlockingChannel, name: str
) -> None:
    channel.queue_declare(name, auto_delete=True)
    tag = channel.basic_consume(name, lambda *a: None)
    channel.basic_cancel(tag)
    assert holds_within(lambda: _missing(channel.connection, name))


def test_queue_expires_when_unused(channel: BlockingChannel, name: str) -> None:
    channel.queue_declare(name, arguments={"x-expires": 100})
    time.sleep(1.0)  # a passive declare counts as use: look once, after the expiry
    assert _missing(channel.connection, name)


def _missing(connection: pika.BlockingConnection, queue: str) -> bool:
    ch = connection.channel()
    try:
        ch.queue_declare(queue, passive=True)
    except ChannelClosedByBroker:
        return True
    ch.close()
    return False
