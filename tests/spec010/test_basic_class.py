"""The draft's exchange, queue and basic classes over the virtual hosts, exchanges and queues
every dialect shares: a 0-10 publisher reaches a pika (0-9-1) consumer and the reverse."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from tests.spec09.peer import Peer


@pytest.fixture
def pika_channel(bundled_broker_url: str) -> Iterator[BlockingChannel]:
    conn = pika.BlockingConnection(pika.URLParameters(bundled_broker_url))
    yield conn.channel()
    conn.close()


def _declare_bound_queue(peer: Peer, name: str) -> None:
    """A direct exchange and a queue bound to it by the key "k", declared over 0-10."""
    peer.send(1, "exchange.declare", exchange=name, type="direct")
    ok = peer.call(1, "queue.declare", queue=name)
    assert (ok.queue, ok.message_count) == (name, 0)
    peer.send(1, "queue.bind", queue=name, exchange=name, routing_key="k")


def test_a_0_10_publisher_reaches_a_pika_consumer(
    peer: Peer, name: str, pika_channel: BlockingChannel
) -> None:
    _declare_bound_queue(peer, name)
    peer.send_content(
        1,
        "basic.publish",
        b"from 0-10",
        {"content_type": "text/plain", "headers": {"n": 7, "s": "x"}},
        exchange=name,
        routing_key="k",
    )
    got = None
    for method, properties, body in pika_channel.consume(name, inactivity_timeout=5):
        got = method, properties, body
        break
    assert got is not None and got[0] is not None
    method, properties, body = got
    assert body == b"from 0-10"
    assert (method.exchange, method.routing_key) == (name, "k")
    assert properties.content_type == "text/plain"
    assert properties.headers == {"n": 7, "s": "x"}
    pika_channel.basic_ack(method.delivery_tag)


def test_a_pika_publisher_reaches_a_0_10_consumer_which_acks(
    peer: Peer, name: str, pika_channel: BlockingChannel
) -> None:
    _declare_bound_queue(peer, name)
    ok = peer.call(1, "basic.consume", queue=name, consumer_tag="c1")
    assert ok.consumer_tag == "c1"
    pika_channel.basic_publish(
        name, "k", b"from 0-9-1", pika.BasicProperties(headers={"a": "b"}, delivery_mode=2)
    )
    delivery = peer.expect(1, "basic.deliver")
    assert delivery.method.consumer_tag == "c1"
    assert delivery.body == b"from 0-9-1"
    assert delivery.properties.headers == {"a": "b"}
    assert delivery.properties.delivery_mode == 2
    peer.send(1, "basic.ack", delivery_tag=delivery.method.delivery_tag)
    peer.call(1, "basic.cancel", consumer_tag="c1")
    assert pika_channel.queue_declare(name, passive=True).method.message_count == 0


def test_basic_get_returns_the_message_then_get_empty(peer: Peer, name: str) -> None:
    _declare_bound_queue(peer, name)
    peer.send_content(1, "basic.publish", b"one", exchange=name, routing_key="k")
    peer.send(1, "basic.get", queue=name, no_ack=False)
    got = peer.expect(1, "basic.get-ok", "basic.get-empty")
    assert got.method.NAME == "basic.get-ok" and got.body == b"one"
    peer.send(1, "basic.ack", delivery_tag=got.method.delivery_tag)
    assert peer.call(1, "basic.get", queue=name).NAME == "basic.get-empty"


def test_unacked_delivery_is_requeued_by_basic_recover(peer: Peer, name: str) -> None:
    _declare_bound_queue(peer, name)
    peer.send_content(1, "basic.publish", b"again", exchange=name, routing_key="k")
    peer.send(1, "basic.get", queue=name)
    first = peer.expect(1, "basic.get-ok")
    peer.send(1, "basic.recover", requeue=True)
    peer.send(1, "basic.get", queue=name)
    second = peer.expect(1, "basic.get-ok")
    assert second.body == b"again" and second.method.redelivered
    assert first.method.delivery_tag != second.method.delivery_tag


def test_exchange_delete_and_queue_delete_remove_them(
    peer: Peer, name: str, pika_channel: BlockingChannel
) -> None:
    _declare_bound_queue(peer, name)
    assert peer.call(1, "queue.delete", queue=name).message_count == 0
    peer.send(1, "exchange.delete", exchange=name)
    peer.send(1, "exchange.declare", exchange=name, type="direct", passive=True)
    assert peer.channel_error(1) == 404


def test_rule_exchange_declare_alternate_exchange_receives_unroutable_messages(
    peer: Peer, name: str
) -> None:
    alternate = name + "-ae"
    peer.send(1, "exchange.declare", exchange=alternate, type="fanout")
    peer.call(1, "queue.declare", queue=alternate)
    peer.send(1, "queue.bind", queue=alternate, exchange=alternate, routing_key="")
    peer.send(1, "exchange.declare", exchange=name, type="direct", alternate_exchange=alternate)
    peer.send_content(1, "basic.publish", b"lost?", exchange=name, routing_key="nowhere")
    peer.send(1, "basic.get", queue=alternate, no_ack=True)
    assert peer.expect(1, "basic.get-ok").body == b"lost?"


def test_basic_qos_prefetch_count_holds_back_deliveries_until_an_ack(peer: Peer, name: str) -> None:
    _declare_bound_queue(peer, name)
    for body in (b"1", b"2"):
        peer.send_content(1, "basic.publish", body, exchange=name, routing_key="k")
    peer.send(1, "basic.qos", prefetch_count=1)
    peer.call(1, "basic.consume", queue=name)
    first = peer.expect(1, "basic.deliver")
    peer.nothing(1, "basic.deliver")
    peer.send(1, "basic.ack", delivery_tag=first.method.delivery_tag)
    assert peer.expect(1, "basic.deliver").body == b"2"


def test_unimplemented_method_is_540_naming_it(peer_factory: Callable[..., Peer]) -> None:
    peer = peer_factory()
    peer.open_channel(1)
    peer.send(1, "message.offset", value=0)
    close = peer.expect(0, "connection.close").method
    assert close.reply_code == 540
    assert "message.offset" in close.reply_text
