"""The transitional AMQP 0-10 draft (``SPEC_0_10``, header ``AMQP 1 1 0 10``) on the server:
the dialect ``Spec010Dialect``.

Its channels use the same virtual hosts, exchanges, queues and messages as 0-9-1's and 0-9's.
The handlers are the core's where the draft's method is 0-9-1's (channel.close/flow,
queue.purge/delete, basic.reject), and this package's where the draft differs
(``declarations``, ``basic``, ``sessions``, ``queries``, ``message``, ``tx``, ``dtx``). A method
with no handler is answered 540 not-implemented, naming it (``ServerChannel.handle``);
docs/protocol-0-10.md says what is implemented, docs/conformance-0-10.md rule by rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from amqp_protocol import SPEC_0_10, Method, Properties, errors, events
from amqp_protocol.generated.any_version import ConnectionOpen

from ..abc import Channel, Connection
from ..channel import CORE_HANDLERS
from ..dialect import ChannelHandler, Dialect
from ..spec09 import connection_class
from . import basic, declarations, dtx, message, queries, sessions, tx
from .state import DraftState, state_of

_C = TypeVar("_C", bound=Channel)

#: The core's handlers that answer the draft's method as the draft asks.
_FROM_CORE = (
    "channel.close",
    "channel.close-ok",
    "channel.flow",
    "channel.flow-ok",
)


def _channel_handlers(
    session_handlers: dict[str, ChannelHandler], dtx_handlers: dict[str, ChannelHandler]
) -> dict[str, ChannelHandler]:
    table = {name: CORE_HANDLERS[name] for name in _FROM_CORE}
    table.update(declarations.HANDLERS)
    table.update(basic.HANDLERS)
    table.update(queries.HANDLERS)
    table.update(message.HANDLERS)
    table.update(tx.HANDLERS)
    table.update(dtx_handlers)
    table = {name: _counted(name, handler) for name, handler in table.items()}
    table.update(session_handlers)
    return table


def _counted(name: str, handler: ChannelHandler) -> ChannelHandler:
    """``handler``, numbering the command (``DraftState.commands``) unless it is execution's,
    its channel exceptions on a session's channel ending the session (``sessions``)."""
    if name.startswith("execution."):
        return handler

    def run(ch: Channel, m: Method) -> None:
        state_of(ch).commands += 1
        with sessions.errors_end_the_session(ch):
            handler(ch, m)

    return run


#: Content-bearing methods a client may send that this dialect does not implement yet: 540
#: naming them (without a handler the core would answer 503, "not sent by clients").
_CONTENT_NOT_IMPLEMENTED = ("file.stage", "stream.publish", "tunnel.request")


def _not_implemented(ch: Channel, m: Method, properties: Properties, body: bytes) -> None:
    raise errors.NotImplemented_(f"NOT_IMPLEMENTED - {m.NAME} is not supported")


def _publish(ch: Channel, m: Method, properties: Properties, body: bytes) -> None:
    state_of(ch).commands += 1
    with sessions.errors_end_the_session(ch):
        basic.basic_publish(ch, m, properties, body)  # type: ignore[arg-type]


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
        super().__init__(
            SPEC_0_10,
            _channel_handlers(self.sessions.handlers(), self.branches.handlers()),
            {
                "basic.publish": _publish,
                **dict.fromkeys(_CONTENT_NOT_IMPLEMENTED, _not_implemented),
            },
        )

    def channel_state(self) -> DraftState:
        return DraftState()

    def channel_closing(self, channel: Channel) -> None:
        self.branches.closing(channel)
        tx.closing(channel)
        basic.closing(channel)
        self.sessions.ended(channel)

    def open_channel(
        self, conn: Connection, channel_id: int, method: Method, new: Callable[[], _C]
    ) -> _C | None:
        """channel.open, and the session.open or session.resume that attaches a session."""
        if method.NAME == "channel.open":
            return super().open_channel(conn, channel_id, method, new)
        return sessions.opened(self.sessions, conn, channel_id, method, new)

    def redirected(self, conn: Connection, m: ConnectionOpen) -> bool:
        """connection.redirect as 0-9 sends it (the draft keeps the method and rule
        connection.open.insist:behaviour)."""
        return connection_class.redirected(conn, m)

    def other_event(self, conn: Connection, ev: events.Event) -> None:
        """Request and response frames (types 9 and 10): their layout and numbering are
        Qpid's, which the draft does not state; not implemented (540 naming them)."""
        kind = "frame-request" if isinstance(ev, events.RequestReceived) else "frame-response"
        raise errors.NotImplemented_(f"NOT_IMPLEMENTED - {kind} (frame type 9/10)")
