"""The draft's session class (20) on the server.

A session is opened on a channel by session.open (the server names it with a fresh UUID
and answers session.attached with it and the detached lifetime it grants, the one asked
for) and ended by session.close (answered session.closed 200) or by the client's
session.closed. session.suspend detaches it from its channel (answered session.detached):
the session keeps its name, its consumers and their unacknowledged deliveries, and its
consumers get nothing more, for its detached lifetime; a session.resume naming it, on any
connection of the same user to the same virtual host, attaches it to that channel (answered
session.attached) and its deliveries carry on there; when the lifetime runs out first, the
session ends as a closed channel does (its deliveries go back to their queues).

Detachment may also be implicit (rule session.open:expiration: "Whether the detachment is
explicit or implicit, as a result of application action or of application error"): a
session whose connection is lost (socket closed, connection.close from either side, a hard
error included, heartbeat timeout) or whose channel is closed by channel.close detaches as
session.suspend detaches it, without session.detached, and lives for its detached lifetime
(0: it ends at once). The exclusive queues its connection declared still go when that
connection closes, also when the session was resumed elsewhere: the draft ties an exclusive
queue to the connection ("cannot be used by any other connections until the declaring
connection closes"; with auto-delete it "MUST be deleted when the connection closes").

Errors: resuming a session that does not exist is 404 not-found; one attached to a channel
(rule session.resume:session-busy), or of another user or virtual host, is 405
resource-locked. session.ping is answered by session.pong, session.flow by session.flow-ok
(and stops or restarts the session's deliveries, rule session.flow:initial-state: a new
session is active). Over TCP frames arrive in order, so a session.high-water-mark is
answered by a session.ack of that mark, and session.solicit-ack by a session.ack of the
last mark the client announced (the draft does not define frame-ids further). The client's
session.ack acknowledges the server's deliveries on the channel by number (their delivery
tags: see ``message``). A channel exception on a session's channel ends the session with
session.closed carrying the code (``errors_end_the_session``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar, cast

from amqp_protocol import errors
from amqp_protocol.generated.spec_0_10 import (
    SessionAck,
    SessionFlow,
    SessionHighWaterMark,
    SessionOpen,
    SessionResume,
)

from ...model.clock import Clock
from ..abc import Channel, Connection
from ..core_handlers import CORE_HANDLERS
from ..dialect import ChannelHandler
from . import tx
from .state import Session, state_of

_C = TypeVar("_C", bound=Channel)


class Sessions:
    """The sessions of one server, by name (attached or suspended)."""

    def __init__(self) -> None:
        self._sessions: dict[uuid.UUID, Session] = {}
        #: what detached lifetimes count on (None: the event loop of the session's
        #: connection; tests put a fake clock here)
        self.clock: Clock | None = None

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self, conn: Connection, channel_id: int, m: SessionOpen, new: Callable[[], _C]) -> _C:
        channel = new()
        session = Session(uuid.uuid4(), channel, m.detached_lifetime)
        state_of(channel).session = session
        self._sessions[session.id] = session
        _attached(conn, channel_id, session)
        return channel

    def resume(self, conn: Connection, channel_id: int, m: SessionResume) -> Channel:
        session = self._sessions.get(m.session_id)
        if session is None:
            raise errors.NotFound(f"NOT_FOUND - no session {m.session_id}")
        if session.attached:
            raise errors.ResourceLocked(
                f"RESOURCE_LOCKED - session {m.session_id} is attached to another channel"
            )
        old = session.channel.conn
        if old.vhost is not conn.vhost or old.user != conn.user:
            raise errors.ResourceLocked(
                f"RESOURCE_LOCKED - session {m.session_id} belongs to another user or vhost"
            )
        if session.timer is not None:
            session.timer.cancel()
            session.timer = None
        channel = session.channel
        channel.move_to(conn, channel_id)
        session.attached = True
        _attached(conn, channel_id, session)
        channel.redispatch()
        return channel

    def suspend(self, ch: Channel, m: object) -> None:
        _session_of(ch, "session.suspend")
        self._detach(ch, "session.detached")

    def lost(self, ch: Channel) -> None:
        """The channel's connection is closing or gone: its session, if any, detaches
        (implicit detachment); a channel opened by channel.open is torn down."""
        if state_of(ch).session is None:
            ch.teardown()
        else:
            self._detach(ch, None)

    def channel_close(self, ch: Channel, m: object) -> None:
        """channel.close on a session's channel detaches the session (answered
        channel.close-ok); on a channel opened by channel.open it is the core's."""
        if state_of(ch).session is None:
            CORE_HANDLERS["channel.close"](ch, m)
        else:
            self._detach(ch, "channel.close-ok")

    def _detach(self, ch: Channel, reply: str | None) -> None:
        """Detach the channel's session from it (answered ``reply`` if any) and start its
        detached lifetime, at whose end the session ends; with a lifetime of 0 it ends now."""
        session = state_of(ch).session
        assert session is not None
        session.attached = False
        ch.conn.forget_channel(ch.id)
        if reply is not None:
            ch.send(ch.conn.spec.method(reply)())
        if session.detached_lifetime == 0:
            ch.teardown()
            return
        clock: Clock = self.clock or ch.conn.loop
        session.timer = clock.call_later(session.detached_lifetime, ch.teardown)

    def close(self, ch: Channel, m: object) -> None:
        _session_of(ch, "session.close")
        _end(ch, 200, "ok")

    def closed(self, ch: Channel, m: object) -> None:
        """The client's session.closed: the session ends, nothing is answered."""
        _session_of(ch, "session.closed")
        ch.teardown()
        ch.conn.forget_channel(ch.id)

    def ended(self, ch: Channel) -> None:
        """The channel was torn down: its session, if any, ends."""
        session = state_of(ch).session
        if session is not None:
            if session.timer is not None:
                session.timer.cancel()
            self._sessions.pop(session.id, None)

    def handlers(self) -> dict[str, ChannelHandler]:
        return {
            "session.suspend": self.suspend,
            "session.close": self.close,
            "session.closed": self.closed,
            "session.ping": _ping,
            "session.pong": _ignore,
            "session.flow": _flow,
            "session.flow-ok": _ignore,
            "session.ack": _settle,
            "session.high-water-mark": _high_water_mark,
            "session.solicit-ack": _solicit_ack,
        }


def _end(ch: Channel, reply_code: int, reply_text: str) -> None:
    """The session ends: its channel is torn down and session.closed says why."""
    ch.teardown()
    closed = ch.conn.spec.method("session.closed")(reply_code=reply_code, reply_text=reply_text)
    ch.send(closed)
    ch.conn.forget_channel(ch.id)


@contextmanager
def errors_end_the_session(ch: Channel) -> Iterator[None]:
    """A channel exception (a soft error) on a session's channel ends the session with
    session.closed carrying its code and text, which the draft uses "for asynchronous
    exception notifications" (session.close); hard errors still close the connection, and a
    channel opened by channel.open still gets channel.close (the core's)."""
    try:
        yield
    except errors.AMQPError as err:
        if err.hard or state_of(ch).session is None:
            raise
        _end(ch, err.reply_code, err.reply_text)


def opened(
    sessions: Sessions, conn: Connection, channel_id: int, m: object, new: Callable[[], _C]
) -> _C | None:
    """The channel session.open or session.resume attaches (None for another method)."""
    if isinstance(m, SessionOpen):
        return sessions.open(conn, channel_id, m, new)
    if isinstance(m, SessionResume):
        return cast(_C, sessions.resume(conn, channel_id, m))
    return None


def _attached(conn: Connection, channel_id: int, session: Session) -> None:
    attached = conn.spec.method("session.attached")(
        session_id=session.id, detached_lifetime=session.detached_lifetime
    )
    conn.send_method(channel_id, attached)


def _session_of(ch: Channel, name: str) -> Session:
    session = state_of(ch).session
    if session is None:
        raise errors.CommandInvalid(f"COMMAND_INVALID - {name} on a channel without a session")
    return session


def _ping(ch: Channel, m: object) -> None:
    ch.send(ch.conn.spec.method("session.pong")())


def _ignore(ch: Channel, m: object) -> None:
    pass


def _flow(ch: Channel, m: SessionFlow) -> None:
    ch.flow_active = m.active
    ch.send(ch.conn.spec.method("session.flow-ok")(active=m.active))
    if m.active:
        ch.redispatch()


def _ack(ch: Channel, mark: int) -> None:
    ch.send(ch.conn.spec.method("session.ack")(cumulative_seen_mark=mark, seen_frame_set=[]))


def _settle(ch: Channel, m: SessionAck) -> None:
    """The client's session.ack: its marks are the numbers of the server's deliveries on
    the channel, their delivery tags (see ``message``); those still unacknowledged are
    acknowledged (twice is no error: frames are seen once, acks may repeat)."""
    ranges = m.seen_frame_set
    tags = [
        tag
        for tag in ch.unacked
        if tag <= m.cumulative_seen_mark or any(first <= tag <= last for first, last in ranges)
    ]
    for tag in tags:
        tx.ack(ch, tag, False)


def _high_water_mark(ch: Channel, m: SessionHighWaterMark) -> None:
    _session_of(ch, m.NAME).seen_mark = m.last_sent_mark
    _ack(ch, m.last_sent_mark)


def _solicit_ack(ch: Channel, m: object) -> None:
    _ack(ch, _session_of(ch, "session.solicit-ack").seen_mark)
