"""A sans-IO AMQP connection: bytes in, events out; methods and messages in, bytes out.

The same class serves both sides. It knows the framing rules, the protocol-header
negotiation, content assembly and the channel life cycle, and enforces them with the spec's
reply codes; what a method *means* (authentication, queues, ...) is the application's job.

Errors are raised as ``errors.AMQPError`` subclasses; events decoded before the faulty frame
ride along on the exception's ``events`` attribute so that nothing already received is lost.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Literal

from . import errors, frames
from .events import (
    ContentReceived,
    Event,
    HeartbeatReceived,
    MethodReceived,
    OtherFrameReceived,
    ProtocolHeaderReceived,
    UnsupportedProtocol,
)
from .methods import Method
from .properties import Properties
from .spec import Spec

_CONTENT_HEADER = struct.Struct(">HHQ")
_METHOD_IDS = struct.Struct(">HH")
_CHANNEL_CLOSE_METHODS = frozenset({"channel.close", "channel.close-ok"})
_CONNECTION_CLOSE_METHODS = frozenset({"connection.close", "connection.close-ok"})

#: frame-max used until tuning, large enough for any client's start-ok.
DEFAULT_FRAME_MAX = 131072


class _Partial:
    """A content-bearing method waiting for its header and body frames."""

    __slots__ = ("method", "properties", "size", "received", "chunks")

    def __init__(self, method: Method) -> None:
        self.method = method
        self.properties: Properties | None = None
        self.size = 0
        self.received = 0
        self.chunks: list[bytes] = []


def _error(code: int, text: str, method: Method | None = None) -> errors.AMQPError:
    err = errors.error_for_code(code)(text)
    if method is not None:
        err.with_culprit(method.CLASS_ID, method.METHOD_ID)
    return err


class Connection:
    """Protocol state of one AMQP connection, for either side."""

    def __init__(
        self,
        role: Literal["client", "server"],
        spec: Spec | None = None,
        *,
        supported: Iterable[Spec] = (),
        frame_max: int = DEFAULT_FRAME_MAX,
    ) -> None:
        """``spec`` is required for a client; a server negotiates among ``supported`` (the first
        is its preferred version, offered to a peer whose header it does not know)."""
        if role == "client" and spec is None:
            raise ValueError("a client connection needs a spec")
        self.role = role
        self.spec: Spec | None = spec
        self._supported = {s.protocol_header: s for s in supported}
        self._preferred = next(iter(supported), spec) if supported else spec
        self.frame_max = frame_max
        self.channel_max = 65535
        self.open_channels: set[int] = set()
        self._closing_channels: set[int] = set()
        self._partials: dict[int, _Partial] = {}
        self._buffer = bytearray()
        self._awaiting_header = role == "server"
        self.closing = False  #: we sent connection.close
        self.closed = False  #: close-ok sent or received, or negotiation failed

    # -- output -------------------------------------------------------------------------------

    def initiate(self) -> bytes:
        """Client: the protocol header that opens the conversation."""
        assert self.spec is not None
        return self.spec.protocol_header

    def send_method(self, channel: int, method: Method) -> bytes:
        self._track(channel, method.NAME, sent=True)
        payload = method.encode()
        return frames.FRAME_HEADER.pack(frames.METHOD, channel, len(payload)) + payload + b"\xce"

    def send_content(self, channel: int, method: Method, properties: Properties, body: bytes) -> bytes:
        """A content-bearing method with its header and body frames, split by frame-max."""
        payload = method.encode()
        header = properties.encode_header(len(body))
        return b"".join(
            [
                frames.FRAME_HEADER.pack(frames.METHOD, channel, len(payload)),
                payload,
                b"\xce",
                frames.FRAME_HEADER.pack(frames.HEADER, channel, len(header)),
                header,
                b"\xce",
                *frames.encode_body_frames(channel, body, self.frame_max),
            ]
        )

    def send_heartbeat(self) -> bytes:
        return frames.HEARTBEAT_FRAME

    # -- input --------------------------------------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        """Feed received bytes; returns the events they complete (possibly none)."""
        events: list[Event] = []
        if self.closed:
            return events
        buf = self._buffer
        buf += data
        try:
            if self._awaiting_header or (self.role == "client" and buf[:4] == b"AMQP"):
                if not self._negotiate(events):
                    return events
            self._read_frames(events)
        except errors.AMQPError as err:
            if self.closing:
                # We already sent connection.close: nothing the peer sends matters any more.
                buf.clear()
                return events
            err.events = events  # type: ignore[attr-defined]
            buf.clear()
            raise
        return events

    def _negotiate(self, events: list[Event]) -> bool:
        buf = self._buffer
        if len(buf) < 8:
            if buf[:4] != b"AMQP"[: len(buf)]:
                self._refuse(bytes(buf), events)
            return False
        header = bytes(buf[:8])
        del buf[:8]
        if self.role == "client":
            self._refuse(header, events)
            return False
        spec = self._supported.get(header)
        if spec is None:
            self._refuse(header, events)
            return False
        self.spec = spec
        self._awaiting_header = False
        events.append(ProtocolHeaderReceived(spec))
        return True

    def _refuse(self, header: bytes, events: list[Event]) -> None:
        self.closed = True
        self._buffer.clear()
        reply = self._preferred.protocol_header if self.role == "server" and self._preferred else b""
        events.append(UnsupportedProtocol(header, reply))

    def _read_frames(self, events: list[Event]) -> None:
        buf = self._buffer
        size_limit = self.frame_max - frames.FRAME_OVERHEAD
        unpack = frames.FRAME_HEADER.unpack_from
        pos, n = 0, len(buf)
        try:
            while n - pos >= 7:
                frame_type, channel, size = unpack(buf, pos)
                if size > size_limit:
                    raise _error(501, f"frame of {size} bytes exceeds frame-max {self.frame_max}")
                end = pos + 7 + size
                if end >= n:
                    break
                if buf[end] != frames.FRAME_END:
                    raise _error(501, f"frame-end octet is 0x{buf[end]:02x}, not 0xce")
                payload = bytes(buf[pos + 7 : end])
                pos = end + 1
                event = self._frame(frame_type, channel, payload)
                if event is not None:
                    events.append(event)
                if self.closed:
                    break
        finally:
            del buf[:pos]

    def _frame(self, frame_type: int, channel: int, payload: bytes) -> Event | None:
        if frame_type == frames.METHOD:
            return self._method_frame(channel, payload)
        if frame_type == frames.HEADER:
            return self._header_frame(channel, payload)
        if frame_type == frames.BODY:
            return self._body_frame(channel, payload)
        if frame_type == frames.HEARTBEAT:
            if channel != 0:
                raise _error(501, f"heartbeat frame on channel {channel}, not 0")
            return HeartbeatReceived()
        assert self.spec is not None
        if frames.OOB_METHOD <= frame_type <= frames.TRACE and self.spec.version < (0, 9, 1):
            return OtherFrameReceived(frame_type, channel, payload)
        raise _error(501, f"unknown frame type {frame_type}")

    def _method_frame(self, channel: int, payload: bytes) -> Event | None:
        assert self.spec is not None
        if len(payload) < 4:
            raise _error(502, "method frame shorter than its class and method ids")
        class_id, method_id = _METHOD_IDS.unpack_from(payload, 0)
        cls = self.spec.method_by_id(class_id, method_id)
        if cls is None:
            raise _error(503, f"unknown method: class {class_id}, method {method_id}").with_culprit(
                class_id, method_id
            )
        try:
            method, end = cls.decode(payload, 4)
        except errors.AMQPError as err:
            raise err.with_culprit(class_id, method_id) from None
        if end != len(payload):
            raise _error(502, f"{cls.NAME}: {len(payload) - end} bytes after the arguments", method)
        if not self._accept(channel, method):
            return None
        if channel in self._partials:
            raise _error(505, f"{cls.NAME} arrived while content of {self._partials[channel].method.NAME} was incomplete", method)
        self._track(channel, method.NAME, sent=False)
        if method.HAS_CONTENT:
            self._partials[channel] = _Partial(method)
            return None
        return MethodReceived(channel, method)

    def _accept(self, channel: int, method: Method) -> bool:
        """Check a received method against the channel life cycle; False: discard it."""
        name = method.NAME
        if self.closing:
            return name in _CONNECTION_CLOSE_METHODS
        if channel == 0:
            if not name.startswith("connection."):
                raise _error(504, f"{name} on channel 0, which carries only connection methods", method)
            return True
        if name.startswith("connection."):
            raise _error(503, f"{name} on channel {channel}: connection methods belong on channel 0", method)
        if channel in self._closing_channels:
            return name in _CHANNEL_CLOSE_METHODS
        if name == "channel.open":
            if channel in self.open_channels and self.role == "server":
                raise _error(504, f"channel {channel} is already open", method)
            if channel > self.channel_max:
                raise _error(530, f"channel {channel} exceeds channel-max {self.channel_max}", method)
            return True
        if channel not in self.open_channels:
            raise _error(504, f"{name} on channel {channel}, which is not open", method)
        return True

    def _track(self, channel: int, name: str, *, sent: bool) -> None:
        if name == "channel.open":
            self.open_channels.add(channel)
        elif name == "channel.close" and sent:
            self._closing_channels.add(channel)
            self._partials.pop(channel, None)
        elif name == "channel.close-ok":
            self.open_channels.discard(channel)
            self._closing_channels.discard(channel)
            self._partials.pop(channel, None)
        elif name == "connection.close" and sent:
            self.closing = True
        elif name == "connection.close-ok":
            self.closed = True

    def _discarding(self, channel: int) -> bool:
        return self.closing or channel in self._closing_channels

    def _header_frame(self, channel: int, payload: bytes) -> Event | None:
        partial = self._partials.get(channel)
        if partial is None or partial.properties is not None:
            if self._discarding(channel):
                return None
            raise _error(505, f"content header on channel {channel} without a content method")
        if len(payload) < 14:
            raise _error(502, "content header truncated", partial.method)
        class_id, _weight, size = _CONTENT_HEADER.unpack_from(payload, 0)
        if class_id != partial.method.CLASS_ID:
            raise _error(505, f"content header of class {class_id} after {partial.method.NAME}", partial.method)
        assert self.spec is not None
        props_cls = self.spec.properties_by_id(class_id)
        if props_cls is None:
            raise _error(503, f"class {class_id} has no content properties", partial.method)
        try:
            properties = props_cls.decode(payload, 12)
        except errors.AMQPError as err:
            raise err.with_culprit(partial.method.CLASS_ID, partial.method.METHOD_ID) from None
        if size == 0:
            del self._partials[channel]
            return ContentReceived(channel, partial.method, properties, b"")
        partial.properties = properties
        partial.size = size
        return None

    def _body_frame(self, channel: int, payload: bytes) -> Event | None:
        partial = self._partials.get(channel)
        if partial is None or partial.properties is None:
            if self._discarding(channel):
                return None
            raise _error(505, f"content body on channel {channel} without a content header")
        partial.received += len(payload)
        if partial.received > partial.size:
            raise _error(501, f"content body exceeds the {partial.size} bytes its header declared", partial.method)
        if partial.received < partial.size:
            partial.chunks.append(payload)
            return None
        del self._partials[channel]
        body = b"".join([*partial.chunks, payload]) if partial.chunks else payload
        return ContentReceived(channel, partial.method, partial.properties, body)
