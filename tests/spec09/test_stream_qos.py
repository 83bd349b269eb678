"""stream.qos prefetch-size and prefetch-count: accepted and ignored, as rule
stream.qos.consume-rate:01 allows ("The server MAY ignore the prefetch values"). Stream content
is never acknowledged, so no prefetch window could reopen: what bounds the stream content sent
ahead of a consumer is its connection's socket (broker/server/spec09/stream_class.py)."""

from __future__ import annotations

from collections.abc import Callable

from broker import Broker

from .dialects import in_both_dialects
from .flows import declare_queue, peer_on
from .peer import Peer

MESSAGES = 3
#: Far more than the socket buffers hold while a consumer does not read (as in
#: test_reject_while_sending): 96 packets of 256 KiB.
PACKET = 256 << 10
PACKETS = 96


@in_both_dialects("stream.qos.consume-rate:01", draft=("stream.qos.consume-rate:ignore-prefetch",))
def test_prefetch_windows_do_not_hold_back_unacknowledged_stream_deliveries(
    peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "stream.qos", prefetch_size=1, prefetch_count=1, consume_rate=0, global_=False)
    peer.call(1, "stream.consume", queue=name, consumer_tag="s")
    for i in range(MESSAGES):
        peer.send_content(1, "stream.publish", b"packet %d" % i, exchange="", routing_key=name)
    bodies = [peer.expect(1, "stream.deliver").body for _ in range(MESSAGES)]
    assert bodies == [b"packet %d" % i for i in range(MESSAGES)]


def test_a_consumer_that_does_not_read_leaves_the_rest_of_the_stream_to_others(
    broker_with: Callable[..., Broker], name: str
) -> None:
    broker = broker_with(write_buffer_high=64 * 1024)
    publisher, stalled, other = (peer_on(broker.url) for _ in range(3))
    try:
        declare_queue(publisher, 1, name)
        for _ in range(PACKETS):
            publisher.send_content(1, "stream.publish", b"\x01" * PACKET, routing_key=name)
        declare_queue(publisher, 1, name)  # answered once every packet is queued
        stalled.call(1, "stream.consume", queue=name, consumer_tag="stalled")
        # ``stalled`` never reads its socket again: once it is backed up, it gets nothing
        # more and the queue keeps the rest for ``other``.
        other.call(1, "stream.consume", queue=name, consumer_tag="other")
        assert other.expect(1, "stream.deliver").body == b"\x01" * PACKET
    finally:
        for peer in (publisher, stalled, other):
            peer.close()
