"""Quorum queues (``x-queue-type=quorum``) as RabbitMQ 4.0 runs them on one node: the same
test code against the bundled broker and RabbitMQ 4.0.5, whose replies and texts these are
(measured on 3.10.8 first; where 4.0 differs, the test says so and pins 4.0).

A quorum queue on RabbitMQ settles returns asynchronously, so a message put back is looked
for with a bounded basic.get loop (``_get``), and publishes go with confirms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker, ConnectionClosedByBroker, NackError

from broker import Broker
from broker.model.ready_messages import ReadyMessages

from .helpers import get_all, get_when_there

QUORUM = {"x-queue-type": "quorum"}


def _declare(channel: BlockingChannel, name: str, **arguments: Any) -> Any:
    return channel.queue_declare(name, durable=True, arguments={**QUORUM, **arguments})


def _publish(channel: BlockingChannel, queue: str, *bodies: bytes) -> None:
    channel.confirm_delivery()
    for body in bodies:
        channel.basic_publish("", queue, body)


def _refusal(channel: BlockingChannel, name: str, **kwargs: Any) -> tuple[int, str]:
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_declare(name, **kwargs)
    return e.value.reply_code, e.value.reply_text


def _counts(channel: BlockingChannel, queue: str) -> list[tuple[bytes, int | None]]:
    """Body and x-delivery-count (None: no such header) of every message left, taken with
    basic.get."""
    out = []
    for _ in range(100):
        method, properties, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append((body, (properties.headers or {}).get("x-delivery-count")))
    raise AssertionError("more messages than expected")


# -- declaration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("properties", "refused"),
    [
        ({"durable": False}, "non-durable"),
        ({"durable": True, "exclusive": True}, "exclusive-owner"),
        ({"durable": True, "auto_delete": True}, "auto-delete"),
        ({"durable": True, "exclusive": True, "auto_delete": True}, "auto-delete"),
        ({"durable": False, "exclusive": True}, "exclusive-owner"),
    ],
)
def test_a_quorum_queue_is_durable_and_neither_exclusive_nor_auto_delete(
    channel: BlockingChannel, name: str, properties: dict[str, bool], refused: str
) -> None:
    assert _refusal(channel, name, arguments=QUORUM, **properties) == (
        406,
        f"PRECONDITION_FAILED - invalid property '{refused}' for queue '{name}' in vhost '/'",
    )


def test_a_quorum_queue_cannot_be_server_named(channel: BlockingChannel) -> None:
    assert _refusal(channel, "", durable=False, arguments={**QUORUM, "x-max-priority": 5}) == (
        406,
        "PRECONDITION_FAILED - Cannot declare a server-named queue for type rabbit_quorum_queue",
    )


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("x-max-priority", 5),
        ("x-queue-mode", "lazy"),
        ("x-queue-master-locator", "min-masters"),
        ("x-max-age", "1h"),
        ("x-stream-max-segment-size-bytes", 1000),
    ],
)
def test_classic_only_and_stream_arguments_are_refused_before_the_properties(
    channel: BlockingChannel, name: str, argument: str, value: Any
) -> None:
    refusal = _refusal(channel, name, durable=False, arguments={**QUORUM, argument: value})
    assert refusal == (
        406,
        f"PRECONDITION_FAILED - invalid arg '{argument}' for queue '{name}' in vhost '/' "
        "of queue type rabbit_quorum_queue",
    )


def test_quorum_queue_arguments_are_accepted(channel: BlockingChannel, name: str) -> None:
    ok = _declare(
        channel,
        name,
        **{
            "x-max-length": 10,
            "x-max-length-bytes": 1000,
            "x-overflow": "reject-publish",
            "x-delivery-limit": 3,
            "x-dead-letter-exchange": "amq.fanout",
            "x-dead-letter-routing-key": "dead",
            "x-dead-letter-strategy": "at-most-once",
            "x-expires": 600_000,
            "x-message-ttl": 60_000,
            "x-single-active-consumer": True,
            "x-quorum-initial-group-size": 3,
            "x-max-in-memory-length": 10,
            "x-queue-leader-locator": "client-local",
        },
    )
    assert (ok.method.queue, ok.method.message_count, ok.method.consumer_count) == (name, 0, 0)
    channel.queue_delete(name)


def test_argument_values_are_checked_with_rabbitmqs_terms(
    channel: BlockingChannel, name: str
) -> None:
    where = f"for queue '{name}' in vhost '/'"
    cases = [
        ({"x-max-length": "abc"}, f'x-max-length\' {where}: "expected integer, got longstr"'),
        ({"x-message-ttl": -1}, f"x-message-ttl' {where}: {{value_negative,-1}}"),
        ({"x-overflow": "bogus"}, f"x-overflow' {where}: invalid_overflow"),
        (
            {"x-dead-letter-strategy": "bogus"},
            f"x-dead-letter-strategy' {where}: invalid_dlx_strategy",
        ),
        (
            {"x-dead-letter-routing-key": "k"},
            f"x-dead-letter-routing-key' {where}: routing_key_but_no_dlx_defined",
        ),
    ]
    connection = channel.connection
    for arguments, text in cases:
        assert _refusal(
            connection.channel(), name, durable=True, arguments={**QUORUM, **arguments}
        ) == (
            406,
            f"PRECONDITION_FAILED - invalid arg '{text}",
        )


def test_redeclaring_with_other_arguments_is_refused_with_rabbitmqs_texts(
    channel: BlockingChannel, name: str
) -> None:
    _declare(channel, name, **{"x-max-length": 5})
    _declare(channel, name, **{"x-max-length": 5})
    where = f"for queue '{name}' in vhost '/'"
    cases = [
        ({**QUORUM, "x-max-length": 6}, "x-max-length", "received '6' but current is '5'"),
        (QUORUM, "x-max-length", "received none but current is the value '5' of type 'signedint'"),
        # RabbitMQ 4.0 takes a queue type not given as classic (3.10: "received none but
        # current is the value 'quorum' of type 'longstr'").
        ({"x-max-length": 5}, "x-queue-type", "received 'classic' but current is 'quorum'"),
        (
            {"x-queue-type": "classic", "x-max-length": 5},
            "x-queue-type",
            "received 'classic' but current is 'quorum'",
        ),
        (
            {**QUORUM, "x-max-length": 5, "x-delivery-limit": 3},
            "x-delivery-limit",
            "received the value '3' of type 'signedint' but current is none",
        ),
    ]
    for arguments, argument, text in cases:
        refusal = _refusal(channel.connection.channel(), name, durable=True, arguments=arguments)
        assert refusal == (
            406,
            f"PRECONDITION_FAILED - inequivalent arg '{argument}' {where}: {text}",
        )
    channel.queue_delete(name)


def test_a_classic_queue_redeclared_as_quorum_is_refused(
    channel: BlockingChannel, name: str
) -> None:
    """RabbitMQ 4.0's text: a queue declared without a type is classic (3.10: "received the
    value 'quorum' of type 'longstr' but current is none")."""
    channel.queue_declare(name, durable=True)
    assert _refusal(channel.connection.channel(), name, durable=True, arguments=QUORUM) == (
        406,
        f"PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue '{name}' in vhost '/': "
        "received 'quorum' but current is 'classic'",
    )
    channel.queue_delete(name)


def test_declare_ok_counts_ready_messages_and_consumers(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    _declare(channel, name)
    _publish(channel, name, b"a", b"b", b"c")
    consumer = connection.channel()
    consumer.basic_qos(prefetch_count=1)
    delivered: list[bytes] = []
    consumer.basic_consume(name, lambda ch, m, p, body: delivered.append(body))
    for _ in range(100):
        if delivered:
            break
        connection.process_data_events(0.05)
    ok = _declare(channel, name)
    assert (delivered, ok.method.message_count, ok.method.consumer_count) == ([b"a"], 2, 1)
    channel.queue_delete(name)


# -- deliveries and returns -------------------------------------------------------------------


def test_every_return_is_counted_in_x_delivery_count(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    """A delivery has x-delivery-count once the message came back, fetched or consumed; a
    first one has none (RabbitMQ 4.0; 3.10 gave every basic.get-ok one, 0 at first)."""
    _declare(channel, name)
    _publish(channel, name, b"m")
    seen: list[tuple[bool, Any]] = []

    def on_message(ch: BlockingChannel, method: Any, properties: Any, body: bytes) -> None:
        seen.append((method.redelivered, properties.headers))
        ch.basic_nack(method.delivery_tag, requeue=True)

    consumer = connection.channel()
    consumer.basic_qos(prefetch_count=1)
    consumer.basic_consume(name, on_message)
    for _ in range(100):
        if len(seen) >= 2:
            break
        connection.process_data_events(0.05)
    consumer.close()
    assert seen[:2] == [(False, None), (True, {"x-delivery-count": 1})]
    channel.queue_purge(name)
    _publish(channel, name, b"fetched")
    fetched = []
    for _ in range(2):
        method, properties, _ = get_when_there(channel, name)
        fetched.append((method.redelivered, properties.headers))
        channel.basic_nack(method.delivery_tag, requeue=True)
    assert fetched == [(False, None), (True, {"x-delivery-count": 1})]
    channel.queue_delete(name)


def test_nack_and_a_closing_channel_return_messages_ahead_of_those_never_delivered(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    """RabbitMQ 4.0 (3.10 put the nacked m1 and m2 at the back, behind m4)."""
    _declare(channel, name)
    _publish(channel, name, b"m1", b"m2", b"m3", b"m4")
    holder = connection.channel()
    get_when_there(holder, name)
    second, _, _ = get_when_there(holder, name)
    holder.basic_nack(second.delivery_tag, multiple=True, requeue=True)
    assert [get_when_there(holder, name)[2] for _ in range(3)] == [b"m1", b"m2", b"m3"]
    holder.close()  # m1, m2 and m3 go back ahead of m4
    for _ in range(100):
        if channel.queue_declare(name, passive=True).method.message_count == 4:
            break
        connection.sleep(0.05)
    assert _counts(channel, name) == [(b"m1", 2), (b"m2", 2), (b"m3", 1), (b"m4", None)]
    channel.queue_delete(name)


def test_a_message_returned_more_times_than_the_delivery_limit_is_dead_lettered(
    channel: BlockingChannel, name: str
) -> None:
    dlq = f"{name}-dlq"
    channel.queue_declare(dlq)
    _declare(
        channel,
        name,
        **{"x-delivery-limit": 1, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq},
    )
    _publish(channel, name, b"poison")
    for count in (None, 1):
        method, properties, _ = get_when_there(channel, name)
        assert (properties.headers or {}).get("x-delivery-count") == count
        channel.basic_reject(method.delivery_tag, requeue=True)
    method, properties, body = get_when_there(channel, dlq)
    death = properties.headers["x-death"][0]
    assert (body, death["reason"], death["queue"]) == (b"poison", "delivery_limit", name)
    assert channel.queue_declare(name, passive=True).method.message_count == 0
    channel.queue_delete(name)
    channel.queue_delete(dlq)


def test_consumers_of_the_highest_priority_are_served_first(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    _declare(channel, name)
    got: dict[str, list[bytes]] = {"low": [], "high": []}
    for label, priority in (("low", 0), ("high", 10)):
        ch = connection.channel()
        ch.basic_qos(prefetch_count=2)
        ch.basic_consume(
            name,
            lambda c, m, p, body, label=label: got[label].append(body),
            arguments={"x-priority": priority},
        )
    _publish(channel, name, *(b"%d" % i for i in range(4)))
    for _ in range(100):
        if len(got["low"]) + len(got["high"]) == 4:
            break
        connection.process_data_events(0.05)
    assert got == {"low": [b"2", b"3"], "high": [b"0", b"1"]}
    channel.queue_delete(name)


def test_an_exclusive_consumer_does_not_keep_others_out(
    connection: pika.BlockingConnection, channel: BlockingChannel, name: str
) -> None:
    _declare(channel, name)
    connection.channel().basic_consume(name, lambda *args: None, exclusive=True)
    assert connection.channel().basic_consume(name, lambda *args: None)
    assert _declare(channel, name).method.consumer_count == 2
    channel.queue_delete(name)


def test_message_ttl_expires_messages(channel: BlockingChannel, name: str) -> None:
    _declare(channel, name, **{"x-message-ttl": 50})
    _publish(channel, name, b"old")
    for _ in range(100):
        if channel.queue_declare(name, passive=True).method.message_count == 0:
            break
        channel.connection.sleep(0.05)
    assert get_all(channel, name) == []
    channel.queue_delete(name)


# -- length limits ----------------------------------------------------------------------------


def _confirmed(channel: BlockingChannel, queue: str, *bodies: bytes) -> list[bool]:
    results = []
    for body in bodies:
        try:
            channel.basic_publish("", queue, body)
            results.append(True)
        except NackError:
            results.append(False)
    return results


def test_reject_publish_takes_the_publish_that_crosses_the_limit_and_reopens_at_80_percent(
    channel: BlockingChannel, name: str
) -> None:
    _declare(channel, name, **{"x-max-length": 2, "x-overflow": "reject-publish"})
    channel.confirm_delivery()
    assert _confirmed(channel, name, b"1", b"2", b"3", b"4") == [True, True, True, False]
    channel.basic_get(name, auto_ack=True)
    assert _confirmed(channel, name, b"5") == [False]  # 2 ready: above 80% of 2
    channel.basic_get(name, auto_ack=True)
    assert _confirmed(channel, name, b"6", b"7", b"8") == [True, True, False]
    assert get_all(channel, name) == [b"3", b"6", b"7"]
    channel.queue_delete(name)


def test_reject_publish_dlx_drops_the_head_as_drop_head_does(
    channel: BlockingChannel, name: str
) -> None:
    dlq = f"{name}-dlq"
    channel.queue_declare(dlq)
    arguments = {"x-max-length": 2, "x-overflow": "reject-publish-dlx"}
    _declare(
        channel,
        name,
        **arguments,
        **{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq},
    )
    channel.confirm_delivery()
    assert _confirmed(channel, name, b"1", b"2", b"3", b"4") == [True] * 4
    assert get_all(channel, name) == [b"3", b"4"]
    get_when_there(channel, dlq)
    channel.queue_delete(name)
    channel.queue_delete(dlq)


# -- what a quorum queue refuses --------------------------------------------------------------


def test_a_consumer_under_global_qos_is_refused(broker_url: str, name: str) -> None:
    with pika.BlockingConnection(pika.URLParameters(broker_url)) as connection:
        channel = connection.channel()
        _declare(channel, name)
        channel.basic_qos(prefetch_count=5, global_qos=True)
        with pytest.raises(ConnectionClosedByBroker) as e:
            channel.basic_consume(name, lambda *args: None)
    assert (e.value.reply_code, e.value.reply_text) == (
        540,
        f"NOT_IMPLEMENTED - queue '{name}' in vhost '/' does not support global qos",
    )
    with pika.BlockingConnection(pika.URLParameters(broker_url)) as connection:
        connection.channel().queue_delete(name)


@pytest.mark.parametrize("flag", ["if-unused", "if-empty"])
def test_queue_delete_with_if_unused_or_if_empty_is_refused(
    broker_url: str, name: str, flag: str
) -> None:
    with pika.BlockingConnection(pika.URLParameters(broker_url)) as connection:
        channel = connection.channel()
        _declare(channel, name)
        with pytest.raises(ConnectionClosedByBroker) as e:
            channel.queue_delete(name, **{flag.replace("-", "_"): True})
    assert (e.value.reply_code, e.value.reply_text) == (
        540,
        f"NOT_IMPLEMENTED - cannot delete queue '{name}' in vhost '/'. queue.delete operations "
        f"with {flag} flag set are not supported by quorum queues",
    )
    with pika.BlockingConnection(pika.URLParameters(broker_url)) as connection:
        assert connection.channel().queue_delete(name).method.message_count == 0


@pytest.mark.parametrize(
    ("queue_type", "durable", "offset"),
    [("classic", False, "first"), ("classic", True, 5), ("quorum", True, "first")],
)
def test_x_stream_offset_is_refused_on_a_queue_that_is_not_a_stream(
    channel: BlockingChannel, name: str, queue_type: str, durable: bool, offset: Any
) -> None:
    arguments = QUORUM if queue_type == "quorum" else None
    channel.queue_declare(name, durable=durable, arguments=arguments)
    _publish(channel, name, b"kept")
    consumer = channel.connection.channel()
    with pytest.raises(ChannelClosedByBroker) as e:
        consumer.basic_consume(name, lambda *args: None, arguments={"x-stream-offset": offset})
    assert (e.value.reply_code, e.value.reply_text) == (
        406,
        f"PRECONDITION_FAILED - invalid arg 'x-stream-offset' for queue '{name}' in vhost '/' "
        f"of queue type rabbit_{queue_type}_queue",
    )
    assert channel.queue_delete(name).method.message_count == 1


# -- durability -------------------------------------------------------------------------------


def test_transient_messages_of_a_quorum_queue_survive_a_restart(tmp_path: Path) -> None:
    """Bundled broker only (RabbitMQ 3.10 showed the same across ``rabbitmqctl stop_app`` and
    ``start_app``: both messages back, delivery mode kept, the transient one of a classic
    queue gone)."""
    data = str(tmp_path / "data")
    transient, persistent = (pika.BasicProperties(delivery_mode=m) for m in (1, 2))
    with (
        Broker(data_dir=data) as broker,
        pika.BlockingConnection(pika.URLParameters(broker.url)) as connection,
    ):
        channel = connection.channel()
        _declare(channel, "qq")
        channel.queue_declare("cq", durable=True)
        channel.confirm_delivery()
        for queue in ("qq", "cq"):
            channel.basic_publish("", queue, b"transient", transient)
            channel.basic_publish("", queue, b"persistent", persistent)
    with (
        Broker(data_dir=data) as broker,
        pika.BlockingConnection(pika.URLParameters(broker.url)) as connection,
    ):
        channel = connection.channel()
        assert _declare(channel, "qq").method.message_count == 2
        kept = []
        for _ in range(2):
            _, properties, body = channel.basic_get("qq", auto_ack=True)
            kept.append((body, properties.delivery_mode))
        assert kept == [(b"transient", 1), (b"persistent", 2)]
        assert get_all(channel, "cq") == [b"persistent"]


def test_a_returned_message_goes_back_ahead_of_those_spilled_to_disk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bundled broker only (RabbitMQ's spilling threshold cannot be lowered from here): past
    the in-memory threshold, a return still goes back to the head, with its count."""
    monkeypatch.setattr(ReadyMessages, "SPILL_AFTER_MESSAGES", 2)
    with (
        Broker() as broker,
        pika.BlockingConnection(pika.URLParameters(broker.url)) as connection,
    ):
        channel = connection.channel()
        _declare(channel, "qq")
        _publish(channel, "qq", b"m0", b"m1", b"m2")
        method, _, _ = channel.basic_get("qq", auto_ack=False)
        assert method is not None
        channel.basic_reject(method.delivery_tag, requeue=True)
        channel.queue_declare("qq", passive=True)  # a round trip: the reject is done
        server = broker._server
        assert server is not None
        assert server.vhosts["/"].queues["qq"].ready.spilled == 1  # m2
        assert _counts(channel, "qq") == [(b"m0", 1), (b"m1", None), (b"m2", None)]
