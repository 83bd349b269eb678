"""Rules basic.deliver:01 and file.deliver:01: the server counts the times a message came
back unacknowledged and, past the queue's ``x-delivery-limit`` (RabbitMQ's quorum-queue
argument), moves it to a dead letter queue: ``x-dead-letter-exchange`` /
``x-dead-letter-routing-key``, reason ``delivery_limit`` in ``x-death``; each redelivery
carries the count so far as ``x-delivery-count``."""

from __future__ import annotations

from typing import Any

import pytest

from .flows import declare_queue, publish_file
from .peer import Peer

LIMIT = 2


def _queue_with_a_dead_letter_queue(peer: Peer, name: str) -> str:
    """Declares ``name`` (delivery limit ``LIMIT``) dead-lettering to a new queue; its name."""
    dlq = declare_queue(peer, 1, f"{name}-dlq")
    arguments = {
        "x-delivery-limit": LIMIT,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": dlq,
    }
    declare_queue(peer, 1, name, arguments=arguments)
    return dlq


def _close_channel(peer: Peer, channel: int) -> None:
    """Closing the channel gives its unacknowledged delivery back to the queue."""
    peer.call(channel, "channel.close", reply_code=200, reply_text="", class_id=0, method_id=0)


def _get(peer: Peer, channel: int, queue: str) -> Any:
    peer.send(channel, "basic.get", queue=queue, no_ack=False)
    return peer.expect(channel, "basic.get-ok", "basic.get-empty")


def _receive_file(peer: Peer, channel: int) -> tuple[Any, Any]:
    """Answer the server's file.open; (the file.stage event, the file.deliver method)."""
    peer.expect(channel, "file.open")
    peer.send(channel, "file.open-ok", staged_size=0)
    return peer.expect(channel, "file.stage"), peer.expect(channel, "file.deliver").method


def _delivery_count(properties: Any) -> Any:
    return (properties.headers or {}).get("x-delivery-count")


@pytest.mark.spec_rule("basic.deliver:01")
def test_a_basic_message_returned_more_than_the_limit_goes_to_the_dead_letter_queue(
    peer: Peer, name: str
) -> None:
    dlq = _queue_with_a_dead_letter_queue(peer, name)
    peer.send_content(1, "basic.publish", b"poison", routing_key=name)
    counts = []
    for channel in range(2, 2 + LIMIT + 1):
        peer.open_channel(channel)
        got = _get(peer, channel, name)
        assert got.method.NAME == "basic.get-ok"
        counts.append((got.method.redelivered, _delivery_count(got.properties)))
        _close_channel(peer, channel)
    assert counts == [(False, 0), (True, 1), (True, 2)]
    assert _get(peer, 1, name).method.NAME == "basic.get-empty"
    dead = _get(peer, 1, dlq)
    assert dead.body == b"poison"
    (death,) = dead.properties.headers["x-death"]
    assert (death["reason"], death["queue"], death["count"]) == ("delivery_limit", name, 1)


@pytest.mark.spec_rule("basic.deliver:01")
def test_a_message_acked_within_the_limit_is_not_dead_lettered(peer: Peer, name: str) -> None:
    dlq = _queue_with_a_dead_letter_queue(peer, name)
    peer.send_content(1, "basic.publish", b"fine at last", routing_key=name)
    for channel in range(2, 2 + LIMIT):
        peer.open_channel(channel)
        _get(peer, channel, name)
        _close_channel(peer, channel)
    got = _get(peer, 1, name)
    assert _delivery_count(got.properties) == LIMIT
    peer.send(1, "basic.ack", delivery_tag=got.method.delivery_tag, multiple=False)
    assert peer.call(1, "queue.declare", queue=dlq, passive=True).message_count == 0
    assert peer.call(1, "queue.declare", queue=name, passive=True).message_count == 0


@pytest.mark.spec_rule("basic.deliver:01")
def test_rejects_handed_to_another_consumer_count_too(
    peer: Peer, peer_factory: Any, name: str
) -> None:
    """A 0-9 requeued reject goes straight to another channel's consumer: still counted."""
    dlq = _queue_with_a_dead_letter_queue(peer, name)
    peer.open_channel(2)
    for channel in (1, 2):
        peer.call(channel, "basic.consume", queue=name, consumer_tag=f"c{channel}")
    peer.send_content(1, "basic.publish", b"rejected", routing_key=name)
    for i in range(LIMIT + 1):
        channel = 1 + i % 2  # the first consumer first, then each reject goes to the other
        deliver = peer.expect(channel, "basic.deliver")
        assert _delivery_count(deliver.properties) == i
        peer.send(channel, "basic.reject", delivery_tag=deliver.method.delivery_tag, requeue=True)
    peer.call(1, "basic.cancel", consumer_tag="c1")
    peer.call(2, "basic.cancel", consumer_tag="c2")
    assert _get(peer, 1, dlq).body == b"rejected"


@pytest.mark.spec_rule("file.deliver:01")
def test_a_file_returned_more_than_the_limit_goes_to_the_dead_letter_queue(
    peer: Peer, name: str
) -> None:
    dlq = _queue_with_a_dead_letter_queue(peer, name)
    publish_file(peer, 1, name, b"poison file", f"poison-{name}")
    counts = []
    for channel in range(2, 2 + LIMIT + 1):
        peer.open_channel(channel)
        peer.call(channel, "file.consume", queue=name, consumer_tag="files")
        stage, deliver = _receive_file(peer, channel)
        counts.append((deliver.redelivered, _delivery_count(stage.properties)))
        _close_channel(peer, channel)
    assert counts == [(False, 0), (True, 1), (True, 2)]
    peer.call(1, "file.consume", queue=dlq, consumer_tag="dead", no_ack=True)
    stage, deliver = _receive_file(peer, 1)
    assert stage.body == b"poison file"
    (death,) = stage.properties.headers["x-death"]
    assert (death["reason"], death["queue"]) == ("delivery_limit", name)
    assert (deliver.exchange, deliver.routing_key) == ("", dlq)
