"""0-9 rules of consuming, acknowledging and rejecting: channel-local tags, consumers of
deleted queues, prefetch-size, purge in a transaction, and rejected messages that must not
come back to the rejecting channel."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .dialects import in_both_dialects
from .flows import declare_queue, get_body, receive_file, reject_a_file
from .peer import Peer

rule = pytest.mark.spec_rule


def _publish(peer: Peer, queue: str, body: bytes, channel: int = 1) -> None:
    peer.send_content(channel, "basic.publish", body, exchange="", routing_key=queue)


@rule("domain.delivery-tag:channel-local")
def test_a_delivery_tag_cannot_be_acked_on_another_channel(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, name, b"x")
    peer.send(1, "basic.get", queue=name)
    tag = peer.expect(1, "basic.get-ok").method.delivery_tag
    peer.open_channel(2)
    peer.send(2, "basic.ack", delivery_tag=tag)
    assert peer.channel_error(2) == 406
    peer.send(1, "basic.ack", delivery_tag=tag)
    assert peer.message_count(name, 1) == 0


@in_both_dialects("basic.consume.queue:01", draft=("basic.consume.queue:queue-exists-if-empty",))
def test_consuming_the_unnamed_queue_needs_one_declared_on_the_channel(
    peer: Peer, name: str
) -> None:
    peer.open_channel(2)
    declare_queue(peer, 2, name)
    assert peer.call(2, "basic.consume", queue="").consumer_tag
    peer.send(1, "basic.consume", queue="")
    assert peer.error(1) == ("connection", 530)


@in_both_dialects(
    "basic.consume.consumer-tag:02", draft=("basic.consume.consumer-tag:session-bound",)
)
def test_a_consumer_tag_means_nothing_on_another_channel(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "basic.consume", queue=name, consumer_tag="mine", no_ack=True)
    peer.open_channel(2)
    peer.call(2, "basic.cancel", consumer_tag="mine")
    _publish(peer, name, b"still consumed on channel 1")
    assert peer.expect(1, "basic.deliver").body == b"still consumed on channel 1"


@in_both_dialects("basic.cancel:01", draft=("basic.cancel:non-existent",))
def test_cancelling_a_consumer_of_a_deleted_queue_is_not_an_error(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "basic.consume", queue=name, consumer_tag="gone")
    peer.open_channel(2)
    peer.call(2, "queue.delete", queue=name)
    assert peer.call(1, "basic.cancel", consumer_tag="gone").consumer_tag == "gone"
    assert peer.call(1, "queue.declare", queue="").queue


@rule("basic.consume:01", "file.consume:01", "stream.consume:01", "message.consume:01")
@pytest.mark.parametrize("content_class", ["basic", "file", "stream", "message"])
def test_sixteen_consumers_on_one_queue(peer: Peer, name: str, content_class: str) -> None:
    declare_queue(peer, 1, name)
    tag_field = "destination" if content_class == "message" else "consumer_tag"
    for i in range(16):
        peer.call(1, f"{content_class}.consume", queue=name, **{tag_field: f"c{i}"})
    assert peer.call(1, "queue.declare", queue=name, passive=True).consumer_count == 16


@in_both_dialects("basic.qos.prefetch-size:01", draft=("basic.qos.prefetch-size:ignore",))
def test_prefetch_size_never_holds_back_a_message_when_none_is_unacknowledged(
    peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name)
    for body in (b"a" * 100, b"b" * 100):
        _publish(peer, name, body)
    peer.call(1, "basic.qos", prefetch_size=10)
    peer.call(1, "basic.consume", queue=name)
    first = peer.expect(1, "basic.deliver")
    assert first.body == b"a" * 100
    peer.nothing(1, "basic.deliver")
    peer.send(1, "basic.ack", delivery_tag=first.method.delivery_tag)
    assert peer.expect(1, "basic.deliver").body == b"b" * 100


@in_both_dialects("queue.purge:02", draft=("queue.purge:tx-exception",))
def test_purge_on_a_transacted_channel_keeps_unacknowledged_messages(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, name, b"delivered")
    _publish(peer, name, b"ready")
    peer.call(1, "tx.select")
    peer.send(1, "basic.get", queue=name)
    peer.expect(1, "basic.get-ok")
    assert peer.call(1, "queue.purge", queue=name).message_count == 1
    peer.call(1, "channel.close", reply_code=200, reply_text="", class_id=0, method_id=0)
    peer.open_channel(2)
    assert get_body(peer, 2, name) == b"delivered"


@in_both_dialects(
    "basic.reject.requeue:01", "basic.reject:02", draft=("basic.reject.requeue:requeue-strategy",)
)
def test_a_requeued_reject_goes_to_a_consumer_on_another_channel(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.open_channel(2)
    for channel in (1, 2):
        peer.call(channel, "basic.qos", prefetch_count=1)
        peer.call(channel, "basic.consume", queue=name, consumer_tag=f"c{channel}")
    for body in (b"one", b"two"):
        _publish(peer, name, body)
    first = peer.expect(1, "basic.deliver")
    second = peer.expect(2, "basic.deliver")
    peer.send(2, "basic.ack", delivery_tag=second.method.delivery_tag)
    peer.send(1, "basic.reject", delivery_tag=first.method.delivery_tag, requeue=True)
    again = peer.expect(2, "basic.deliver")
    assert (again.body, again.method.redelivered) == (first.body, True)
    peer.nothing(1, "basic.deliver")


@in_both_dialects("basic.reject.requeue:01", draft=("basic.reject.requeue:requeue-strategy",))
def test_a_requeued_reject_is_not_given_back_to_its_channel_until_it_closes(
    peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, name, b"rejected")
    peer.send(1, "basic.get", queue=name)
    tag = peer.expect(1, "basic.get-ok").method.delivery_tag
    peer.send(1, "basic.reject", delivery_tag=tag, requeue=True)
    peer.call(1, "basic.get", queue=name, reply="basic.get-empty")
    peer.call(1, "basic.consume", queue=name)
    peer.nothing(1, "basic.deliver")
    peer.call(1, "channel.close", reply_code=200, reply_text="", class_id=0, method_id=0)
    peer.open_channel(2)
    peer.send(2, "basic.get", queue=name)
    got = peer.expect(2, "basic.get-ok")
    assert (got.body, got.method.redelivered) == (b"rejected", True)


@in_both_dialects("basic.reject.requeue:01", draft=("basic.reject.requeue:requeue-strategy",))
def test_a_requeued_reject_in_a_transaction_follows_the_same_rule(
    peer_factory: Callable[..., Peer], peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, name, b"rejected")
    peer.call(1, "tx.select")
    peer.send(1, "basic.get", queue=name)
    tag = peer.expect(1, "basic.get-ok").method.delivery_tag
    peer.send(1, "basic.reject", delivery_tag=tag, requeue=True)
    peer.call(1, "tx.commit")
    peer.call(1, "basic.get", queue=name, reply="basic.get-empty")
    other = peer_factory()
    other.open_channel(1)
    other.call(1, "basic.consume", queue=name, no_ack=True)
    peer.call(1, "channel.close", reply_code=200, reply_text="", class_id=0, method_id=0)
    assert other.expect(1, "basic.deliver").body == b"rejected"


@in_both_dialects(
    "file.reject.requeue:01",
    "file.reject:01",
    draft=("file.reject.requeue:requeue-strategy", "file.reject:server-interpretation"),
)
def test_a_requeued_file_reject_is_not_given_back_to_its_channel(peer: Peer, name: str) -> None:
    reject_a_file(peer, name, requeue=True)
    peer.nothing(1, "file.open")
    peer.call(1, "channel.close", reply_code=200, reply_text="", class_id=0, method_id=0)
    peer.open_channel(2)
    peer.call(2, "file.consume", queue=name, no_ack=True)
    again, body = receive_file(peer, 2)
    assert (body, again.redelivered) == (b"file body", True)


def test_deleting_a_queue_drops_the_consumers_of_its_other_content_classes(
    peer: Peer, name: str
) -> None:
    """Its file, stream and message consumers go with it (0-9 has no server-sent cancel):
    their tags are free again and a new queue of the same name is not consumed by them."""
    declare_queue(peer, 1, name)
    peer.call(1, "stream.consume", queue=name, consumer_tag="s")
    peer.call(1, "queue.delete", queue=name)
    declare_queue(peer, 1, name)
    peer.send_content(1, "stream.publish", b"for nobody", exchange="", routing_key=name)
    peer.nothing(1, "stream.deliver")
    assert peer.call(1, "stream.consume", queue=name, consumer_tag="s").consumer_tag == "s"
    assert peer.expect(1, "stream.deliver").body == b"for nobody"


def test_queue_delete_and_purge_count_every_content_class(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    _publish(peer, name, b"basic")
    peer.send_content(1, "stream.publish", b"stream", exchange="", routing_key=name)
    assert peer.call(1, "queue.purge", queue=name).message_count == 2
    peer.send_content(1, "stream.publish", b"stream", exchange="", routing_key=name)
    assert peer.call(1, "queue.delete", queue=name).message_count == 1
