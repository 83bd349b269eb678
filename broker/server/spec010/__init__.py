"""The transitional AMQP 0-10 draft (``SPEC_0_10``, header ``AMQP 1 1 0 10``) on the server:
the dialect ``Spec010Dialect``.

Its channels use the same virtual hosts, exchanges, queues and messages as 0-9-1's and 0-9's.
The handlers are the core's where the draft's method is 0-9-1's (channel.close-ok/flow, and
channel.close but on a session's channel, which it detaches: ``sessions``), 0-9's for the
classes the draft keeps from 0-9 (``classes09``: access, file, stream, tunnel), and
this package's where the draft differs (``declarations``, ``basic``, ``sessions``,
``queries``, ``message``, ``tx``, ``dtx``), some of them 0-9's where the draft keeps 0-9's
rules; request frames are ``requests``'. Every method is checked against the channel's
access tickets. A method with no handler is answered 540 not-implemented, naming it
(``ServerChannel.handle``); docs/protocol-0-10.md says what is implemented,
docs/conformance-0-10.md rule by rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from amqp_protocol import SPEC_0_10, Method, Properties, events
from amqp_protocol.generated.any_version import ConnectionOpen

from ..abc import Channel, Connection
from ..core_handlers import CORE_HANDLERS
from ..dialect import ChannelHandler, ContentHandler, Dialect
from ..spec09 import connection_class
from . import basic, classes09, declarations, dtx, message, queries, sessions, tx
from .requests import Requests
from .state import DraftState, state_of

_C = TypeVar("_C", bound=Channel)

#: The core's handlers that answer the draft's method as the draft asks.
_FROM_CORE = (
    "channel.close-ok",
    "channel.flow",
    "channel.flow-ok",
)


def _channel_handlers(
    known: sessions.Sessions, dtx_handlers: dict[str, ChannelHandler]
) -> dict[str, ChannelHandler]:
    table = {name: CORE_HANDLERS[name] for name in _FROM_CORE}
    table["channel.close"] = known.channel_close
    table.update(declarations.HANDLERS)
    table.update(basic.HANDLERS)
    table.update(queries.HANDLERS)
    table.update(message.HANDLERS)
    table.update(tx.HANDLERS)
    table.update(dtx_handlers)
    table.update(classes09.HANDLERS)
    table = {name: _counted(name, handler) for name, handler in table.items()}
    table.update(known.handlers())
    return table


def _counted(name: str, handler: ChannelHandler) -> ChannelHandler:
    """``handler``, numbering the command (``DraftState.commands``) unless it is execution's,
    checking its ticket, its channel exceptions on a session's channel ending the session
    (``sessions``)."""
    if name.startswith("execution."):
        return handler

    def run(ch: Channel, m: Method) -> None:
        state_of(ch).commands += 1
        with sessions.errors_end_the_session(ch):
            classes09.check(ch, m)
            handler(ch, m)

    return run


def _counted_content(handler: ContentHandler) -> ContentHandler:
    """A content handler, as ``_counted`` wraps the others."""

    def run(ch: Channel, m: Method, properties: Properties, body: bytes) -> None:
        state_of(ch).commands += 1
        with sessions.errors_end_the_session(ch):
            classes09.check(ch, m)
            handler(ch, m, properties, body)

    return run


_CONTENT_HANDLERS: dict[str, ContentHandler] = {
    "basic.publish": basic.basic_publish,
    **classes09.CONTENT_HANDLERS,
}


class Spec010Dialect(Dialect):
    """The transitional 0-10 draft."""

    #: rule exchange.declare.alternate-exchange:double-failure
    alternates_chain = False

    def __init__(self) -> None:
        #: the sessions of every 0-10 connection of the server (a session outlives its
        #: connection while suspended)
        self.sessions = sessions.Sessions()
        #: the dtx branches of the server's 0-10 channels (a branch outlives its channel)
        self.branches = dtx.Branches()
        #: the response ids of the channels of its connections
        self.requests = Requests()
        super().__init__(
            SPEC_0_10,
            _channel_handlers(self.sessions, self.branches.handlers()),
            {name: _counted_content(handler) for name, handler in _CONTENT_HANDLERS.items()},
        )

    def channel_state(self) -> DraftState:
        return DraftState()

    def register_contents(self) -> None:
        classes09.register_contents()

    def publishers_blocked(self, conn: Connection, blocked: bool) -> None:
        classes09.flow_publishers(conn, blocked)

    def channel_closing(self, channel: Channel) -> None:
        classes09.close_classes(channel)
        self.branches.closing(channel)
        tx.closing(channel)
        self.sessions.ended(channel)

    def channel_lost(self, channel: Channel) -> None:
        self.sessions.lost(channel)

    def open_channel(
        self, conn: Connection, channel_id: int, method: Method, new: Callable[[], _C]
    ) -> _C | None:
        """channel.open, and the session.open or session.resume that attaches a session."""
        self.requests.channel_opened(conn, channel_id)
        if method.NAME == "channel.open":
            return super().open_channel(conn, channel_id, method, new)
        return sessions.opened(self.sessions, conn, channel_id, method, new)

    def redirected(self, conn: Connection, m: ConnectionOpen) -> bool:
        """connection.redirect as 0-9 sends it (the draft keeps the method and rule
        connection.open.insist:behaviour)."""
        return connection_class.redirected(conn, m)

    def other_event(self, conn: Connection, ev: events.Event) -> None:
        """Request and response frames (types 9 and 10): see ``requests``."""
        if isinstance(ev, events.RequestReceived):
            self.requests.request_received(conn, ev)
        elif isinstance(ev, events.ResponseReceived):
            self.requests.response_received(ev)
        else:
            super().other_event(conn, ev)
