"""Implicit detachment (rule session.open:expiration): a session whose connection is lost
(socket closed, connection.close, a hard error) or whose channel is closed by channel.close
detaches as session.suspend detaches it, keeps its consumers and unacknowledged deliveries for
its detached lifetime, and is resumable from another connection; a lifetime of 0 ends it at
once, its deliveries requeued."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from amqp_protocol import SPEC_0_10
from broker import Broker
from broker.server.spec010 import Spec010Dialect
from tests.model.fakes import FakeClock
from tests.spec09.peer import Peer

rule = pytest.mark.spec010_rule


def _open_session(peer: Peer, lifetime: int) -> uuid.UUID:
    attached = peer.call(1, "session.open", detached_lifetime=lifetime)
    assert attached.NAME == "session.attached"
    return attached.session_id


def _consuming(peer: Peer, name: str, lifetime: int, *bodies: bytes) -> tuple[uuid.UUID, list]:
    """A session on channel 1 consuming queue ``name`` (prefetch 2) with ``bodies`` in it:
    its id and the deliveries it got, unacknowledged."""
    session_id = _open_session(peer, lifetime)
    peer.call(1, "queue.declare", queue=name)
    for body in bodies:
        peer.send_content(1, "basic.publish", body, exchange="", routing_key=name)
    peer.send(1, "basic.qos", prefetch_count=2)
    peer.call(1, "basic.consume", queue=name, consumer_tag="kept")
    return session_id, [peer.expect(1, "basic.deliver") for _ in range(min(2, len(bodies)))]


def _resumes_with_its_deliveries(peer: Peer, session_id: uuid.UUID, unacked: list) -> None:
    """The session resumes on ``peer``'s channel 3 (a socket's loss reaches the broker
    asynchronously: until it has, the session is still attached, 405): acking its two
    deliveries there frees its prefetch window, and its consumer delivers the third
    message."""
    for _ in range(50):
        peer.send(3, "session.resume", session_id=session_id)
        reply = peer.expect(3, "session.attached", "channel.close").method
        if reply.NAME == "session.attached":
            break
        assert reply.reply_code == 405
        peer.send(3, "channel.close-ok")
    assert (reply.NAME, reply.session_id) == ("session.attached", session_id)
    peer.send(3, "basic.ack", delivery_tag=unacked[1].method.delivery_tag, multiple=True)
    third = peer.expect(3, "basic.deliver")
    assert (third.method.consumer_tag, third.body) == ("kept", b"c")


def _socket_closed(peer: Peer) -> None:
    peer.sock.close()
    peer.closed = True


def _channel_closed(peer: Peer) -> None:
    close = {"reply_code": 200, "reply_text": "", "class_id": 0, "method_id": 0}
    peer.call(1, "channel.close", "channel.close-ok", **close)
    peer.nothing(1, "basic.deliver")


def _hard_error(peer: Peer) -> None:
    """ "as a result of application action or of application error": the connection.close
    of a hard error (504 channel-busy) detaches the session too."""
    peer.send(1, "session.open", detached_lifetime=0)
    assert peer.connection_error() == 504
    peer.send(0, "connection.close-ok")
    peer.closed = True


@rule("session.open:expiration")
@pytest.mark.parametrize(
    "lose",
    [_socket_closed, Peer.close, _channel_closed, _hard_error],
    ids=["socket-closed", "connection-close", "channel-close", "hard-error"],
)
def test_a_session_detached_without_suspend_resumes_on_another_connection(
    peer_factory: Callable[..., Peer], name: str, lose: Callable[[Peer], None]
) -> None:
    first = peer_factory()
    session_id, unacked = _consuming(first, name, 60, b"a", b"b", b"c")
    lose(first)
    _resumes_with_its_deliveries(peer_factory(), session_id, unacked)


@rule("session.open:expiration")
def test_a_lost_session_with_lifetime_0_ends_at_once_its_deliveries_requeued(
    peer_factory: Callable[..., Peer], name: str
) -> None:
    first = peer_factory()
    session_id, _ = _consuming(first, name, 0, b"a", b"b")
    first.close()  # answered close-ok after the session ended
    second = peer_factory()
    second.open_channel(1)
    assert second.message_count(name, 1) == 2
    second.send(3, "session.resume", session_id=session_id)
    assert second.error(3) == ("channel", 404)


@pytest.fixture
def clocked() -> Iterator[tuple[str, FakeClock, Callable[[float], None]]]:
    """A broker of its own whose sessions' detached lifetimes count on a fake clock: its
    URL, the clock and a function that moves the clock on the broker's event loop."""
    with Broker() as broker:
        dialect = broker.server.dialects.of(SPEC_0_10)
        assert isinstance(dialect, Spec010Dialect)
        clock = dialect.sessions.clock = FakeClock()

        def advance(seconds: float) -> None:
            async def move() -> None:
                clock.advance(seconds)

            broker.run_on_loop(move(), 5)

        yield broker.url, clock, advance


@rule("session.open:expiration")
def test_a_lost_session_ends_when_its_detached_lifetime_runs_out(
    clocked: tuple[str, FakeClock, Callable[[float], None]], name: str
) -> None:
    url, clock, advance = clocked
    first = Peer(url, SPEC_0_10)
    session_id, _ = _consuming(first, name, 30, b"a", b"b")
    first.close()
    second = Peer(url, SPEC_0_10)
    try:
        second.open_channel(1)
        assert clock.pending == 1  # the lifetime counts down from the connection's close
        advance(29.9)
        assert second.message_count(name, 1) == 0  # still held by the detached session
        advance(0.2)
        assert second.message_count(name, 1) == 2  # it ended: its deliveries are requeued
        second.send(3, "session.resume", session_id=session_id)
        assert second.error(3) == ("channel", 404)
    finally:
        second.close()
