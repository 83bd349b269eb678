"""What one connection sends, and when it stops reading: its output buffer and flow control.

Output is collected per event-loop turn and written with one ``transport.write``. Reading
stops (``pause_reading``) while the transport's write buffer is over its high watermark or
while the broker's memory is over its watermark and the connection publishes
(``memory_blocked``, set by ``AMQPConnection.set_memory_blocked``): a peer that stops reading
its socket holds at most ``write_buffer_high`` bytes of output, and whatever it publishes
waits in its own socket (TCP flow control), as RabbitMQ's credit flow does. Consumers get
nothing while the output is over the watermark (``writable``); once it drains, ``redispatch``
lets them go on.

In dialects with cancellable contents (0-9's rule basic.reject:01) a delivery of several body
frames goes out through the ``ContentPump``, one piece per event-loop turn, so that a reject
read in between can cut it short.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from amqp_protocol import Connection
from amqp_protocol.frames import FRAME_OVERHEAD, deliver_frames

from ..model.message import Message
from .content_pump import ContentPump


class ConnectionOutput:
    """The output of one connection, written to ``transport`` once it is made; ``proto`` is
    the connection's protocol layer (its ``frame_max``), ``high`` the output buffer's
    watermark in bytes, ``redispatch`` what lets consumers push again."""

    __slots__ = (
        "transport",
        "closed",
        "write_paused",
        "memory_blocked",
        "cancellable_contents",
        "last_send",
        "_loop",
        "_proto",
        "_high",
        "_redispatch",
        "_out",
        "_out_bytes",
        "_flush_scheduled",
        "_starved",
        "_pump",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        proto: Connection,
        high: int,
        redispatch: Callable[[], None],
    ) -> None:
        self.transport: asyncio.Transport | None = None
        #: The socket is closed, or closing without a close handshake: nothing is delivered.
        self.closed = False
        #: The transport's write buffer is over its high watermark (``pause_writing``).
        self.write_paused = False
        #: The broker is over its memory watermark and this connection publishes.
        self.memory_blocked = False
        #: The dialect's: multi-frame deliveries go through the pump (set with the dialect).
        self.cancellable_contents = False
        #: When something was last written (``loop.time()``), for heartbeats.
        self.last_send = loop.time()
        self._loop = loop
        self._proto = proto
        self._high = high
        self._redispatch = redispatch
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_scheduled = False
        #: A consumer found the output full: ``redispatch`` once it drains.
        self._starved = False
        #: contents sent frame by frame, cancellable by a reject (content_pump)
        self._pump = ContentPump()

    def write(self, data: bytes) -> None:
        if self._pump.holding:  # behind a content still being sent
            self._pump.hold(data)
        else:
            self._out.append(data)
            self._out_bytes += len(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        self._flush_scheduled = False
        if self._out and self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(self._out))
            self.last_send = self._loop.time()
        self._out.clear()
        self._out_bytes = 0
        self._drain_pump()
        if self._starved and not self.write_paused:
            self._starved = False
            self._redispatch()

    def cancellable(self, body_size: int) -> bool:
        """Rule basic.reject:01: in 0-9 a content of several body frames goes out through the
        pump (0-9-1 clients would not understand a cancelled content)."""
        return body_size > self._proto.frame_max - FRAME_OVERHEAD and self.cancellable_contents

    def hold_content(self, data: bytes, channel: int, delivery_tag: int, size: int) -> None:
        """Send ``data``, a delivery's frames, through the pump (see ``cancellable``)."""
        self._pump.hold(b"".join(self._out))
        self._out.clear()
        self._out_bytes = 0
        self._pump.hold_content(data, channel, delivery_tag, size, self._proto.frame_max)
        self._flush_soon()

    def _flush_soon(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self.flush)

    def _drain_pump(self) -> None:
        """One piece of a held content per event-loop turn (then ``flush`` drains again):
        what the peer sent meanwhile, such as a reject of that content, is read in between."""
        transport = self.transport
        if not self._pump.holding or transport is None or transport.is_closing():
            return
        self._pump.drain(transport.write, lambda: self.write_paused)
        if self._pump.holding and not self.write_paused:
            self._flush_soon()
        self.update_reading()

    def cancel_content(self, channel: int, delivery_tag: int) -> None:
        """A 0-9 reject of a delivery whose content is still being sent: the rest of it is
        replaced by the cancel frame (an empty body frame)."""
        if self._pump.cancel(channel, delivery_tag):
            self._drain_pump()

    def send_delivery(
        self,
        channel: int,
        consumer_tag: bytes,
        delivery_tag: int,
        redelivered: bool,
        message: Message,
    ) -> None:
        # Per delivery: attribute reads only, cancellable called for multi-frame bodies alone.
        body_size = len(message.body)
        cancellable = body_size > self._proto.frame_max - FRAME_OVERHEAD and self.cancellable(
            body_size
        )
        if self._pump.holding or cancellable:
            parts: list[bytes] = []
            deliver_frames(
                parts, channel, consumer_tag, delivery_tag, redelivered,
                message.envelope, message.header_payload, message.body, self._proto.frame_max,
            )  # fmt: skip
            data = b"".join(parts)
            if cancellable:
                self.hold_content(data, channel, delivery_tag, body_size)
            else:
                self.write(data)
            return
        self._out_bytes += deliver_frames(
            self._out,
            channel,
            consumer_tag,
            delivery_tag,
            redelivered,
            message.envelope,
            message.header_payload,
            message.body,
            self._proto.frame_max,
        )
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self.flush)

    @property
    def writable(self) -> bool:
        """False while output is over the high watermark (consumers then get nothing)."""
        if self.write_paused or self.closed:
            return False
        if self._out_bytes >= self._high:
            self._starved = True
            return False
        return True

    def pause_writing(self) -> None:
        self.write_paused = True
        self.update_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        self._drain_pump()
        self.update_reading()
        self._redispatch()

    def update_reading(self) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        # A 0-9 connection sending a cancellable content keeps reading: a reject may come.
        sending = self._pump.holds_content and self._pump.held_bytes < self._high
        if (self.write_paused and not sending) or self.memory_blocked:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()
