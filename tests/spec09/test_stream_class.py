"""The stream content class: publish, deliver without acks, consume rate, priorities."""

from __future__ import annotations

import time

from .dialects import in_both_dialects
from .flows import declare_internal_exchange, declare_queue
from .peer import Peer


def _publish(
    peer: Peer, routing_key: str, body: bytes, priority: int | None = None, **f: object
) -> None:
    props = {"priority": priority} if priority is not None else None
    peer.send_content(
        1,
        "stream.publish",
        body,
        props,
        exchange=f.pop("exchange", ""),
        routing_key=routing_key,
        **f,
    )


@in_both_dialects(
    "stream.publish.exchange:01",
    "stream:03",
    draft=("stream.publish.exchange:default", "stream:acknowledgement-support"),
)
def test_stream_messages_are_delivered_and_leave_the_queue_without_acks(
    peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, name, b"s1")
    peer.call(1, "stream.consume", queue=name, consumer_tag="s")
    delivered = peer.expect(1, "stream.deliver")
    assert (delivered.body, delivered.method.consumer_tag, delivered.method.queue) == (
        b"s1",
        "s",
        name,
    )
    peer.call(1, "stream.cancel", consumer_tag="s")
    peer.call(1, "channel.close", reply_code=200, reply_text="", class_id=0, method_id=0)
    peer.open_channel(2)
    peer.call(2, "stream.consume", queue=name)
    peer.nothing(2, "stream.deliver")


@in_both_dialects()
def test_the_consume_rate_paces_stream_deliveries(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    for _ in range(5):
        _publish(peer, name, b"x" * 1000)
    peer.call(1, "stream.qos", prefetch_size=0, prefetch_count=0, consume_rate=5000, global_=False)
    started = time.monotonic()
    peer.call(1, "stream.consume", queue=name)
    for _ in range(5):
        peer.expect(1, "stream.deliver")
    assert time.monotonic() - started >= 0.7  # 4 x 1000 octets at 5000 octets/s after the first


@in_both_dialects("stream:02", draft=("stream:priority-levels",))
def test_stream_messages_have_two_priority_levels(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, name, b"low", priority=2)
    _publish(peer, name, b"high", priority=8)
    peer.call(1, "queue.declare", queue=name, passive=True)  # the publishes were handled
    peer.call(1, "stream.consume", queue=name)
    assert [peer.expect(1, "stream.deliver").body for _ in range(2)] == [b"high", b"low"]


@in_both_dialects(
    "stream.consume.consumer-tag:01", draft=("stream.consume.consumer-tag:not-existing-consumer",)
)
def test_a_second_stream_consumer_with_the_same_tag_is_a_530(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "stream.consume", queue=name, consumer_tag="dup")
    peer.send(1, "stream.consume", queue=name, consumer_tag="dup")
    assert peer.error(1) == ("connection", 530)


@in_both_dialects("stream.consume.exclusive:01", draft=("stream.consume.exclusive:in-use",))
def test_exclusive_stream_consume_on_a_queue_with_consumers_is_405(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "stream.consume", queue=name, consumer_tag="a")
    peer.send(1, "stream.consume", queue=name, consumer_tag="b", exclusive=True)
    assert peer.channel_error(1) == 405


@in_both_dialects("stream.consume.queue:01", draft=("stream.consume.queue:queue-exists-if-empty",))
def test_stream_consume_of_an_empty_queue_name_without_a_declared_queue_is_530(peer: Peer) -> None:
    peer.send(1, "stream.consume", queue="")
    assert peer.error(1) == ("connection", 530)


@in_both_dialects("stream.publish.exchange:02", draft=("stream.publish.exchange:internal",))
def test_stream_publish_to_an_internal_exchange_is_403(
    bundled_broker_url: str, peer: Peer, name: str
) -> None:
    declare_internal_exchange(bundled_broker_url, name)
    _publish(peer, "k", b"x", exchange=name)
    assert peer.channel_error(1) == 403


@in_both_dialects("stream.publish.mandatory:01", draft=("stream.publish.mandatory:implementation",))
def test_an_unroutable_mandatory_stream_message_is_returned(peer: Peer, name: str) -> None:
    _publish(peer, "nowhere-" + name, b"back", exchange="amq.direct", mandatory=True)
    returned = peer.expect(1, "stream.return")
    assert (returned.method.reply_code, returned.body) == (312, b"back")
