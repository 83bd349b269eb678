"""MUST rules of the draft's message class (120) and of the domains its deliveries carry
(delivery-tag, message-id), against the bundled broker. A channel exception on a plain
channel (channel.open) closes it with channel.close; 530 is a hard error in the draft."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from pika.adapters.blocking_connection import BlockingChannel

from amqp_protocol import SPEC_0_10
from amqp_protocol.values import Content
from broker import Broker
from tests.spec09.peer import Peer

rule = pytest.mark.spec010_rule


def _queue(peer: Peer, queue: str, *bodies: bytes, **fields: object) -> None:
    """Declare ``queue`` and transfer ``bodies`` to it through the default exchange."""
    peer.call(1, "queue.declare", queue=queue)
    for body in bodies:
        _transfer(peer, queue, body, **fields)


def _transfer(peer: Peer, queue: str, body: bytes, **fields: object) -> None:
    peer.send(1, "message.transfer", destination="", routing_key=queue, body=Content(body),
              **fields)  # fmt: skip


def _received(peer: Peer, count: int) -> list[bytes]:
    return [bytes(peer.expect(1, "message.transfer").method.body.data) for _ in range(count)]


@rule("message.transfer.destination:blank-destination")
def test_a_transfer_with_a_blank_destination_goes_to_the_default_exchange(
    peer: Peer, name: str
) -> None:
    _queue(peer, name, b"via default")
    peer.send(1, "message.get", queue=name, destination="g", no_ack=True)
    got = peer.expect(1, "message.transfer").method
    assert (got.body.data, got.exchange, got.routing_key) == (b"via default", "", name)


@rule("message.transfer.destination:internal-exchange")
def test_a_transfer_to_an_internal_exchange_is_403(
    peer: Peer, name: str, pika_channel: BlockingChannel
) -> None:
    pika_channel.exchange_declare(name, "fanout", internal=True, auto_delete=True)
    peer.send(1, "message.transfer", destination=name, routing_key="", body=Content(b"x"))
    assert peer.error(1) == ("channel", 403)


@rule("message:min-priority-levels", "message:priority-delivery")
def test_two_priority_levels_and_order_within_one_whatever_the_persistence(
    peer: Peer, name: str
) -> None:
    peer.call(1, "queue.declare", queue=name, arguments={"x-max-priority": 9})
    _transfer(peer, name, b"low persistent", priority=4, delivery_mode=2)
    _transfer(peer, name, b"low transient", priority=4, delivery_mode=1)
    _transfer(peer, name, b"high persistent", priority=5, delivery_mode=2)
    _transfer(peer, name, b"high transient", priority=5, delivery_mode=1)
    peer.send(1, "message.consume", queue=name, destination="d", no_ack=True)
    assert _received(peer, 4) == [
        b"high persistent",
        b"high transient",
        b"low persistent",
        b"low transient",
    ]


@rule("message:max-priority-levels")
def test_ten_priority_levels(peer: Peer, name: str) -> None:
    peer.call(1, "queue.declare", queue=name, arguments={"x-max-priority": 9})
    for priority in range(10):
        _transfer(peer, name, str(priority).encode(), priority=priority)
    peer.send(1, "message.consume", queue=name, destination="d", no_ack=True)
    assert _received(peer, 10) == [str(p).encode() for p in range(9, -1, -1)]


@rule("message.consume:simultaneous-consumers")
def test_sixteen_consumers_on_one_queue_each_get_a_transfer(peer: Peer, name: str) -> None:
    _queue(peer, name)
    destinations = [f"d{n}" for n in range(16)]
    for destination in destinations:
        peer.send(1, "message.consume", queue=name, destination=destination, no_ack=True)
    for n in range(16):
        _transfer(peer, name, str(n).encode())
    got = [peer.expect(1, "message.transfer").method.destination for _ in range(16)]
    assert sorted(got) == sorted(destinations)


@rule("message.consume.queue:empty-queue-name")
def test_consuming_with_an_empty_queue_name_uses_the_queue_declared_last(
    peer: Peer, name: str
) -> None:
    _queue(peer, name, b"declared")
    peer.send(1, "message.consume", queue="", destination="d", no_ack=True)
    assert _received(peer, 1) == [b"declared"]


@rule("message.consume.destination:destination-non-existing-consumer")
def test_consuming_with_the_destination_of_an_existing_consumer_is_530(
    peer: Peer, name: str
) -> None:
    _queue(peer, name)
    peer.send(1, "message.consume", queue=name, destination="d")
    peer.send(1, "message.consume", queue=name, destination="d")
    assert peer.error(1) == ("connection", 530)


@rule("message.consume.destination:destination-session-bound")
def test_a_destination_is_known_only_in_its_own_session(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = peer_factory()
    for channel in (1, 2):
        peer.call(channel, "session.open", detached_lifetime=0)
    peer.call(1, "queue.declare", queue=name)
    peer.send(1, "message.consume", queue=name, destination="d", no_ack=True)
    peer.send(2, "message.cancel", destination="d")  # not this session's: ignored
    peer.send(2, "session.ping")
    peer.expect(2, "session.pong")
    _transfer(peer, name, b"still consumed")
    assert _received(peer, 1) == [b"still consumed"]


@rule("message.consume.exclusive:in-use")
def test_no_exclusive_consumer_on_a_queue_that_has_consumers(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    first, second = peer_factory(), peer_factory()
    for p in (first, second):
        p.open_channel(1)
    _queue(first, name)
    first.send(1, "message.consume", queue=name, destination="d")
    first.send(1, "session.ping")  # an answer: the consume was handled
    second.send(1, "message.consume", queue=name, destination="x", exclusive=True)
    assert second.error(1) == ("channel", 403)


@rule("message.cancel:ignore")
def test_cancelling_a_consumer_whose_queue_was_deleted_is_no_error(peer: Peer, name: str) -> None:
    _queue(peer, name)
    peer.send(1, "message.consume", queue=name, destination="d")
    peer.call(1, "queue.delete", queue=name)
    peer.send(1, "message.cancel", destination="d")
    # the channel is still open: a refused cancel would have closed it
    assert peer.call(1, "queue.declare", queue=name).NAME == "queue.declare-ok"


@rule("message.get.queue:empty-name")
def test_get_with_an_empty_queue_name_and_no_declared_queue_is_530(peer: Peer) -> None:
    peer.send(1, "message.get", queue="", destination="g")
    assert peer.error(1) == ("connection", 530)


@rule("message.recover:redelivered-flag", "domain.redelivered:implementation")
def test_recover_resends_unacknowledged_transfers_marked_redelivered(peer: Peer, name: str) -> None:
    _queue(peer, name, b"once")
    peer.send(1, "message.consume", queue=name, destination="d")
    first = peer.expect(1, "message.transfer").method
    assert not first.redelivered
    peer.send(1, "message.recover", requeue=True)
    again = peer.expect(1, "message.transfer").method
    assert (again.body.data, again.redelivered) == (b"once", True)


@rule("message.recover:transacted-session")
def test_recover_on_a_transacted_channel_is_a_channel_exception(peer: Peer) -> None:
    peer.send(1, "tx.select")
    peer.send(1, "message.recover", requeue=True)
    assert peer.error(1) == ("channel", 406)


@pytest.mark.parametrize(
    "method",
    [
        pytest.param("message.close", marks=rule("message.close.reference:non-existent-reference")),
        pytest.param(
            "message.checkpoint",
            marks=rule("message.checkpoint.reference:non-existent-reference"),
        ),
    ],
)
def test_naming_a_reference_that_is_not_open_is_404(peer: Peer, method: str) -> None:
    fields = {"identifier": "c"} if method == "message.checkpoint" else {}
    peer.send(1, method, reference=b"never-opened", **fields)
    assert peer.error(1) == ("channel", 404)


@rule("message.resume.reference:non-existent-reference")
def test_resuming_into_a_reference_that_is_open_is_406(peer: Peer, name: str) -> None:
    peer.send(1, "message.open", reference=b"r")
    peer.send(1, "message.resume", reference=b"r", identifier=name)
    assert peer.error(1) == ("channel", 406)


@rule("message.qos.prefetch-count:prefetch-maximum")
def test_no_more_transfers_in_flight_than_the_prefetch_count(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = peer_factory()
    peer.call(1, "session.open", detached_lifetime=0)
    _queue(peer, name, b"1", b"2", b"3", b"4")
    peer.send(1, "message.qos", prefetch_count=2)
    peer.send(1, "message.consume", queue=name, destination="d")
    assert _received(peer, 2) == [b"1", b"2"]
    peer.nothing(1, "message.transfer")
    peer.send(1, "session.ack", cumulative_seen_mark=1, seen_frame_set=[])
    assert _received(peer, 1) == [b"3"]
    peer.nothing(1, "message.transfer")


@rule("message.qos.prefetch-size:non-responsive-client")
def test_a_transfer_larger_than_the_prefetch_size_goes_when_nothing_is_unacknowledged(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = peer_factory()
    peer.call(1, "session.open", detached_lifetime=0)
    _queue(peer, name, b"big" * 1000, b"small")
    peer.send(1, "message.qos", prefetch_size=10)
    peer.send(1, "message.consume", queue=name, destination="d")
    assert _received(peer, 1) == [b"big" * 1000]  # over the size, sent all the same
    peer.nothing(1, "message.transfer")  # the window is full until it is acknowledged
    peer.send(1, "session.ack", cumulative_seen_mark=1, seen_frame_set=[])
    assert _received(peer, 1) == [b"small"]


@rule("domain.message-id:immutable")
def test_every_copy_of_a_message_keeps_its_message_id(
    peer: Peer, name: str, pika_channel: BlockingChannel
) -> None:
    peer.send(1, "exchange.declare", exchange=name, type="fanout", auto_delete=True)
    queues = [f"{name}-{n}" for n in range(2)]
    for queue in queues:
        peer.call(1, "queue.declare", queue=queue)
        peer.send(1, "queue.bind", queue=queue, exchange=name, routing_key="")
    peer.send(1, "message.transfer", destination=name, routing_key="", message_id="id-1",
              body=Content(b"copied"))  # fmt: skip
    peer.send(1, "message.get", queue=queues[0], destination="g", no_ack=True)
    assert peer.expect(1, "message.transfer").method.message_id == "id-1"
    _, properties, _ = pika_channel.basic_get(queues[1], auto_ack=True)
    assert properties.message_id == "id-1"


@rule("domain.delivery-tag:non-zero")
def test_delivery_tags_start_at_1(peer: Peer, name: str) -> None:
    _queue(peer, name, b"a", b"b")
    peer.send(1, "basic.get", queue=name)
    peer.call(1, "basic.consume", queue=name)
    tags = [peer.expect(1, "basic.get-ok").method.delivery_tag]
    tags.append(peer.expect(1, "basic.deliver").method.delivery_tag)
    assert tags == [1, 2]


@rule("domain.delivery-tag:session-local")
def test_an_ack_in_another_session_does_not_settle_a_delivery(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = peer_factory()
    for channel in (1, 2):
        peer.call(channel, "session.open", detached_lifetime=0)
    _queue(peer, name, b"unacked")
    peer.send(1, "message.consume", queue=name, destination="d")
    assert _received(peer, 1) == [b"unacked"]
    peer.send(2, "session.ack", cumulative_seen_mark=1, seen_frame_set=[])
    peer.call(1, "session.close")  # its unacknowledged delivery goes back
    assert peer.call(2, "queue.declare", queue=name, passive=True).message_count == 1


@pytest.fixture
def low_watermark_broker() -> Iterator[Broker]:
    broker = Broker(config={"memory_high_watermark": 64_000}).start()
    yield broker
    broker.stop()


@rule("message:no-persistent-message-discard")
def test_over_the_memory_watermark_no_persistent_transfer_is_discarded(
    low_watermark_broker: Broker, name: str
) -> None:
    """Twice the watermark in persistent transfers: the broker stops reading the publisher
    while it is over the mark and keeps every message for the consumer."""
    url = low_watermark_broker.url
    publisher, consumer = Peer(url, SPEC_0_10), Peer(url, SPEC_0_10)
    try:
        for p in (publisher, consumer):
            p.open_channel(1)
        _queue(publisher, name)
        bodies = [bytes([n]) * 16_000 for n in range(8)]
        for body in bodies:
            _transfer(publisher, name, body, delivery_mode=2)
        consumer.send(1, "message.consume", queue=name, destination="d", no_ack=True)
        assert sorted(_received(consumer, 8)) == bodies
    finally:
        publisher.close()
        consumer.close()
