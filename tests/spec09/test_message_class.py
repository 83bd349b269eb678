"""The message class: transfer, consume, get, ok/empty/reject, recover, qos, references."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from amqp_protocol.values import Content
from broker import Broker

from .flows import (
    close_reference,
    declare_queue,
    peer_on,
    receive_transfer,
    transfer,
    transfer_by_reference,
)
from .peer import Peer

rule = pytest.mark.spec_rule


@rule("message.transfer:01", "message.transfer.destination:01", "message:10")
def test_a_transfer_to_the_default_exchange_reaches_a_consumer(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    assert transfer(peer, 1, name, b"m1", message_id="id1").NAME == "message.ok"
    peer.call(1, "message.consume", queue=name, destination="d1")
    m = receive_transfer(peer, 1)
    assert (m.destination, m.body, m.message_id, m.routing_key) == (
        "d1",
        Content(b"m1"),
        "id1",
        name,
    )


@rule("message:09", "message.get.queue:01")
def test_get_returns_a_transfer_then_ok_or_empty(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    transfer(peer, 1, name, b"g1")
    peer.send(1, "message.get", queue=name, destination="g", no_ack=True)
    got = receive_transfer(peer, 1)
    peer.expect(1, "message.ok")
    assert got.body == Content(b"g1")
    assert peer.call(1, "message.get", queue=name, destination="g", reply="message.empty")
    peer.send(1, "message.get", queue="", destination="g")  # "" is the declared queue
    peer.expect(1, "message.empty")


def test_get_with_an_empty_queue_name_and_no_declared_queue_is_530(peer: Peer) -> None:
    peer.send(1, "message.get", queue="", destination="g")
    assert peer.error(1) == ("connection", 530)


@rule("message:06", "message:08")
def test_messages_have_two_priority_levels_and_keep_order_within_one(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    transfer(peer, 1, name, b"a", priority=1, delivery_mode=2)
    transfer(peer, 1, name, b"b", priority=1, delivery_mode=1)
    transfer(peer, 1, name, b"top", priority=9)
    peer.call(1, "message.consume", queue=name, destination="d", no_ack=True)
    assert [receive_transfer(peer, 1).body.data for _ in range(3)] == [b"top", b"a", b"b"]


@rule("message.qos.prefetch-count:01", "message.qos.prefetch-size:01")
def test_message_deliveries_stay_within_the_prefetch_count(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    for body in (b"big" * 1000, b"2"):
        transfer(peer, 1, name, body)
    peer.call(1, "message.qos", prefetch_size=10, prefetch_count=1, global_=False)
    peer.call(1, "message.consume", queue=name, destination="d")
    peer.expect(1, "message.transfer")  # larger than prefetch-size, sent anyway
    peer.nothing(1, "message.transfer")
    peer.send(1, "message.ok")
    receive_transfer(peer, 1)


@rule("message.recover:01")
def test_recover_redelivers_unacknowledged_messages_marked_redelivered(
    peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name)
    transfer(peer, 1, name, b"r")
    peer.send(1, "message.get", queue=name, destination="g")
    first = peer.expect(1, "message.transfer").method
    peer.expect(1, "message.ok")
    assert not first.redelivered
    peer.call(1, "message.recover", requeue=True)
    peer.send(1, "message.get", queue=name, destination="g", no_ack=True)
    assert receive_transfer(peer, 1).redelivered


@rule("message.recover:02")
def test_recover_on_a_transacted_channel_is_a_channel_error(peer: Peer) -> None:
    peer.call(1, "tx.select")
    peer.send(1, "message.recover", requeue=True)
    assert peer.channel_error(1) == 406


@rule("message.consume.destination:01")
def test_consuming_with_a_destination_in_use_is_refused(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "message.consume", queue=name, destination="same")
    peer.send(1, "message.consume", queue=name, destination="same")
    assert peer.error(1) == ("connection", 530)


@rule("message.consume.destination:02")
def test_a_destination_is_valid_only_on_its_channel(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "message.consume", queue=name, destination="mine")
    peer.open_channel(2)
    peer.call(2, "message.cancel", destination="mine")  # unknown here: nothing to cancel
    transfer(peer, 1, name, b"still consumed on channel 1")
    assert receive_transfer(peer, 1).destination == "mine"


@rule("message.consume.queue:01")
def test_consume_with_an_empty_queue_name_uses_the_declared_queue(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "message.consume", queue="", destination="d", no_ack=True)
    transfer(peer, 1, name, b"x")
    assert receive_transfer(peer, 1).destination == "d"


@rule("message.cancel:01")
def test_cancel_after_the_queue_was_deleted_is_ignored(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "message.consume", queue=name, destination="d")
    peer.call(1, "queue.delete", queue=name)
    assert peer.call(1, "message.cancel", destination="d").NAME == "message.ok"


@rule("message.transfer.destination:02")
def test_a_transfer_to_an_internal_exchange_is_403(peer: Peer, name: str) -> None:
    peer.call(1, "exchange.declare", exchange=name, type="fanout", internal=True)
    peer.send(1, "message.transfer", destination=name, routing_key="", body=Content(b"x"))
    assert peer.channel_error(1) == 403


def test_a_rejected_transfer_is_not_redelivered(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    transfer(peer, 1, name, b"no")
    peer.call(1, "message.consume", queue=name, destination="d")
    receive_transfer(peer, 1, answer="message.reject")
    peer.nothing(1, "message.transfer")


def test_a_reference_transfer_is_routed_when_the_reference_closes(peer: Peer, name: str) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "message.open", reference=b"ref1")
    peer.call(1, "message.append", reference=b"ref1", bytes=b"part1-")
    transfer_by_reference(peer, 1, name, b"ref1")
    peer.call(1, "message.append", reference=b"ref1", bytes=b"part2")
    close_reference(peer, 1, b"ref1")
    peer.send(1, "message.get", queue=name, destination="g", no_ack=True)
    assert receive_transfer(peer, 1).body == Content(b"part1-part2")


@rule("message.open.reference:01")
def test_opening_an_open_reference_is_an_error(peer: Peer) -> None:
    peer.call(1, "message.open", reference=b"r")
    peer.send(1, "message.open", reference=b"r")
    assert peer.channel_error(1) == 406


@rule("message.append.reference:01")
def test_appending_to_an_unknown_reference_is_an_error(peer: Peer) -> None:
    peer.send(1, "message.append", reference=b"unknown", bytes=b"x")
    assert peer.channel_error(1) == 404


@rule("message.close.reference:01")
def test_closing_an_unknown_reference_is_an_error(peer: Peer) -> None:
    peer.send(1, "message.close", reference=b"unknown")
    assert peer.channel_error(1) == 404


@rule("message.checkpoint.reference:01")
def test_checkpointing_an_unknown_reference_is_an_error(peer: Peer) -> None:
    peer.send(1, "message.checkpoint", reference=b"unknown", identifier="c")
    assert peer.channel_error(1) == 404


def test_a_transfer_naming_an_unknown_reference_is_an_error(peer: Peer, name: str) -> None:
    peer.send(1, "message.transfer", destination="", routing_key=name, body=Content(b"nope", True))
    assert peer.channel_error(1) == 404


@rule("message.resume.reference:01")
def test_resuming_an_open_reference_is_an_error(peer: Peer) -> None:
    peer.call(1, "message.open", reference=b"r")
    peer.send(1, "message.resume", reference=b"r", identifier="c")
    assert peer.channel_error(1) == 406


def test_resume_after_a_broken_connection_answers_the_checkpointed_offset(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    first = peer_factory()
    first.open_channel(1)
    first.call(1, "message.open", reference=b"big")
    first.call(1, "message.append", reference=b"big", bytes=b"0123456789")
    first.call(1, "message.checkpoint", reference=b"big", identifier=f"cp-{name}")
    first.call(1, "message.append", reference=b"big", bytes=b"lost")
    first.sock.close()
    first.closed = True
    second = peer_factory()
    second.open_channel(1)
    declare_queue(second, 1, name)
    offset = second.call(1, "message.resume", reference=b"big", identifier=f"cp-{name}")
    assert offset.value == 10
    second.call(1, "message.append", reference=b"big", bytes=b"ABC")
    transfer_by_reference(second, 1, name, b"big")
    close_reference(second, 1, b"big")
    second.send(1, "message.get", queue=name, destination="g", no_ack=True)
    assert receive_transfer(second, 1).body == Content(b"0123456789ABC")


def test_resume_of_an_unknown_checkpoint_starts_at_zero(peer: Peer, name: str) -> None:
    """message.checkpoint: "It is at the discretion of the recipient how much data to save
    with the checkpoint, and the sender MUST honour the offset returned by the resume
    method": an unknown checkpoint saved nothing, so the resumed reference is open and
    empty, and the sender sends everything from offset 0."""
    assert peer.call(1, "message.resume", reference=b"new", identifier="none").value == 0
    peer.call(1, "message.append", reference=b"new", bytes=b"whole body")
    declare_queue(peer, 1, name)
    transfer_by_reference(peer, 1, name, b"new")
    close_reference(peer, 1, b"new")
    peer.send(1, "message.get", queue=name, destination="g", no_ack=True)
    assert receive_transfer(peer, 1).body == Content(b"whole body")


@rule("message:01")
def test_persistent_messages_of_a_durable_queue_survive_a_restart(
    restarted: Callable[[], Broker], name: str
) -> None:
    peer = peer_on(restarted().url)
    declare_queue(peer, 1, name, durable=True)
    transfer(peer, 1, name, b"persistent", delivery_mode=2, priority=4, message_id="m1")
    transfer(peer, 1, name, b"transient", delivery_mode=1)
    peer.close()
    peer = peer_on(restarted().url)
    assert peer.call(1, "queue.declare", queue=name, passive=True).message_count == 1
    peer.send(1, "message.get", queue=name, destination="g")
    kept = receive_transfer(peer, 1)
    assert (kept.body, kept.redelivered, kept.message_id, kept.priority) == (
        Content(b"persistent"),
        True,
        "m1",
        4,
    )
    peer.close()
    peer = peer_on(restarted().url)
    assert peer.call(1, "queue.declare", queue=name, passive=True).message_count == 0
    peer.close()


@rule("message.close:01")
def test_a_reference_transfer_is_not_acknowledged_before_its_reference_closes(
    peer: Peer, name: str
) -> None:
    declare_queue(peer, 1, name)
    peer.call(1, "message.open", reference=b"late")
    transfer_by_reference(peer, 1, name, b"late")
    transfer_by_reference(peer, 1, name, b"late")
    peer.nothing(1, "message.ok")
    close_reference(peer, 1, b"late", transfers=2)
    peer.nothing(1, "message.ok")
    assert peer.call(1, "queue.declare", queue=name, passive=True).message_count == 2
