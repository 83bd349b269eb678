"""The draft's session class (20) against the bundled broker: open/attached, close/closed,
suspend/detached and resume on another connection, ping/pong, flow, acks of frame marks."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from tests.spec09.peer import Peer

rule = pytest.mark.spec010_rule


def _open_session(peer: Peer, channel: int = 1, lifetime: int = 60) -> uuid.UUID:
    attached = peer.call(channel, "session.open", detached_lifetime=lifetime)
    assert attached.NAME == "session.attached"
    assert attached.detached_lifetime == lifetime
    return attached.session_id


def _queue_with(peer: Peer, channel: int, name: str, *bodies: bytes) -> None:
    """A queue ``name`` holding ``bodies``, published through the default exchange."""
    peer.call(channel, "queue.declare", queue=name)
    for body in bodies:
        peer.send_content(channel, "basic.publish", body, exchange="", routing_key=name)


def test_rule_session_open_names_each_new_session_uniquely(
    peer_factory: Callable[..., Peer],
) -> None:
    peer = peer_factory()
    first, second = _open_session(peer, 1), _open_session(peer, 2)
    assert first != second and first.version == 4


@rule("session.open:channel-busy")
def test_rule_session_open_channel_busy_is_a_504_connection_exception(
    peer_factory: Callable[..., Peer],
) -> None:
    peer = peer_factory()
    _open_session(peer)
    peer.send(1, "session.open", detached_lifetime=0)
    assert peer.connection_error() == 504


def test_session_close_is_answered_closed_200_and_the_channel_reopens(
    peer_factory: Callable[..., Peer],
) -> None:
    peer = peer_factory()
    _open_session(peer)
    closed = peer.call(1, "session.close")
    assert (closed.NAME, closed.reply_code) == ("session.closed", 200)
    _open_session(peer)


def test_session_ping_is_answered_by_pong(peer_factory: Callable[..., Peer]) -> None:
    peer = peer_factory()
    _open_session(peer)
    peer.send(1, "session.ping")
    peer.expect(1, "session.pong")


@rule("session.flow:initial-state", "session.flow:bidirectional")
def test_rule_session_flow_initial_state_is_active_and_flow_stops_deliveries(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    peer = peer_factory()
    _open_session(peer)
    _queue_with(peer, 1, name, b"first", b"second")
    peer.call(1, "basic.consume", queue=name, no_ack=True)
    assert peer.expect(1, "basic.deliver").body == b"first"  # active from the start
    assert peer.expect(1, "basic.deliver").body == b"second"
    assert peer.call(1, "session.flow", active=False).active is False
    peer.send_content(1, "basic.publish", b"held", exchange="", routing_key=name)
    peer.nothing(1, "basic.deliver")
    assert peer.call(1, "session.flow", active=True).active is True
    assert peer.expect(1, "basic.deliver").body == b"held"


@rule("session.ack:unique-encoding")
def test_session_high_water_mark_is_acked_and_solicit_ack_repeats_the_mark(
    peer_factory: Callable[..., Peer],
) -> None:
    peer = peer_factory()
    _open_session(peer)
    peer.send(1, "session.high-water-mark", last_sent_mark=41)
    assert peer.expect(1, "session.ack").method.cumulative_seen_mark == 41
    peer.send(1, "session.solicit-ack")
    ack = peer.expect(1, "session.ack").method
    assert (ack.cumulative_seen_mark, ack.seen_frame_set) == (41, [])


def test_session_suspended_on_one_connection_resumes_on_another_with_its_deliveries(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    first = peer_factory()
    session_id = _open_session(first)
    _queue_with(first, 1, name, b"a", b"b", b"c")
    first.send(1, "basic.qos", prefetch_count=2)
    first.call(1, "basic.consume", queue=name, consumer_tag="kept")
    unacked = [first.expect(1, "basic.deliver") for _ in range(2)]
    first.call(1, "session.suspend", "session.detached")
    second = peer_factory()
    attached = second.call(3, "session.resume", session_id=session_id)
    assert (attached.NAME, attached.session_id) == ("session.attached", session_id)
    # Its unacknowledged deliveries are still its own: acking them on the new connection
    # frees the prefetch window, and its consumer delivers the third message there.
    second.send(3, "basic.ack", delivery_tag=unacked[1].method.delivery_tag, multiple=True)
    third = second.expect(3, "basic.deliver")
    assert (third.method.consumer_tag, third.body) == ("kept", b"c")
    assert third.method.delivery_tag > unacked[1].method.delivery_tag
    first.nothing(1, "basic.deliver")


@rule("session.resume:session-busy")
def test_rule_session_resume_session_busy_is_405_while_attached(
    peer_factory: Callable[..., Peer],
) -> None:
    first = peer_factory()
    session_id = _open_session(first)
    second = peer_factory()
    second.send(1, "session.resume", session_id=session_id)
    assert second.error(1) == ("channel", 405)


def test_resume_of_an_unknown_session_is_404(peer_factory: Callable[..., Peer]) -> None:
    peer = peer_factory()
    peer.send(1, "session.resume", session_id=uuid.uuid4())
    assert peer.error(1) == ("channel", 404)


@rule("session.open:expiration")
def test_rule_session_open_expiration_a_suspended_session_ends_after_its_lifetime(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    first = peer_factory()
    session_id = _open_session(first, lifetime=0)
    _queue_with(first, 1, name, b"x")
    first.call(1, "basic.consume", queue=name)
    first.expect(1, "basic.deliver")
    first.call(1, "session.suspend", "session.detached")
    second = peer_factory()
    second.open_channel(1)
    # The lifetime (0 s) ran out: the session is gone and its delivery back in the queue.
    for _ in range(50):
        ok = second.call(1, "queue.declare", queue=name, passive=True)
        if ok.message_count == 1:
            break
    assert ok.message_count == 1
    second.send(2, "session.resume", session_id=session_id)
    assert second.error(2) == ("channel", 404)


def test_a_channel_exception_on_a_session_ends_it_with_session_closed_carrying_the_code(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    """session.close: "session.closed is also used for asynchronous exception notifications"."""
    peer = peer_factory()
    session = _open_session(peer)
    _queue_with(peer, 1, name, b"held")
    peer.send(1, "basic.get", queue=name)
    peer.expect(1, "basic.get-ok")
    peer.send(1, "queue.declare", queue=name + "-missing", passive=True)
    closed = peer.expect(1, "session.closed").method
    assert closed.reply_code == 404 and name + "-missing" in closed.reply_text
    # the channel is free for a new session; the old one is gone, its delivery requeued
    _open_session(peer)
    assert peer.call(1, "queue.declare", queue=name, passive=True).message_count == 1
    peer.send(2, "session.resume", session_id=session)
    assert peer.error(2) == ("channel", 404)
