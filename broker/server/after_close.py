"""A connection after its connection.close-ok: read and discard until the client closes;
and the report of a socket closed before a close handshake finished.

A client may still be writing when its connection.close goes out (a client that sends the
close on channel 0 ahead of a channel's write buffer: Node's amqplib). RabbitMQ 4.0.5
answers close-ok and reads on, discarding, until the client closes its end; a broker that
closed the socket at once would make those writes fail (EPIPE, a reset), and a client that
waits for its close to complete after such an error never completes. So does this broker,
within RabbitMQ's bounds (``rabbit_reader``): the socket is closed ``CLOSING_TIMEOUT``
seconds after the close-ok (or after the agreed heartbeat, when that is shorter), or as
soon as a frame larger than the agreed ``frame_max`` arrives. Measured on 4.0.5 with
heartbeats off: a client writing publishes after its close had its socket reset 30.0 s
after the close-ok, about 15 MB later (docs/measurements/clean-close.md).

Nothing read here is parsed beyond its frame header, so nothing a client sends after its
close frame is routed. The connection's own protocol object is left as it is (its layout is
guarded: tests/broker/test_attribute_layout.py); this protocol takes the transport over.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from amqp_protocol import Connection
from amqp_protocol.frames import FRAME_OVERHEAD

log = logging.getLogger("broker.connection")

#: RabbitMQ's bound in seconds (``?CLOSING_TIMEOUT`` of rabbit_reader).
CLOSING_TIMEOUT = 30
_HEADER = 7  # frame type, channel, payload size


class Closed(Protocol):
    """The connection whose socket is read here; told when the socket is gone."""

    def connection_lost(self, exc: Exception | None) -> None: ...


def closing_seconds(heartbeat: int) -> int:
    """How long the socket stays open after close-ok: RabbitMQ's bound, or the agreed
    heartbeat when it is shorter."""
    return heartbeat if 0 < heartbeat < CLOSING_TIMEOUT else CLOSING_TIMEOUT


class DiscardAfterClose(asyncio.Protocol):
    """Reads the rest of a closed connection's input frame by frame, keeping none of it."""

    __slots__ = ("_connection", "_transport", "_timer", "_frame_max", "_header", "_skip")

    def __init__(
        self,
        connection: Closed,
        transport: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        seconds: float,
        frame_max: int,
    ) -> None:
        self._connection = connection
        self._transport = transport
        self._frame_max = frame_max
        self._header = b""  # the part of a frame header read so far
        self._skip = 0  # bytes of the current frame (payload and end octet) still to come
        self._timer = loop.call_later(seconds, transport.close)

    def data_received(self, data: bytes) -> None:
        i, end = 0, len(data)
        while i < end:
            if self._skip:
                step = min(self._skip, end - i)
                self._skip -= step
                i += step
                continue
            need = _HEADER - len(self._header)
            self._header += data[i : i + need]
            i += need
            if len(self._header) < _HEADER:
                return
            size = int.from_bytes(self._header[3:7], "big")
            self._header = b""
            if self._frame_max and size > self._frame_max - FRAME_OVERHEAD:
                self._transport.close()  # RabbitMQ's fatal frame error, silent once closed
                return
            self._skip = size + 1

    def eof_received(self) -> bool:
        return False  # the client closed its end: close ours

    def connection_lost(self, exc: Exception | None) -> None:
        self._timer.cancel()
        self._connection.connection_lost(exc)


def discard_until_closed(
    connection: Closed,
    transport: asyncio.Transport,
    loop: asyncio.AbstractEventLoop,
    heartbeat: int,
    frame_max: int,
    unread: bytes = b"",
) -> None:
    """After the close-ok is written: read ``transport`` here until the client closes it,
    within ``closing_seconds(heartbeat)`` and ``frame_max``. ``unread``: the start of a frame
    the connection read but could not decode yet (the reading goes on from its end)."""
    discard = DiscardAfterClose(connection, transport, loop, closing_seconds(heartbeat), frame_max)
    transport.set_protocol(discard)
    discard.data_received(unread)
    if not transport.is_closing():
        transport.resume_reading()


def report_unanswered_close(proto: Connection, peer: str) -> None:
    """Rules connection.close-ok:reporting and channel.close-ok:reporting: a socket (of
    ``peer``, read by ``proto``) that closed while we waited for a close-ok is logged as an
    error."""
    if proto.closing and not proto.closed:
        log.warning("connection %s: socket closed before connection.close-ok", peer)
        return
    for channel_id in sorted(proto.open_channels):
        if proto.channel_closing(channel_id):
            log.warning(
                "connection %s: socket closed before channel.close-ok on channel %d",
                peer,
                channel_id,
            )
