"""The draft's MUST rules of the basic class in the forms the draft gives them (basic.qos
and basic.recover have no -ok; the draft's internal exchanges are declared over 0-9, its
exchange.declare having no internal field). The rules the draft keeps word for word from
0-9 run against both dialects in tests/spec09 (``dialects.in_both_dialects``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from amqp_protocol import SPEC_0_10
from broker import Broker
from tests.spec09.conftest import broker_with  # noqa: F401 (a fixture)
from tests.spec09.flows import declare_internal_exchange, declare_queue, get_body
from tests.spec09.peer import Peer

rule = pytest.mark.spec010_rule


def _publish(peer: Peer, queue: str, body: bytes, **properties: Any) -> None:
    peer.send_content(1, "basic.publish", body, properties, exchange="", routing_key=queue)


def _get(peer: Peer, queue: str) -> Any:
    """basic.get of a message that must be there (acknowledged later)."""
    peer.send(1, "basic.get", queue=queue)
    return peer.expect(1, "basic.get-ok")


@rule("basic:persistent-overflow")
def test_over_the_memory_watermark_no_persistent_message_is_discarded(
    broker_with: Callable[..., Broker],  # noqa: F811
    name: str,
) -> None:
    """Eight 16 kB persistent messages, twice the broker's memory watermark: the broker
    stops reading the publisher while it is over the mark, and every message arrives."""
    broker = broker_with(memory_high_watermark=64_000)
    publisher, consumer = Peer(broker.url, SPEC_0_10), Peer(broker.url, SPEC_0_10)
    try:
        for peer in (publisher, consumer):
            peer.open_channel(1)
        declare_queue(publisher, 1, name)
        bodies = [bytes([i]) * 16_000 for i in range(8)]
        for body in bodies:
            _publish(publisher, name, body, delivery_mode=2)
        consumer.call(1, "basic.consume", queue=name, no_ack=True)
        received = [consumer.expect(1, "basic.deliver").body for _ in bodies]
        assert received == bodies
    finally:
        publisher.close()
        consumer.close()


@rule("basic:min-priority-levels", "basic:priority")
def test_priorities_0_4_and_5_9_differ_and_one_priority_keeps_its_order(
    peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name, arguments={"x-max-priority": 9})
    _publish(peer, name, b"a", priority=4, delivery_mode=2)
    _publish(peer, name, b"b", priority=4, delivery_mode=1)
    _publish(peer, name, b"c", priority=4, delivery_mode=2)
    _publish(peer, name, b"top", priority=5)
    assert [get_body(peer, 1, name) for _ in range(4)] == [b"top", b"a", b"b", b"c"]


@rule("basic:automatic-acknowledgement")
def test_a_no_ack_consumer_takes_messages_off_the_queue_as_they_are_sent(
    peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, name, b"auto")
    peer.call(1, "basic.consume", queue=name, consumer_tag="auto", no_ack=True)
    assert peer.expect(1, "basic.deliver").body == b"auto"
    peer.call(1, "basic.cancel", consumer_tag="auto")
    peer.call(1, "channel.close", reply_code=200, reply_text="", class_id=0, method_id=0)
    peer.open_channel(2)
    assert peer.call(2, "queue.declare", queue=name, passive=True).message_count == 0


@rule("basic:explicit-acknowledgement")
def test_a_delivery_stays_the_queues_until_it_is_acknowledged(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, name, b"kept")
    _publish(peer, name, b"acked")
    kept = _get(peer, name)
    peer.call(1, "basic.recover", requeue=True)
    assert kept.body == b"kept" and _get(peer, name).body == b"kept"
    acked = _get(peer, name)
    assert acked.body == b"acked"
    peer.send(1, "basic.ack", delivery_tag=acked.method.delivery_tag)
    peer.call(1, "basic.recover", requeue=True)
    assert get_body(peer, 1, name) == b"kept"
    assert peer.message_count(name) == 0


@rule("basic.qos.prefetch-count:prefetch")
def test_no_more_deliveries_than_the_prefetch_count_are_unacknowledged(
    peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name)
    for body in (b"1", b"2", b"3"):
        _publish(peer, name, body)
    peer.call(1, "basic.qos", prefetch_count=2)
    peer.call(1, "basic.consume", queue=name)
    first, _ = peer.expect(1, "basic.deliver"), peer.expect(1, "basic.deliver")
    peer.nothing(1, "basic.deliver")
    peer.send(1, "basic.ack", delivery_tag=first.method.delivery_tag)
    assert peer.expect(1, "basic.deliver").body == b"3"


@rule("basic.consume.consumer-tag:not-existing-consumer")
def test_reusing_a_consumer_tag_is_refused(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "basic.consume", queue=name, consumer_tag="same")
    peer.send(1, "basic.consume", queue=name, consumer_tag="same")
    assert peer.error(1) == ("connection", 530)


@rule("basic.consume.exclusive:in-use")
def test_no_exclusive_consumer_on_a_queue_that_has_consumers(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "basic.consume", queue=name, consumer_tag="first")
    peer.open_channel(2)
    peer.send(2, "basic.consume", queue=name, consumer_tag="exclusive", exclusive=True)
    assert peer.error(2) == ("channel", 403)


@rule("basic.publish.exchange:default")
def test_a_blank_exchange_is_the_default_exchange(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, name, b"x")
    assert get_body(peer, 1, name) == b"x"


@rule("basic.publish.exchange:internal")
def test_publishing_to_an_internal_exchange_is_a_403_channel_exception(
    bundled_broker_url: str, peer: Peer, name: str
) -> None:
    declare_internal_exchange(bundled_broker_url, name)
    peer.send_content(1, "basic.publish", b"x", exchange=name, routing_key="")
    assert peer.error(1) == ("channel", 403)


@rule("basic.ack.multiple:validation")
@pytest.mark.parametrize("multiple", [False, True])
def test_acking_a_tag_never_delivered_is_a_channel_exception(
    peer: Peer, name: str, multiple: bool
) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, name, b"x")
    delivered = _get(peer, name).method.delivery_tag
    peer.send(1, "basic.ack", delivery_tag=delivered + 1, multiple=multiple)
    assert peer.error(1) == ("channel", 406)


@rule("basic.recover:redelivered-flag")
def test_recovered_messages_are_marked_redelivered(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, name, b"x")
    assert not _get(peer, name).method.redelivered
    peer.call(1, "basic.consume", queue=name, no_ack=True)
    peer.call(1, "basic.recover", requeue=True)
    again = peer.expect(1, "basic.deliver")
    assert (again.body, again.method.redelivered) == (b"x", True)


@rule("basic.recover:non-transacted-session")
def test_basic_recover_in_a_transaction_is_a_channel_exception(peer: Peer) -> None:
    peer.call(1, "tx.select")
    peer.send(1, "basic.recover", requeue=True)
    assert peer.error(1) == ("channel", 406)
