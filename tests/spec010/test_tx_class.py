"""The draft's tx class (no -ok replies): publishes and acknowledgements held until commit,
undone by rollback, for every content class (basic, message, file, stream)."""

from __future__ import annotations

from collections.abc import Callable

from tests.spec09.flows import publish_file, receive_file
from tests.spec09.peer import Peer


def test_publishes_in_a_transaction_are_routed_at_commit_and_dropped_at_rollback(
    peer: Peer, name: str
) -> None:
    peer.call(1, "queue.declare", queue=name)
    peer.send(1, "tx.select")
    peer.send_content(1, "basic.publish", b"kept", exchange="", routing_key=name)
    assert peer.message_count(name) == 0
    peer.send(1, "tx.commit")
    assert peer.message_count(name) == 1
    peer.send_content(1, "basic.publish", b"dropped", exchange="", routing_key=name)
    peer.send(1, "tx.rollback")
    assert peer.message_count(name) == 1


def test_acks_in_a_transaction_settle_at_commit_and_rollback_makes_them_unacked(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = peer_factory()
    peer.open_channel(1)
    peer.call(1, "queue.declare", queue=name)
    for body in (b"a", b"b"):
        peer.send_content(1, "basic.publish", body, exchange="", routing_key=name)
    peer.send(1, "tx.select")
    peer.call(1, "basic.consume", queue=name)
    first, second = (peer.expect(1, "basic.deliver") for _ in range(2))
    peer.send(1, "basic.ack", delivery_tag=first.method.delivery_tag)
    peer.send(1, "tx.commit")
    peer.send(1, "basic.ack", delivery_tag=second.method.delivery_tag)
    peer.send(1, "tx.rollback")
    peer.open_channel(2)
    assert int(peer.call(2, "queue.declare", queue=name, passive=True).message_count) == 0
    # The rolled-back ack left "b" unacknowledged (an unknown tag would be a 406): ack it
    # again and commit; closing the channel then requeues nothing.
    peer.send(1, "basic.ack", delivery_tag=second.method.delivery_tag)
    peer.send(1, "tx.commit")
    peer.call(1, "channel.close", reply_code=200, reply_text="ok")
    assert int(peer.call(2, "queue.declare", queue=name, passive=True).message_count) == 0


def test_commit_without_select_is_406(peer: Peer) -> None:
    peer.send(1, "tx.commit")
    assert peer.error(1) == ("channel", 406)


def test_a_publish_to_a_missing_exchange_in_a_transaction_is_404_at_once(
    peer: Peer, name: str
) -> None:
    peer.send(1, "tx.select")
    peer.send_content(1, "basic.publish", b"x", exchange=name + "-none", routing_key="k")
    assert peer.error(1) == ("channel", 404)


def test_a_channel_closed_in_a_transaction_requeues_what_it_acknowledged(
    peer: Peer, name: str
) -> None:
    peer.call(1, "queue.declare", queue=name)
    peer.send_content(1, "basic.publish", b"a", exchange="", routing_key=name)
    peer.send(1, "tx.select")
    peer.send(1, "basic.get", queue=name)
    got = peer.expect(1, "basic.get-ok")
    peer.send(1, "basic.ack", delivery_tag=got.method.delivery_tag)
    peer.call(1, "channel.close", reply_code=200, reply_text="ok")
    peer.open_channel(2)
    assert int(peer.call(2, "queue.declare", queue=name, passive=True).message_count) == 1


def test_file_publishes_in_a_transaction_are_routed_at_commit_and_dropped_at_rollback(
    peer: Peer, name: str
) -> None:
    peer.call(1, "queue.declare", queue=name)
    peer.open_channel(2)
    peer.call(2, "file.consume", queue=name, no_ack=True)
    peer.send(1, "tx.select")
    publish_file(peer, 1, name, b"kept", f"tx-kept-{name}")
    peer.nothing(2, "file.open")
    peer.send(1, "tx.commit")
    assert receive_file(peer, 2)[1] == b"kept"
    publish_file(peer, 1, name, b"dropped", f"tx-dropped-{name}")
    peer.send(1, "tx.rollback")
    peer.send(1, "tx.commit")
    peer.nothing(2, "file.open")


def test_stream_publishes_in_a_transaction_are_routed_at_commit_and_dropped_at_rollback(
    peer: Peer, name: str
) -> None:
    peer.call(1, "queue.declare", queue=name)
    peer.open_channel(2)
    peer.call(2, "stream.consume", queue=name)
    peer.send(1, "tx.select")
    peer.send_content(1, "stream.publish", b"kept", exchange="", routing_key=name)
    peer.nothing(2, "stream.deliver")
    peer.send(1, "tx.commit")
    assert peer.expect(2, "stream.deliver").body == b"kept"
    peer.send_content(1, "stream.publish", b"dropped", exchange="", routing_key=name)
    peer.send(1, "tx.rollback")
    peer.send(1, "tx.commit")
    peer.nothing(2, "stream.deliver")


def _file_acked_in_a_transaction(peer: Peer, name: str, end: str) -> None:
    """A file delivered on channel 1, acknowledged in a transaction that ``end`` ends; then
    channel 1 closes (requeueing what is still unacknowledged) and channel 2 consumes."""
    peer.call(1, "queue.declare", queue=name)
    publish_file(peer, 1, name, b"file", f"tx-ack-{name}")
    peer.send(1, "tx.select")
    peer.call(1, "file.consume", queue=name)
    deliver, _ = receive_file(peer, 1)
    peer.send(1, "file.ack", delivery_tag=deliver.delivery_tag)
    peer.send(1, end)
    peer.call(1, "channel.close", reply_code=200, reply_text="ok")
    peer.open_channel(2)
    peer.call(2, "file.consume", queue=name, no_ack=True)


def test_a_file_ack_in_a_transaction_settles_at_commit(peer: Peer, name: str) -> None:
    _file_acked_in_a_transaction(peer, name, "tx.commit")
    peer.nothing(2, "file.open")


def test_a_file_ack_rolled_back_leaves_the_file_unacknowledged(peer: Peer, name: str) -> None:
    _file_acked_in_a_transaction(peer, name, "tx.rollback")
    deliver, body = receive_file(peer, 2)  # requeued when channel 1 closed
    assert (body, deliver.redelivered) == (b"file", True)
