"""Rules of the connection, channel, exchange, queue and basic classes, checked with the
project's client speaking AMQP 0-9 (raw frames where the client cannot produce the case)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from amqp_protocol import SPEC_0_9, Spec
from amqp_spark.client import ChannelClosed, ConnectionClosed, connect
from amqp_spark.client.channel import Channel

from .dialects import in_both_dialects
from .peer import Peer

rule = pytest.mark.spec_rule


@pytest.fixture
def ch(bundled_broker_url: str) -> Iterator[Channel]:
    conn = connect(bundled_broker_url, spec=SPEC_0_9)
    yield conn.channel()
    if conn.is_open:
        conn.close()


def _closed_with(code: int, call: object, *args: object, **kwargs: object) -> None:
    with pytest.raises((ChannelClosed, ConnectionClosed)) as info:
        call(*args, **kwargs)  # type: ignore[operator]
    assert info.value.reply_code == code


@in_both_dialects("connection.start:protocol-name", draft=("connection.start:protocol-name",))
def test_an_unknown_protocol_header_gets_the_servers_header_and_no_method(
    bundled_broker_url: str, spec: Spec
) -> None:
    """A header of the same family as ``spec``'s that no version has (a later revision)."""
    host, port = bundled_broker_url.split("@")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(spec.protocol_header[:-1] + b"\x63")
        reply = sock.recv(64)
        assert reply.startswith(b"AMQP") and len(reply) == 8


_START = ("connection.start:server-support", "connection.start.locales:required-support")


@in_both_dialects(*_START, draft=_START)
def test_the_server_offers_the_clients_version_and_en_us(
    bundled_broker_url: str, spec: Spec
) -> None:
    peer = Peer(bundled_broker_url, spec)
    try:
        assert peer.proto.spec is spec
        assert (peer.start.version_major, peer.start.version_minor) == spec.version[:2]
        assert "en_US" in peer.start.locales.decode().split()
    finally:
        peer.close()


@rule("exchange:required-types", "exchange:required-instances", "exchange:default-exchange")
def test_standard_exchanges_exist_and_the_default_routes_by_queue_name(ch: Channel) -> None:
    for name in ("amq.direct", "amq.fanout", "amq.topic", "amq.headers"):
        ch.exchange_declare(name, name.split(".")[1], passive=True)
    q = ch.queue_declare("").queue
    ch.basic_publish("", q, b"via default")
    d = ch.basic_get(q, no_ack=True)
    assert d is not None and d.body == b"via default"


@rule("exchange.declare.passive:not-found")
def test_passive_declare_of_a_missing_exchange_is_404(ch: Channel) -> None:
    _closed_with(404, ch.exchange_declare, "missing-exchange-09", "direct", passive=True)


@rule("exchange.declare.type:typed")
def test_redeclaring_an_exchange_with_another_type_is_refused(ch: Channel) -> None:
    ch.exchange_declare("typed-09", "direct")
    _closed_with(406, ch.exchange_declare, "typed-09", "fanout")


@rule("exchange.declare.type:support")
def test_an_unknown_exchange_type_is_refused(ch: Channel) -> None:
    _closed_with(503, ch.exchange_declare, "weird-09", "no-such-type")


@rule("exchange.declare.exchange:reserved")
def test_declaring_an_amq_exchange_is_refused(ch: Channel) -> None:
    _closed_with(403, ch.exchange_declare, "amq.mine-09", "direct")


@rule("exchange.declare.durable:support")
def test_a_durable_queue_binds_to_a_durable_exchange_and_not_to_a_transient_one(
    ch: Channel,
) -> None:
    """What tells the two kinds apart on the wire: rule queue.bind:transient-exchange."""
    queue = ch.queue_declare("", durable=True).queue
    ch.exchange_declare("durable-09", "direct", durable=True)
    ch.exchange_declare("transient-09", "direct")
    ch.queue_bind(queue, "durable-09", "k")
    _closed_with(530, ch.queue_bind, queue, "transient-09", "k")


@rule("exchange.declare.durable:sticky")
def test_redeclaring_an_exchange_ignores_durable(ch: Channel) -> None:
    ch.exchange_declare("sticky-durable-09", "direct", durable=True)
    ch.exchange_declare("sticky-durable-09", "direct", durable=False)
    queue = ch.queue_declare("", durable=True).queue
    ch.queue_bind(queue, "sticky-durable-09", "k")  # still durable


@rule("queue.declare:default-binding", "queue.declare.queue:default-name")
def test_a_server_named_queue_is_bound_to_the_default_exchange(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    assert q.startswith("amq.gen-")
    ch.basic_publish("", q, b"x")
    assert ch.basic_get(q, no_ack=True) is not None


@rule("queue.declare.durable:types")
def test_a_transient_queue_binds_to_a_transient_exchange_and_a_durable_one_does_not(
    ch: Channel,
) -> None:
    """What tells the two kinds apart on the wire: rule queue.bind:transient-exchange."""
    ch.exchange_declare("transient-for-queues-09", "fanout")
    transient = ch.queue_declare("").queue
    durable = ch.queue_declare("", durable=True).queue
    ch.queue_bind(transient, "transient-for-queues-09", "")
    _closed_with(530, ch.queue_bind, durable, "transient-for-queues-09", "")


@rule("queue.declare.exclusive:types")
def test_a_shared_queue_is_open_to_other_connections_and_an_exclusive_one_is_not(
    bundled_broker_url: str, ch: Channel
) -> None:
    shared = ch.queue_declare("").queue
    exclusive = ch.queue_declare("", exclusive=True).queue
    other = connect(bundled_broker_url, spec=SPEC_0_9)
    try:
        assert other.channel().queue_declare(shared, passive=True).queue == shared
        _closed_with(405, other.channel().queue_declare, exclusive, passive=True)
    finally:
        other.close()


@rule("queue.bind:duplicates")
def test_a_duplicate_binding_is_not_an_error_and_routes_once(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    ch.queue_bind(q, "amq.direct", "k")
    ch.queue_bind(q, "amq.direct", "k")
    ch.basic_publish("amq.direct", "k", b"once")
    d = ch.basic_get(q, no_ack=True)
    assert d is not None and d.body == b"once"
    assert ch.basic_get(q, no_ack=True) is None


@rule("queue.bind.queue:queue-existence")
def test_binding_a_missing_queue_is_refused(ch: Channel) -> None:
    _closed_with(404, ch.queue_bind, "missing-queue-09", "amq.direct", "k")


@rule("queue.bind.exchange:exchange-existence")
def test_binding_to_a_missing_exchange_is_refused(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    _closed_with(404, ch.queue_bind, q, "missing-exchange-09", "k")


@rule("queue.bind.routing-key:direct-exchange-key-matching")
def test_a_direct_binding_routes_equal_keys(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    ch.queue_bind(q, "amq.direct", "key-09")
    ch.basic_publish("amq.direct", "key-09", b"match")
    ch.basic_publish("amq.direct", "other", b"no")
    d = ch.basic_get(q, no_ack=True)
    assert d is not None and d.body == b"match"
    assert ch.basic_get(q, no_ack=True) is None


@rule("queue.unbind.queue:02")
def test_unbinding_a_missing_queue_is_404(ch: Channel) -> None:
    _closed_with(404, ch.queue_unbind, "missing-queue-09", "amq.direct", "k")


@rule("queue.unbind.exchange:03")
def test_unbinding_from_a_missing_exchange_is_404(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    _closed_with(404, ch.queue_unbind, q, "missing-exchange-09", "k")


@rule("queue.purge:01")
def test_purge_empties_the_queue(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    for _ in range(3):
        ch.basic_publish("", q, b"x")
    assert ch.queue_purge(q) == 3
    assert ch.basic_get(q) is None


@rule("queue.purge.queue:02")
def test_purging_a_missing_queue_is_a_channel_error(ch: Channel) -> None:
    _closed_with(404, ch.queue_purge, "missing-queue-09")


@rule("queue.delete.if-unused:01")
def test_delete_respects_if_unused(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    ch.basic_consume(q)
    _closed_with(406, ch.queue_delete, q, if_unused=True)


@rule("queue.delete.if-empty:01")
def test_delete_if_empty_of_a_non_empty_queue_is_406(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    ch.basic_publish("", q, b"x")
    ch.queue_declare(q, passive=True)
    _closed_with(406, ch.queue_delete, q, if_empty=True)


@in_both_dialects(
    "queue.purge.queue:01",
    "queue.delete.queue:01",
    "basic.get.queue:01",
    draft=(
        "queue.purge.queue:empty-name",
        "queue.delete.queue:empty-name",
        "basic.get.queue:queue-exists-if-empty",
    ),
)
@pytest.mark.parametrize("method", ["queue.purge", "queue.delete", "basic.get"])
def test_an_empty_queue_name_without_a_declared_queue_is_530(
    bundled_broker_url: str, method: str, spec: Spec
) -> None:
    peer = Peer(bundled_broker_url, spec)
    try:
        peer.open_channel(1)
        peer.send(1, method, queue="")
        assert peer.error(1) == ("connection", 530)
    finally:
        peer.close()


@rule("basic.consume.consumer-tag:01")
def test_reusing_a_consumer_tag_is_refused(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    ch.basic_consume(q, consumer_tag="same")
    _closed_with(530, ch.basic_consume, q, consumer_tag="same")


@rule("basic.ack.multiple:01")
def test_acking_an_unknown_tag_is_a_channel_error(ch: Channel) -> None:
    ch.basic_ack(99)
    _closed_with(406, ch.queue_declare, "")


@rule("basic:06", "basic:08")
def test_basic_priorities_and_order_within_a_priority(ch: Channel) -> None:
    q = ch.queue_declare("", arguments={"x-max-priority": 9}).queue
    ch.basic_publish("", q, b"a", {"priority": 1, "delivery_mode": 2})
    ch.basic_publish("", q, b"b", {"priority": 1, "delivery_mode": 1})
    ch.basic_publish("", q, b"top", {"priority": 8})
    bodies = [d.body if (d := ch.basic_get(q, no_ack=True)) else None for _ in range(3)]
    assert bodies == [b"top", b"a", b"b"]


@rule("basic:09", "basic:10")
def test_automatic_and_explicit_acknowledgements(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    ch.basic_publish("", q, b"1")
    ch.basic_publish("", q, b"2")
    first, d = ch.basic_get(q, no_ack=True), ch.basic_get(q)
    assert first is not None and first.body == b"1" and d is not None
    ch.basic_ack(d.delivery_tag)
    assert ch.queue_declare(q, passive=True).message_count == 0


@rule("basic.qos.prefetch-count:01")
def test_deliveries_stay_within_the_prefetch_count(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    for _ in range(3):
        ch.basic_publish("", q, b"x")
    ch.basic_qos(prefetch_count=1)
    ch.basic_consume(q)
    first = ch.next_delivery(timeout=5)
    assert first is not None and ch.next_delivery(timeout=0.3) is None
    ch.basic_ack(first.delivery_tag)
    assert ch.next_delivery(timeout=5) is not None


@rule("basic.publish.exchange:01")
def test_a_blank_exchange_is_the_default_exchange(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    ch.basic_publish("", q, b"x")
    assert ch.basic_get(q, no_ack=True) is not None


@rule("basic.publish.exchange:02")
def test_publishing_to_an_internal_exchange_is_403(ch: Channel) -> None:
    ch.exchange_declare("internal-09", "fanout", internal=True)
    ch.basic_publish("internal-09", "", b"x")
    _closed_with(403, ch.queue_declare, "")


@rule("basic.recover:01", "domain.redelivered:implementation")
def test_recovered_messages_are_marked_redelivered(ch: Channel) -> None:
    q = ch.queue_declare("").queue
    ch.basic_publish("", q, b"x")
    first = ch.basic_get(q)
    assert first is not None and not first.redelivered
    ch.basic_recover(requeue=True)
    again = ch.basic_get(q, no_ack=True)
    assert again is not None and again.redelivered


@in_both_dialects("channel.open:state", draft=("channel.open:state",))
def test_opening_an_open_channel_is_a_connection_error(bundled_broker_url: str, spec: Spec) -> None:
    peer = Peer(bundled_broker_url, spec)
    try:
        peer.open_channel(1)
        peer.send(1, "channel.open")
        assert peer.error(1) == ("connection", 504)
    finally:
        peer.close()
