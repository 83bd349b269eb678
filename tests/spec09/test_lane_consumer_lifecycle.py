"""Consumers of the file, stream and message classes and the life of their queue: they are
cancelled however the queue goes (queue.delete of a 0-9-1 client, auto-delete, x-expires,
its exclusive owner closing), and they count as the queue's consumers for auto-delete and
x-expires."""

from __future__ import annotations

import time
from collections.abc import Callable

import pika
import pytest

from broker import Broker
from broker.model.memory import MemoryGauge
from broker.model.vhost import VirtualHost
from broker.server.spec09.lanes import lane
from tests.model.fakes import FakeClock, RecordingSink, consume

from .flows import declare_queue, peer_on
from .peer import Peer

#: How long a test waits for an exclusive queue to go with its connection.
CLOSE_WAIT = 10.0


def queue_exists(peer: Peer, channel: int, name: str) -> bool:
    """passive queue.declare on a fresh ``channel`` (a 404 closes it)."""
    peer.open_channel(channel)
    peer.send(channel, "queue.declare", queue=name, passive=True)
    reply = peer.expect(channel, "queue.declare-ok", "channel.close").method
    if reply.NAME == "channel.close":
        assert reply.reply_code == 404
        peer.send(channel, "channel.close-ok")
        return False
    peer.call(channel, "channel.close", reply_code=200, reply_text="", class_id=0, method_id=0)
    return True


@pytest.mark.parametrize(
    ("content_class", "tag_field"),
    [("file", "consumer_tag"), ("stream", "consumer_tag"), ("message", "destination")],
)
def test_a_0_9_1_queue_delete_cancels_the_consumers_of_every_class(
    bundled_broker_url: str, name: str, content_class: str, tag_field: str
) -> None:
    peer = peer_on(bundled_broker_url)
    try:
        declare_queue(peer, 1, name)
        consume = {"queue": name, tag_field: f"{content_class}-consumer"}
        peer.call(1, f"{content_class}.consume", **consume)
        with pika.BlockingConnection(pika.URLParameters(bundled_broker_url)) as conn:
            conn.channel().queue_delete(name)
        declare_queue(peer, 1, name)
        # The cancelled consumer's tag is free again on its channel (else: 530, tag reused).
        peer.call(1, f"{content_class}.consume", **consume)
    finally:
        peer.close()


def test_an_auto_delete_queue_goes_with_the_last_consumer_of_any_class(
    bundled_broker_url: str, name: str
) -> None:
    peer = peer_on(bundled_broker_url)
    try:
        declare_queue(peer, 1, name, auto_delete=True)
        peer.call(1, "basic.consume", queue=name, consumer_tag="basic")
        peer.call(1, "file.consume", queue=name, consumer_tag="files")
        peer.call(1, "basic.cancel", consumer_tag="basic")
        assert queue_exists(peer, 2, name)  # its file consumer still uses it
        peer.call(1, "file.cancel", consumer_tag="files")
        assert not queue_exists(peer, 3, name)
    finally:
        peer.close()


def test_a_queue_with_only_a_file_consumer_does_not_expire_until_it_goes() -> None:
    """In process, on a fake clock: x-expires counts from the last consumer of any class."""
    clock = FakeClock()
    vhost = VirtualHost("/", clock, MemoryGauge(1 << 30))
    queue = vhost.declare_queue("q", owner=None, arguments={"x-expires": 100})
    files = lane(vhost, queue, "file")
    consumer = consume(files, RecordingSink(), "files")
    clock.advance(0.5)  # five times its x-expires
    assert "q" in vhost.queues
    files.remove_consumer(consumer)
    clock.advance(0.099)
    assert "q" in vhost.queues
    clock.advance(0.002)
    assert "q" not in vhost.queues and files.deleted


def test_an_exclusive_queue_takes_its_lanes_and_their_consumers_when_its_owner_closes(
    broker_with: Callable[..., Broker], name: str
) -> None:
    broker = broker_with()
    peer = peer_on(broker.url)
    declare_queue(peer, 1, name, exclusive=True)
    peer.call(1, "file.consume", queue=name, consumer_tag="files")
    peer.call(1, "stream.consume", queue=name, consumer_tag="streams")
    server = broker.server
    vhost = server.vhosts["/"]
    (queue,) = [q for q in vhost.queues.values() if q.name == name]
    lanes = vhost.lanes_of(queue)
    assert [len(lane.consumers) for lane in lanes] == [1, 1]
    peer.close()
    deadline = time.monotonic() + CLOSE_WAIT
    while name in vhost.queues:
        assert time.monotonic() < deadline, "the exclusive queue outlived its connection"
        time.sleep(0.05)
    assert vhost.lanes_of(queue) == []
    assert all(lane.deleted and not lane.consumers for lane in lanes)
