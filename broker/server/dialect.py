"""A protocol dialect: one AMQP version as the server speaks it, plugged into the one core.

The client's protocol header picks the dialect (``Dialects.of``) among those registered where
the server is built (``app.py``). The core (``connection.py``, ``channel.py``) frames,
negotiates and dispatches; the dialect supplies what differs between versions:

- its channel method handlers and its content handlers, by method name; the handlers work
  on the channel's public surface (``abc.Channel``);
- the state it keeps per channel beyond the core's, and what happens to it when the
  channel closes;
- its few policies: a further check before each delivery, whether an unbind of something
  missing is answered unbind-ok, whether alternate exchanges chain, whether multi-frame
  deliveries may be cancelled, and its
  connection-level behaviour (the methods that open a channel, connection.start's version
  and server properties, redirects, stopping publishers over the memory watermark, a
  refused tune-ok, frames of other types, events the core does not handle).

The defaults here are the behaviour of a version that has none of these extras.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from amqp_protocol import Method, Spec, errors, events
from amqp_protocol.generated.any_version import ConnectionOpen

from .abc import Channel, Connection

log = logging.getLogger("broker.connection")

#: A channel method handler. Each takes its own generated method class; the table maps names.
ChannelHandler = Callable[[Channel, Any], None]
#: A handler of a content-bearing method from the client: (channel, method, properties, body),
#: the properties of the method's class.
ContentHandler = Callable[[Channel, Any, Any, bytes], None]
_C = TypeVar("_C", bound=Channel)


class Dialect:
    """What one protocol version supplies to the core (see the module's doc)."""

    #: An unbind whose queue or exchange is missing is answered unbind-ok, not 404.
    unbind_missing_is_ok = False
    #: A tune-ok's channel_max 0 ("no limit") is refused as over the server's limit (else it
    #: means the server's own limit).
    refuses_unlimited_channels = False
    #: A delivery of several body frames may be cancelled by a reject while it is sent
    #: (through the connection's content pump).
    cancellable_contents = False
    #: The dialect's basic.publish handler deals with the immediate flag (and calls the
    #: core's ``basic_publish`` once a consumer is ready); else the core refuses it.
    honours_immediate = False
    #: A new classic queue refuses ``x-delivery-limit`` (as RabbitMQ does over 0-9-1); else
    #: the limit applies (rule basic.deliver:01 of 0-9).
    refuses_classic_delivery_limit = False
    #: Method arguments that do not decode are reported 501 frame-error, as RabbitMQ reports
    #: them, instead of the 502 syntax-error the protocol layer raises.
    syntax_errors_are_frame_errors = False
    #: A published message that its exchange's alternate exchange cannot route either goes
    #: on to that exchange's alternate exchange (RabbitMQ); else it is dropped there.
    alternates_chain = True
    #: Checked before each delivery to a consumer that acknowledges, after the core's own
    #: limits (None: nothing more to check).
    delivery_limit: Callable[[Channel], bool] | None = None

    def __init__(
        self,
        spec: Spec,
        channel_handlers: Mapping[str, ChannelHandler],
        content_handlers: Mapping[str, ContentHandler],
    ) -> None:
        self.spec = spec
        # Keyed by the methods' classes, as the channel looks them up for every method:
        # ``type(m)`` is one cheap call where ``m.NAME``, a class attribute, is a load
        # CPython 3.11 cannot specialise. (Handler tables shared between versions name
        # methods this one lacks: nothing of those names can arrive.)
        self.channel_handlers: Mapping[type[Method], ChannelHandler] = {
            spec.method(name): handler
            for name, handler in channel_handlers.items()
            if spec.has_method(name)
        }
        self.content_handlers: Mapping[type[Method], ContentHandler] = {
            spec.method(name): handler
            for name, handler in content_handlers.items()
            if spec.has_method(name)
        }

    def register_contents(self) -> None:
        """Tell the store how to encode and recover this dialect's content classes other than
        basic; the server calls it before it recovers the journal."""

    def channel_state(self) -> object:
        """What a new channel keeps for this dialect (``Channel.dialect_state``)."""
        return None

    def channel_closing(self, channel: Channel) -> None:
        """The channel is being torn down (before its consumers are cancelled)."""

    def channel_lost(self, channel: Channel) -> None:
        """The channel's connection is closing or gone: by default the channel is torn down
        (the 0-10 draft's sessions detach instead, rule session.open:expiration)."""
        channel.teardown()

    def open_channel(
        self, conn: Connection, channel_id: int, method: Method, new: Callable[[], _C]
    ) -> _C | None:
        """``method`` came on a channel that is not open: the channel it opens (``new()``
        makes one; the 0-10 draft's session.resume gives back a suspended one), or None to
        ignore it (late, for a channel the server closed: the protocol layer let it through)."""
        if method.NAME != "channel.open":
            return None
        channel = new()
        conn.send_method(channel_id, conn.spec.method("channel.open-ok")())
        return channel

    def other_event(self, conn: Connection, ev: events.Event) -> None:
        """An event of the protocol layer the core does not handle (the 0-10 draft's request
        and response frames)."""
        raise errors.UnexpectedFrame(f"UNEXPECTED_FRAME - {type(ev).__name__}")

    def start_version(self) -> tuple[int, int]:
        """connection.start's version-major and version-minor."""
        return self.spec.version[0], self.spec.version[1]

    def server_properties(self, properties: dict[str, Any]) -> dict[str, Any]:
        """connection.start's server-properties, from the core's ``properties``."""
        return properties

    def redirected(self, conn: Connection, m: ConnectionOpen) -> bool:
        """Send the client elsewhere instead of opening ``m``'s virtual host (True: done)."""
        return False

    def publishers_blocked(self, conn: Connection, blocked: bool) -> None:
        """The broker's memory crossed its watermark while ``conn`` publishes."""

    def tuning_refused(self, conn: Connection, err: errors.AMQPError) -> bool:
        """A connection.tune-ok was refused with ``err``: True when handled here, else the
        core closes the connection with ``err``. By default the socket is closed without a
        connection.close, as the 0-9 rules say and RabbitMQ 4 does in 0-9-1 too (it closes
        3 s later; measured on 4.0.5)."""
        log.info("connection %s: tune-ok refused (%s); closing the socket", conn.peer, err)
        conn.abort()
        return True

    def other_frame(self, conn: Connection, ev: events.OtherFrameReceived) -> None:
        """A frame of a type other than method, header, body and heartbeat."""
        raise errors.UnexpectedFrame(f"UNEXPECTED_FRAME - frame type {ev.frame_type}")


class Dialects:
    """The dialects a server speaks, preferred first (a client asking for none of them is
    answered with the first one's protocol header)."""

    def __init__(self, *dialects: Dialect) -> None:
        self._dialects = dialects

    @property
    def specs(self) -> tuple[Spec, ...]:
        return tuple(d.spec for d in self._dialects)

    def register_contents(self) -> None:
        """Each dialect's ``register_contents``."""
        for dialect in self._dialects:
            dialect.register_contents()

    def of(self, spec: Spec) -> Dialect:
        """The dialect of the version a protocol header negotiated."""
        return next(d for d in self._dialects if d.spec is spec)
