"""The contract between a connection and its channels, as ``broker/server/abc.py`` is the
broker's: what each offers the other, so that neither reaches into the other's privates and
``channel.py`` and ``connection.py`` need not import each other.

Threads and locks (see ``connection.py``): ``ChannelHost.send`` takes the connection's send
lock and may be called by any thread. ``handle_events`` and ``wake_publishers`` are called by
the connection's I/O thread, ``mark_closed`` by whichever thread finds the connection ended,
``open`` by the caller of ``Connection.channel()``; the connection calls them outside its
state lock (``mark_closed`` may run under the send lock, after a failed write).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from amqp_protocol import Method, Spec
from amqp_protocol.events import ContentReceived, DeliveriesReceived, MethodReceived

from .exceptions import ClientError

#: One message as the protocol encodes it: encoded basic.publish arguments, encoded
#: property list, body.
EncodedContent = tuple[bytes, bytes, bytes]


class ChannelHost(Protocol):
    """What a connection offers its channels."""

    spec: Spec
    #: The server sent connection.blocked (a resource alarm) and has not unblocked yet.
    blocked: bool
    blocked_reason: str
    #: How long a publisher waits for the server to unblock the connection.
    blocked_timeout: float

    def send(self, data: bytes, prepare: Callable[[], None] | None = None) -> None:
        """Write ``data`` whole; ``prepare`` runs under the send lock just before the write
        (bookkeeping that must follow the wire order). Raises the connection's error when
        it is closed."""
        ...

    def send_method(self, channel: int, method: Method) -> None:
        """Encode ``method`` for ``channel`` and write it."""
        ...

    def encode_method(self, channel: int, method: Method) -> bytes:
        """The frame(s) of ``method`` on ``channel``, for ``send`` later."""
        ...

    def encode_contents(
        self, channel: int, class_id: int, contents: Iterable[EncodedContent]
    ) -> bytes:
        """The frames of pre-encoded content methods (basic.publish) on ``channel``, split
        by the negotiated frame-max."""
        ...

    def release_channel(self, number: int) -> None:
        """The channel ``number`` is closed: its number is free again."""
        ...

    def deliver_as_columns(self, number: int) -> None:
        """Hand the deliveries on channel ``number`` to it as ``DeliveriesReceived`` runs."""
        ...


class ChannelPeer(Protocol):
    """What a channel offers its connection."""

    number: int

    def open(self) -> None:
        """channel.open and wait for open-ok."""
        ...

    def handle_events(
        self, events: list[MethodReceived | ContentReceived | DeliveriesReceived]
    ) -> None:
        """A run of methods (with their contents) the I/O thread received for this channel."""
        ...

    def wake_publishers(self) -> None:
        """The connection was blocked or unblocked: publishers waiting for room re-check."""
        ...

    def mark_closed(self, error: ClientError) -> None:
        """The channel is closed (with its connection): wake every waiter with ``error``."""
        ...
