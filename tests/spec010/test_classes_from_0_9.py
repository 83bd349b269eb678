"""What the draft says of the classes it keeps from 0-9 (access, file, stream, tunnel) in
other words than 0-9: tickets belong to a session, file publishers are stopped with
session.flow. The rest of those classes' rules are checked by the 0-9 tests, which run in
both dialects (``tests/spec09/dialects.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from amqp_protocol import SPEC_0_10
from broker import Broker
from tests.spec09.flows import receive_file
from tests.spec09.peer import Peer


def _open_session(peer: Peer, channel: int) -> uuid.UUID:
    attached = peer.call(channel, "session.open", detached_lifetime=60)
    return attached.session_id  # type: ignore[no-any-return]


@pytest.mark.spec010_rule("access.request-ok:per-session")
def test_a_ticket_is_valid_in_its_session_only_wherever_the_session_is_resumed(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    first = peer_factory()
    session = _open_session(first, 1)
    rights = {"passive": True, "active": True, "read": True}
    ticket = first.call(1, "access.request", realm="/data", **rights).ticket
    assert first.call(1, "queue.declare", ticket=ticket, queue=name).queue == name
    _open_session(first, 2)
    first.send(2, "queue.declare", ticket=ticket, queue=name, passive=True)
    assert first.expect(2, "session.closed").method.reply_code == 403
    first.call(1, "session.suspend")
    second = peer_factory()
    second.call(1, "session.resume", session_id=session)
    assert second.call(1, "queue.declare", ticket=ticket, queue=name, passive=True).queue == name


WATERMARK = 64_000
BODY = 16_000
COUNT = 8  # twice the watermark


@pytest.mark.spec010_rule("file:no-discard")
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
