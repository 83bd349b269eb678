"""Output of an AMQP 0-9 connection whose contents may be cancelled half-sent.

Rule basic.reject:01 (0-9 only; 0-9-1 clients would not understand it): the server reads
and processes a reject while it is still sending the rejected content, and cancels what is
left of it with a content body frame of size 1 (no data, only the frame-end octet).

A content larger than one body frame goes out through a ``ContentPump``: its body frames
are handed to the transport only while the transport is not paused by TCP flow control;
until then they are held here, where ``cancel`` can still replace them with the cancel
frame. Everything written after a held content waits behind it, so frames keep their order.

The pump hands over one piece of a content per ``drain``, and the connection drains again on
its next event-loop turn: a peer that keeps reading never pauses the transport, and a pump
that wrote on until the content was out would read a reject only once there is nothing left
to cancel.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from amqp_protocol.frames import BODY, FRAME_END_BYTE, FRAME_HEADER, FRAME_OVERHEAD

#: Body frames handed to the transport in one ``drain``: a reject is read between two pieces.
_WRITE_SIZE = 256 * 1024


class _HeldBody:
    """The body frames of one content still to be written."""

    __slots__ = ("channel", "delivery_tag", "frames", "offset", "cancelled")

    def __init__(self, channel: int, delivery_tag: int, frames: memoryview) -> None:
        self.channel = channel
        self.delivery_tag = delivery_tag
        self.frames = frames
        self.offset = 0
        self.cancelled = False


class ContentPump:
    def __init__(self) -> None:
        self._items: deque[bytes | _HeldBody] = deque()
        self.held_bytes = 0  #: octets of held output other than body frames
        #: Whether anything is held. A plain attribute, not ``__bool__``: the connection reads
        #: it on every write and delivery, where a Python-level call would cost more.
        self.holding = False

    @property
    def holds_content(self) -> bool:
        return any(isinstance(item, _HeldBody) for item in self._items)

    def hold(self, data: bytes) -> None:
        if data:
            self._items.append(data)
            self.held_bytes += len(data)
            self.holding = True

    def hold_content(
        self, data: bytes, channel: int, delivery_tag: int, body_size: int, frame_max: int
    ) -> None:
        """``data``: a content-bearing method, its header and its body frames, as encoded."""
        frame_count = -(-body_size // (frame_max - FRAME_OVERHEAD))
        body_frames = body_size + FRAME_OVERHEAD * frame_count
        split = len(data) - body_frames
        self.hold(data[:split])
        self._items.append(_HeldBody(channel, delivery_tag, memoryview(data)[split:]))
        self.holding = True

    def cancel(self, channel: int, delivery_tag: int) -> bool:
        """Cancel the rest of that delivery's content; False when none of it is held."""
        for item in self._items:
            if (
                isinstance(item, _HeldBody)
                and (item.channel, item.delivery_tag) == (channel, delivery_tag)
                and not item.cancelled
            ):
                item.cancelled = True
                return True
        return False

    def drain(self, write: Callable[[bytes], None], paused: Callable[[], bool]) -> None:
        """Write held output in order until the transport pauses, a piece of a content has
        been written or nothing is left; ``holding`` then says whether to drain again."""
        items = self._items
        while items and not paused():
            item = items[0]
            if isinstance(item, bytes):
                items.popleft()
                self.held_bytes -= len(item)
                write(item)
            elif item.cancelled:
                items.popleft()
                write(FRAME_HEADER.pack(BODY, item.channel, 0) + FRAME_END_BYTE)
            else:
                end = _frames_end(item.frames, item.offset, _WRITE_SIZE)
                write(item.frames[item.offset : end].tobytes())
                item.offset = end
                if end == len(item.frames):
                    items.popleft()
                break
        self.holding = bool(items)


def _frames_end(frames: memoryview, offset: int, size: int) -> int:
    """Where the whole frames from ``offset`` end, at least one frame and about ``size``."""
    end = offset
    while end < len(frames) and (end == offset or end - offset < size):
        (payload,) = FRAME_HEADER.unpack_from(frames, end)[2:]
        end += payload + FRAME_OVERHEAD
    return end
