"""What the draft says of the classes it keeps from 0-9 (access, file, stream, tunnel) in
other words than 0-9: tickets belong to a session, file publishers are stopped with
session.flow. The rest of those classes' rules are checked by the 0-9 tests, which run in
both dialects (``tests/spec09/dialects.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from amqp_protocol import SPEC_0_10
from broker import Broker
from tests.spec09.flows import publish_file, receive_file
from tests.spec09.peer import Peer
from tests.spec09.test_access_tickets import TICKETED as TICKETED_0_9


def _open_session(peer: Peer, channel: int) -> uuid.UUID:
    attached = peer.call(channel, "session.open", detached_lifetime=60)
    return attached.session_id


@pytest.mark.spec010_rule("access.request-ok:per-session")
def test_a_ticket_is_valid_in_its_session_only_wherever_the_session_is_resumed(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    first = peer_factory()
    session = _open_session(first, 1)
    rights: dict[str, Any] = {"passive": True, "active": True, "read": True}
    ticket = first.call(1, "access.request", realm="/data", **rights).ticket
    assert first.call(1, "queue.declare", ticket=ticket, queue=name).queue == name
    _open_session(first, 2)
    first.send(2, "queue.declare", ticket=ticket, queue=name, passive=True)
    assert first.expect(2, "session.closed").method.reply_code == 403
    first.call(1, "session.suspend")
    second = peer_factory()
    second.call(1, "session.resume", session_id=session)
    assert second.call(1, "queue.declare", ticket=ticket, queue=name, passive=True).queue == name
    # Ended, not left detached for its lifetime: a detached session keeps its ticket on the
    # realm, which would refuse the exclusive tickets of later tests on this broker.
    assert second.call(1, "session.close").reply_code == 200


WATERMARK = 64_000
BODY = 16_000
COUNT = 8  # twice the watermark


@pytest.mark.spec010_rule("file:no-discard", "session.flow:throttling")
def test_over_the_watermark_a_file_publisher_is_stopped_with_session_flow_and_nothing_is_lost(
    name: str,
) -> None:
    broker = Broker(config={"memory_high_watermark": WATERMARK}).start()
    publisher, consumer = Peer(broker.url, SPEC_0_10), Peer(broker.url, SPEC_0_10)
    try:
        _open_session(publisher, 1)
        consumer.open_channel(1)
        publisher.call(1, "queue.declare", queue=name)
        for i in range(COUNT):
            # Not waiting for file.open-ok: the broker stops reading once it is over the mark.
            identifier = f"{name}-{i}"
            publisher.send(1, "file.open", identifier=identifier, content_size=BODY)
            publisher.send_content(1, "file.stage", bytes([i]) * BODY)
            publisher.send(1, "file.publish", routing_key=name, identifier=identifier)
        assert publisher.expect(1, "session.flow").method.active is False
        publisher.send(1, "session.flow-ok", active=False)
        consumer.call(1, "file.consume", queue=name, no_ack=True)
        bodies = [receive_file(consumer, 1)[1] for _ in range(COUNT)]
        assert sorted(bodies) == [bytes([i]) * BODY for i in range(COUNT)]
        assert publisher.expect(1, "session.flow").method.active is True
    finally:
        publisher.close()
        consumer.close()
        broker.stop()


#: Every method of the draft with a ticket field that a client sends.
TICKETED = sorted(
    name
    for name, method in SPEC_0_10.methods.items()
    if "ticket" in method.FIELD_NAMES and name != "access.request-ok"
)
#: Fields that would make a ticketed method succeed where its defaults would not (0-9's, and
#: the draft's queries).
FIELDS: dict[str, dict[str, Any]] = {
    **TICKETED_0_9,
    "exchange.query": {"name": "amq.direct"},
    "binding.query": {"exchange": "amq.direct"},
}


@pytest.mark.spec010_rule(
    *(f"{method}.ticket:validity" for method in TICKETED if method != "message.get"),
    "message.get.ticket:ticket-required",
)
@pytest.mark.parametrize("method", TICKETED)
def test_every_ticketed_method_of_the_draft_refuses_a_ticket_never_granted(
    peer: Peer, method: str, name: str
) -> None:
    peer.call(1, "queue.declare", queue=name)  # the queue an empty name refers to
    if SPEC_0_10.method(method).HAS_CONTENT:
        peer.send_content(1, method, b"x", ticket=77, exchange="", routing_key=name)
    else:
        refused = peer.spec.method(method)(ticket=77, **FIELDS.get(method, {}))
        peer.sock.sendall(peer.proto.send_method(1, refused))  # exchange.query has a `name`
    assert peer.channel_error(1) == 403


@pytest.mark.spec010_rule("queue:any-content")
def test_basic_file_and_stream_contents_share_a_queue_and_are_delivered_apart(
    peer: Peer, name: str
) -> None:
    peer.call(1, "queue.declare", queue=name)
    peer.send_content(1, "basic.publish", b"basic", exchange="", routing_key=name)
    publish_file(peer, 1, name, b"file", f"any-{name}")
    peer.send_content(1, "stream.publish", b"stream", exchange="", routing_key=name)
    peer.call(1, "stream.consume", queue=name)
    assert peer.expect(1, "stream.deliver").body == b"stream"
    peer.call(1, "file.consume", queue=name, no_ack=True)
    assert receive_file(peer, 1)[1] == b"file"
    peer.send(1, "basic.get", queue=name, no_ack=True)
    assert peer.expect(1, "basic.get-ok").body == b"basic"
    peer.call(1, "basic.get", queue=name, reply="basic.get-empty")


@pytest.mark.spec010_rule("queue:any-content")
def test_declare_ok_and_purge_count_and_purge_every_content_class(peer: Peer, name: str) -> None:
    """As in 0-9: queue.declare-ok's message-count and queue.purge(-ok) cover a queue's
    file and stream contents too, not its basic messages alone."""
    peer.call(1, "queue.declare", queue=name)
    peer.send_content(1, "basic.publish", b"basic", exchange="", routing_key=name)
    publish_file(peer, 1, name, b"file", f"count-{name}")
    peer.send_content(1, "stream.publish", b"stream", exchange="", routing_key=name)
    assert peer.call(1, "queue.declare", queue=name, passive=True).message_count == 3
    assert peer.call(1, "queue.declare", queue=name).message_count == 3
    assert peer.call(1, "queue.purge", queue=name).message_count == 3
    assert peer.call(1, "queue.declare", queue=name, passive=True).message_count == 0
    peer.call(1, "stream.consume", queue=name)
    peer.call(1, "file.consume", queue=name, no_ack=True)
    peer.nothing(1, "stream.deliver", "file.open")
