"""Exchange types, exchange-to-exchange bindings, alternate exchanges and the declaration
rules (equivalence, reserved names)."""

from __future__ import annotations

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel
from pika.exceptions import ChannelClosedByBroker

from .helpers import get_all


def _queue(channel: BlockingChannel, exchange: str, key: str, arguments: dict | None = None) -> str:
    q = channel.queue_declare("", exclusive=True).method.queue
    channel.queue_bind(q, exchange, key, arguments=arguments)
    return q


def _publish(
    channel: BlockingChannel, exchange: str, key: str, body: bytes, headers: dict | None = None
) -> None:
    channel.basic_publish(exchange, key, body, pika.BasicProperties(headers=headers))


@pytest.mark.parametrize(
    ("binding", "key", "routed"),
    [
        ("a.b.c", "a.b.c", True),
        ("a.*.c", "a.x.c", True),
        ("a.*.c", "a.x.y.c", False),
        ("a.#", "a", True),
        ("a.#", "a.b.c.d", True),
        ("#.c", "a.b.c", True),
        ("#", "anything.at.all", True),
        ("a.#.c", "a.c", True),
        ("a.#.c", "a.b.b.c", True),
        ("*", "a.b", False),
        ("*.*", "a.b", True),
        ("a.b", "a.b.c", False),
    ],
)
def test_topic_exchange_matches_star_and_hash(
    channel: BlockingChannel, name: str, binding: str, key: str, routed: bool
) -> None:
    channel.exchange_declare(name, "topic", auto_delete=True)
    q = _queue(channel, name, binding)
    channel.confirm_delivery()
    _publish(channel, name, key, b"m")
    assert get_all(channel, q) == ([b"m"] if routed else [])


def test_direct_and_fanout_exchanges_route(channel: BlockingChannel, name: str) -> None:
    channel.exchange_declare(name + "d", "direct", auto_delete=True)
    channel.exchange_declare(name + "f", "fanout", auto_delete=True)
    qa, qb = _queue(channel, name + "d", "a"), _queue(channel, name + "d", "b")
    f1, f2 = _queue(channel, name + "f", "ignored"), _queue(channel, name + "f", "")
    channel.confirm_delivery()
    _publish(channel, name + "d", "a", b"to-a")
    _publish(channel, name + "f", "whatever", b"to-all")
    assert get_all(channel, qa) == [b"to-a"] and get_all(channel, qb) == []
    assert get_all(channel, f1) == [b"to-all"] and get_all(channel, f2) == [b"to-all"]


@pytest.mark.parametrize(
    ("x_match", "headers", "routed"),
    [
        ("all", {"a": 1, "b": "two"}, True),
        ("all", {"a": 1}, False),
        ("any", {"a": 1}, True),
        ("any", {"c": 3}, False),
        ("all", {"a": 1, "b": "two", "x-extra": 1}, True),
        ("any-with-x", {"x-k": "v"}, True),
        ("all-with-x", {"a": 1, "b": "two"}, False),
    ],
)
def test_headers_exchange_x_match(
    channel: BlockingChannel, name: str, x_match: str, headers: dict, routed: bool
) -> None:
    channel.exchange_declare(name, "headers", auto_delete=True)
    q = _queue(channel, name, "", {"x-match": x_match, "a": 1, "b": "two", "x-k": "v"})
    channel.confirm_delivery()
    _publish(channel, name, "", b"m", headers)
    assert get_all(channel, q) == ([b"m"] if routed else [])


def test_standard_exchanges_exist(channel: BlockingChannel) -> None:
    for ex in ("amq.direct", "amq.fanout", "amq.topic", "amq.headers", "amq.match"):
        channel.exchange_declare(ex, passive=True)


def test_exchange_to_exchange_binding_routes_through(channel: BlockingChannel, name: str) -> None:
    channel.exchange_declare(name + "src", "topic")  # not auto-delete: it loses its binding
    channel.exchange_declare(name + "dst", "fanout", auto_delete=True)
    channel.exchange_bind(name + "dst", name + "src", "k.*")
    q = _queue(channel, name + "dst", "")
    channel.confirm_delivery()
    _publish(channel, name + "src", "k.1", b"yes")
    _publish(channel, name + "src", "other", b"no")
    assert get_all(channel, q) == [b"yes"]
    channel.exchange_unbind(name + "dst", name + "src", "k.*")
    _publish(channel, name + "src", "k.2", b"unbound")
    assert get_all(channel, q) == []
    channel.exchange_delete(name + "src")


def test_alternate_exchange_receives_unroutable(channel: BlockingChannel, name: str) -> None:
    channel.exchange_declare(name + "ae", "fanout", auto_delete=True)
    channel.exchange_declare(
        name, "direct", auto_delete=True, arguments={"alternate-exchange": name + "ae"}
    )
    routed, unrouted = _queue(channel, name, "k"), _queue(channel, name + "ae", "")
    channel.confirm_delivery()
    _publish(channel, name, "k", b"routed")
    _publish(channel, name, "nope", b"unrouted")
    assert get_all(channel, routed) == [b"routed"]
    assert get_all(channel, unrouted) == [b"unrouted"]


def test_redeclare_with_other_type_is_406(channel: BlockingChannel, name: str) -> None:
    channel.exchange_declare(name, "direct", auto_delete=True)
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.exchange_declare(name, "fanout", auto_delete=True)
    assert e.value.reply_code == 406
    assert "inequivalent arg 'type'" in e.value.reply_text


def test_passive_declare_of_missing_exchange_is_404(channel: BlockingChannel, name: str) -> None:
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.exchange_declare(name, passive=True)
    assert e.value.reply_code == 404


def test_amq_prefix_is_reserved_for_exchanges(channel: BlockingChannel, name: str) -> None:
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.exchange_declare("amq." + name, "direct")
    assert e.value.reply_code == 403


def test_unknown_exchange_type_closes_the_channel_with_406(
    channel: BlockingChannel, name: str
) -> None:
    """RabbitMQ 4's answer (3.10 closed the connection with 503; 0-9 keeps that rule)."""
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.exchange_declare(name, "no-such-type")
    assert e.value.reply_code == 406
    assert e.value.reply_text == "PRECONDITION_FAILED - unknown exchange type 'no-such-type'"


def test_passive_declare_of_the_default_exchange_is_403(channel: BlockingChannel) -> None:
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.exchange_declare("", passive=True)
    assert e.value.reply_code == 403
    assert "operation not permitted on the default exchange" in e.value.reply_text


def test_delete_if_unused_refuses_exchange_with_bindings(
    channel: BlockingChannel, name: str
) -> None:
    channel.exchange_declare(name, "direct")
    _queue(channel, name, "k")
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.exchange_delete(name, if_unused=True)
    assert e.value.reply_code == 406


def test_publish_to_missing_exchange_closes_channel_404(
    channel: BlockingChannel, name: str
) -> None:
    channel.basic_publish(name, "k", b"x")
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_declare("", exclusive=True)
    assert e.value.reply_code == 404
    assert e.value.reply_text == f"NOT_FOUND - no exchange '{name}' in vhost '/'"


def test_publish_to_internal_exchange_is_403(channel: BlockingChannel, name: str) -> None:
    channel.exchange_declare(name, "fanout", internal=True, auto_delete=True)
    channel.basic_publish(name, "k", b"x")
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_declare("", exclusive=True)
    assert e.value.reply_code == 403


def test_binding_to_default_exchange_is_403(channel: BlockingChannel) -> None:
    q = channel.queue_declare("", exclusive=True).method.queue
    with pytest.raises(ChannelClosedByBroker) as e:
        channel.queue_bind(q, "", "k")
    assert e.value.reply_code == 403
