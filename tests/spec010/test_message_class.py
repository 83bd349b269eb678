"""The draft's message class (120): transfer, consume, cancel, get/empty, recover, and acks
by session.ack, over the same queues as basic content of any version."""

from __future__ import annotations

from collections.abc import Callable

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from amqp_protocol.values import Content
from tests.spec09.peer import Peer

rule = pytest.mark.spec010_rule


def _session(peer_factory: Callable[..., Peer], queue: str) -> Peer:
    peer = peer_factory()
    peer.call(1, "session.open", detached_lifetime=0)
    peer.call(1, "queue.declare", queue=queue)
    return peer


def _transfer(peer: Peer, queue: str, body: bytes, **fields: object) -> None:
    peer.send(1, "message.transfer", destination="", routing_key=queue, body=Content(body),
              **fields)  # fmt: skip


def test_a_0_10_message_transfer_reaches_a_pika_consumer(
    peer_factory: Callable[..., Peer], name: str, pika_channel: BlockingChannel
) -> None:
    peer = _session(peer_factory, name)
    _transfer(peer, name, b"hello", content_type="text/plain", application_headers={"k": 1})
    method, properties, body = pika_channel.basic_get(name, auto_ack=True)
    assert method is not None and body == b"hello"
    assert (properties.content_type, properties.headers) == ("text/plain", {"k": 1})


def test_a_pika_message_is_consumed_as_message_transfer(
    peer_factory: Callable[..., Peer], name: str, pika_channel: BlockingChannel
) -> None:
    peer = _session(peer_factory, name)
    peer.send(1, "message.consume", queue=name, destination="d1", no_ack=True)
    pika_channel.basic_publish("", name, b"from pika", pika.BasicProperties(message_id="m1"))
    transfer = peer.expect(1, "message.transfer").method
    assert (transfer.destination, transfer.body.data) == ("d1", b"from pika")
    assert (transfer.routing_key, transfer.message_id) == (name, "m1")


def test_message_get_returns_a_transfer_then_empty(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = _session(peer_factory, name)
    _transfer(peer, name, b"only")
    peer.send(1, "message.get", queue=name, destination="g", no_ack=True)
    assert peer.expect(1, "message.transfer").method.body.data == b"only"
    peer.send(1, "message.get", queue=name, destination="g", no_ack=True)
    peer.expect(1, "message.empty")


@rule("message:explicit-acknowledgements")
def test_rule_message_explicit_acknowledgements_session_ack_settles_the_acked_half(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = _session(peer_factory, name)
    for n in range(4):
        _transfer(peer, name, str(n).encode())
    peer.send(1, "message.consume", queue=name, destination="d", no_ack=False)
    got = [peer.expect(1, "message.transfer").method.body.data for _ in range(4)]
    assert got == [b"0", b"1", b"2", b"3"]
    peer.send(1, "session.ack", cumulative_seen_mark=1, seen_frame_set=[(3, 3)])
    peer.close()  # the two unacknowledged go back to the queue
    again = _session(peer_factory, name)
    again.send(1, "message.consume", queue=name, destination="d", no_ack=True)
    rest = sorted(again.expect(1, "message.transfer").method.body.data for _ in range(2))
    assert rest == [b"1", b"3"]
    again.nothing(1, "message.transfer")


@rule("message:automatic-acknowledgements")
def test_rule_message_automatic_acknowledgements_no_ack_consumer_gets_every_message(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = _session(peer_factory, name)
    for n in range(3):
        _transfer(peer, name, str(n).encode())
    peer.send(1, "message.consume", queue=name, destination="d", no_ack=True)
    assert [peer.expect(1, "message.transfer").method.body.data for _ in range(3)] == [
        b"0", b"1", b"2",
    ]  # fmt: skip
    assert peer.call(1, "queue.declare", queue=name, passive=True).message_count == 0


def test_rule_message_cancel_ignore_an_unknown_destination_is_no_error(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = _session(peer_factory, name)
    peer.send(1, "message.cancel", destination="never-consumed")
    peer.send(1, "session.ping")
    peer.expect(1, "session.pong")


def _get_body(peer: Peer, queue: str) -> bytes | None:
    peer.send(1, "message.get", queue=queue, destination="g", no_ack=True)
    got = peer.expect(1, "message.transfer", "message.empty").method
    return None if got.NAME == "message.empty" else bytes(got.body.data)


@rule("message.close:message-acknowledge-after-close")
def test_rule_message_close_message_acknowledge_after_close_a_referenced_transfer_waits(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = _session(peer_factory, name)
    peer.send(1, "message.open", reference=b"r1")
    peer.send(1, "message.append", reference=b"r1", bytes=b"big ")
    peer.send(1, "message.transfer", destination="", routing_key=name,
              body=Content(b"r1", reference=True))  # fmt: skip
    peer.send(1, "message.append", reference=b"r1", bytes=b"body")
    assert _get_body(peer, name) is None  # not routed while the reference is open
    peer.send(1, "message.close", reference=b"r1")
    assert _get_body(peer, name) == b"big body"


def test_message_checkpoint_and_resume_continue_a_reference_on_another_connection(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    first = _session(peer_factory, name)
    first.send(1, "message.open", reference=b"r")
    first.send(1, "message.append", reference=b"r", bytes=b"12345")
    first.send(1, "message.checkpoint", reference=b"r", identifier=name)
    first.call(1, "session.close")  # the open reference is discarded, the checkpoint kept
    second = _session(peer_factory, name)
    offset = second.call(1, "message.resume", reference=b"r2", identifier=name)
    assert (offset.NAME, offset.value) == ("message.offset", 5)
    second.send(1, "message.append", reference=b"r2", bytes=b"678")
    second.send(1, "message.transfer", destination="", routing_key=name,
                body=Content(b"r2", reference=True))  # fmt: skip
    second.send(1, "message.close", reference=b"r2")
    assert _get_body(second, name) == b"12345678"


def test_message_resume_of_an_unknown_identifier_is_offset_0(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = _session(peer_factory, name)
    assert peer.call(1, "message.resume", reference=b"r", identifier=name + "-x").value == 0


@rule("message.open.reference:duplicate-reference")
def test_rule_message_open_reference_duplicate_reference_is_an_error(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = _session(peer_factory, name)
    peer.send(1, "message.open", reference=b"r")
    peer.send(1, "message.open", reference=b"r")
    assert peer.expect(1, "session.closed").method.reply_code == 406


@rule("message.append.reference:non-existent-reference")
def test_rule_message_append_reference_non_existent_reference_is_an_error(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = _session(peer_factory, name)
    peer.send(1, "message.append", reference=b"never", bytes=b"x")
    assert peer.expect(1, "session.closed").method.reply_code == 404
