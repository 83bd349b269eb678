"""The channel life cycle of a connection, for either side: which channels are open or
closing, whether the connection is closing, and which received methods that allows.

``ChannelLifeCycle`` is one of the parts ``Connection`` is made of (see ``connection.py``):
it holds the connection's state and its rules, the frame reader asks it whether to accept a
method, and the reader and the frame writer report the life-cycle methods received and sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from .errors import AMQPError, protocol_error
from .methods import Method
from .spec import Spec

if TYPE_CHECKING:
    from .content_assembly import PartialContent

#: The channel life cycle. In the 0-10 draft a channel is opened by attaching a session to
#: it (session.open, or session.resume of a suspended one) as well as by channel.open, and
#: closed by session.close/closed (the session ends) or session.suspend/detached (the
#: session lives on, detached from the channel), as well as by channel.close/close-ok.
_CHANNEL_OPEN_METHODS = frozenset({"channel.open", "session.open", "session.resume"})
_CHANNEL_CLOSE_REQUESTS = frozenset({"channel.close", "session.close", "session.suspend"})
_CHANNEL_CLOSED_METHODS = frozenset({"channel.close-ok", "session.closed", "session.detached"})
_CHANNEL_CLOSE_METHODS = _CHANNEL_CLOSE_REQUESTS | _CHANNEL_CLOSED_METHODS
_CONNECTION_CLOSE_METHODS = frozenset({"connection.close", "connection.close-ok"})

#: Class id of connection: the same in every version.
CONNECTION_CLASS = 10
#: Classes up to this id hold the connection and channel life cycle methods: connection
#: (10) and channel (20) in every version; the 0-10 draft's session (20) and channel (21).
LIFE_CYCLE_CLASSES = 21
#: What a channel-max of 0 ("no limit") means on the wire.
_NO_CHANNEL_LIMIT = 65535


class ChannelLifeCycle:
    """The open and closing channels and the connection's closing, and their rules."""

    role: Literal["client", "server"]
    #: None until a server has negotiated the peer's version.
    spec: Spec | None
    channel_max: int
    open_channels: set[int]
    #: Channels we sent a close request on, waiting for its answer.
    _closing_channels: set[int]
    #: The content still arriving per channel (``content_assembly``), void once it closes.
    _partials: dict[int, PartialContent]
    #: The channels that take their deliveries as columns (``delivery_runs``), until closed.
    columnar: set[int]
    closing: bool  #: we sent connection.close
    closed: bool  #: close-ok sent or received, or negotiation failed

    def channel_closing(self, channel: int) -> bool:
        """We sent channel.close on ``channel`` and wait for close-ok: events the peer sent
        before it saw our close may still arrive in the same read, and must be discarded."""
        return channel in self._closing_channels

    def _accept(self, channel: int, method: Method) -> bool:
        """Check a received method against the channel life cycle; False: discard it."""
        name = method.NAME
        if self.closing:
            return name in _CONNECTION_CLOSE_METHODS
        is_connection_method = method.CLASS_ID == CONNECTION_CLASS
        if channel == 0:
            if not is_connection_method:
                raise protocol_error(
                    504, f"{name} on channel 0, which carries only connection methods", method
                )
            return True
        if is_connection_method:
            raise protocol_error(
                503, f"{name} on channel {channel}: connection methods belong on channel 0", method
            )
        if channel in self._closing_channels:
            return name in _CHANNEL_CLOSE_METHODS
        if name in _CHANNEL_OPEN_METHODS:
            if self.role == "server":
                self._check_channel_open(channel, method)
            return True
        if channel not in self.open_channels:
            raise protocol_error(504, f"{name} on channel {channel}, which is not open", method)
        return True

    def _check_channel_open(self, channel: int, method: Method) -> None:
        """A server's checks of a channel.open. In 0-9-1, as RabbitMQ 4 does (measured on
        4.0.5), channel-max bounds how many channels are open at once, not their numbers (any
        of 1..65535 opens), and a channel opened twice is "second 'channel.open' seen"; 0-9
        and 0-8 keep their spec's rule: numbers above channel-max are refused."""
        rabbitmq = self.spec is not None and self.spec.version == (0, 9, 1)
        if channel in self.open_channels:
            if rabbitmq:
                raise protocol_error(504, "CHANNEL_ERROR - second 'channel.open' seen", method)
            raise protocol_error(504, f"channel {channel} is already open", method)
        if not rabbitmq:
            if channel > (self.channel_max or _NO_CHANNEL_LIMIT):
                raise protocol_error(
                    530, f"channel {channel} exceeds channel-max {self.channel_max}", method
                )
        elif self.channel_max and len(self.open_channels) >= self.channel_max:
            raise protocol_error(
                530,
                f"NOT_ALLOWED - number of channels opened ({len(self.open_channels)}) has "
                f"reached the negotiated channel_max ({self.channel_max})",
                method,
            )

    def _track(self, channel: int, name: str, *, sent: bool) -> None:
        """Follow a life-cycle method (``name``) sent or received on ``channel``."""
        if name in _CHANNEL_OPEN_METHODS:
            self.open_channels.add(channel)
        elif name in _CHANNEL_CLOSE_REQUESTS and sent:
            self._closing_channels.add(channel)
            self._partials.pop(channel, None)
        elif name in _CHANNEL_CLOSED_METHODS:
            self.open_channels.discard(channel)
            self._closing_channels.discard(channel)
            self._partials.pop(channel, None)
            self.columnar.discard(channel)
        elif name == "connection.close" and sent:
            self.closing = True
        elif name == "connection.close-ok":
            self.closed = True

    def _discarding(self, channel: int) -> bool:
        """What arrives on ``channel`` is void: we sent a close of it or of the connection."""
        return self.closing or channel in self._closing_channels

    def _out_of_sequence(self, text: str, method: Method | None = None) -> AMQPError:
        """The error of a frame out of sequence (content without its method, a method in the
        middle of content): 505 unexpected-frame, the code of 0-9-1 that the broker gives in
        0-9 and 0-8 too, as RabbitMQ does; the 0-10 draft has no 505 and names an invalid
        sequence of frames 503 command-invalid."""
        draft = self.spec is not None and self.spec.has_request_frames
        return protocol_error(503 if draft else 505, text, method)
