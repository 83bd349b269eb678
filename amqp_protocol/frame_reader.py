"""Bytes in, frames out: the protocol-header negotiation, the receive buffer and the frames
it holds, each turned into its event (a method's by way of the channel life cycle, content
by way of content assembly).

``FrameReader`` is one of the parts ``Connection`` is made of (see ``connection.py``).
Errors are raised as ``errors.AMQPError`` subclasses; events decoded before the faulty frame
ride along on the exception's ``events`` attribute so that nothing already received is lost.
"""

from __future__ import annotations

from . import frames
from .content_assembly import PartialContent, Wrap
from .delivery_runs import DeliveryRuns
from .errors import AMQPError, protocol_error
from .events import (
    ContentReceived,
    Event,
    HeartbeatReceived,
    MethodReceived,
    OtherFrameReceived,
    ProtocolHeaderReceived,
    RequestReceived,
    ResponseReceived,
    UnsupportedProtocol,
)
from .life_cycle import LIFE_CYCLE_CLASSES
from .methods import Method
from .spec import Spec
from .versions import spec_for_header

#: Aliases, not imported by name: see ``frames``' docstring.
_FRAME_HEAD = frames.FRAME_HEADER
_METHOD_IDS = frames.METHOD_IDS
_REQUEST_IDS = frames.REQUEST_IDS
_NO_FRAME_LIMIT = frames.NO_FRAME_LIMIT


class FrameReader(DeliveryRuns):
    """What the peer sent, as events."""

    #: 0: no limit, as in connection.tune.
    frame_max: int
    #: Server: the versions it negotiates among; the first is offered to a peer whose
    #: header it does not know.
    _offered: tuple[Spec, ...]
    _buffer: bytearray
    #: Bytes the buffer must hold before parsing is worth trying again.
    _wanted: int
    _awaiting_header: bool
    #: Client: until the first frame, the server may answer with a protocol header.
    _may_get_header: bool

    def unparsed(self) -> bytes:
        """The received bytes not yet turned into events: the start of a frame whose end
        has not arrived. A server that stops parsing (after ``connection.close-ok``) goes on
        from there, so it knows where the next frame begins."""
        return bytes(self._buffer)

    def receive_data(self, data: bytes | bytearray | memoryview) -> list[Event]:
        """Feed received bytes; returns the events they complete (possibly none).

        Raises an ``errors.AMQPError`` for a protocol violation; the events decoded before
        the faulty frame are on its ``events`` attribute.
        """
        events: list[Event] = []
        if self.closed:
            return events
        buf = self._buffer
        if buf:
            buf += data
            if len(buf) < self._wanted:
                return events
            data = bytes(buf)
            buf.clear()
        elif data.__class__ is not bytes:
            data = bytes(data)
        pos = 0
        try:
            if self._awaiting_header or (self._may_get_header and data[:1] == b"A"):
                pos = self._negotiate(data, events)
                if pos == 0 or self.closed:
                    return events
            pos = self._read_frames(data, pos, events)
        except AMQPError as err:
            if self.closing:
                # We already sent connection.close: nothing the peer sends matters any more.
                return events
            err.events = events  # type: ignore[attr-defined]
            raise
        if pos < len(data):
            buf += memoryview(data)[pos:]
        return events

    def _negotiate(self, data: bytes | bytearray | memoryview, events: list[Event]) -> int:
        """Read the peer's protocol header; returns the bytes consumed (0: not all there)."""
        if len(data) < 8:
            if data[:4] != b"AMQP"[: len(data)]:
                self._refuse(bytes(data), events)
            else:
                self._buffer += data
                self._wanted = 8
            return 0
        header = bytes(data[:8])
        spec = spec_for_header(header, self._offered) if self.role == "server" else None
        if spec is None:
            self._refuse(header, events)
            return 8
        self.spec = spec
        self._awaiting_header = False
        events.append(ProtocolHeaderReceived(spec))
        return 8

    def _refuse(self, header: bytes, events: list[Event]) -> None:
        self.closed = True
        self._buffer.clear()
        reply = self._offered[0].protocol_header if self.role == "server" else b""
        events.append(UnsupportedProtocol(header, reply))

    def _read_frames(self, data: bytes, pos: int, events: list[Event]) -> int:
        """Handle the complete frames in ``data`` from ``pos``; returns where the first
        incomplete one starts."""
        size_limit = (self.frame_max or _NO_FRAME_LIMIT) - frames.FRAME_OVERHEAD
        unpack = _FRAME_HEAD.unpack_from
        columnar = self.columnar
        n = len(data)
        while n - pos >= 8:
            frame_type, channel, size = unpack(data, pos)
            if size > size_limit:
                raise protocol_error(
                    501, f"frame of {size} bytes exceeds frame-max {self.frame_max}"
                )
            if columnar and frame_type == 1 and channel in columnar:
                run, pos, wanted = self._delivery_run(data, pos, channel, size_limit)
                if run is not None:
                    self._may_get_header = False
                    events.append(run)
                if wanted:
                    self._wanted = wanted
                    return pos
                if run is not None:
                    continue
            end = pos + 7 + size
            if end >= n:
                self._wanted = end + 1 - pos
                return pos
            if data[end] != 0xCE:
                raise protocol_error(501, f"frame-end octet is 0x{data[end]:02x}, not 0xce")
            payload = data[pos + 7 : end]
            pos = end + 1
            self._may_get_header = False
            if frame_type == 1:
                event = self._method_frame(channel, payload)
                if isinstance(event, Method):
                    content = self._whole_content(data, pos, channel, event, size_limit)
                    if content is None:
                        self._partials[channel] = PartialContent(event)
                        continue
                    event, pos = content
            elif frame_type == 3:
                event = self._body_frame(channel, payload)
            elif frame_type == 2:
                event = self._header_frame(channel, payload)
            else:
                event = self._other_frame(frame_type, channel, payload)
            if event is not None:
                if columnar and event.__class__ is ContentReceived and channel in columnar:
                    event = self._as_run(event)
                events.append(event)
                if self.closed:
                    break
        self._wanted = 8
        return pos

    def _other_frame(self, frame_type: int, channel: int, payload: bytes) -> Event | None:
        if frame_type == frames.HEARTBEAT:
            if channel != 0:
                raise protocol_error(501, f"heartbeat frame on channel {channel}, not 0")
            return HeartbeatReceived()
        assert self.spec is not None
        if frames.OOB_METHOD <= frame_type <= frames.TRACE and self.spec.version != (0, 9, 1):
            return OtherFrameReceived(frame_type, channel, payload)
        if frame_type in (frames.REQUEST, frames.RESPONSE) and self.spec.has_request_frames:
            return self._wrapped_method_frame(frame_type, channel, payload)
        raise protocol_error(501, f"unknown frame type {frame_type}")

    def _wrapped_method_frame(self, frame_type: int, channel: int, payload: bytes) -> Event | None:
        """The event of a 0-10 draft frame-request or frame-response: its ids around the
        event of its method (a content-bearing one once its content is in)."""
        if len(payload) < _REQUEST_IDS.size:
            kind = "request" if frame_type == frames.REQUEST else "response"
            raise protocol_error(502, f"frame-{kind} shorter than its ids")
        first, second, third = _REQUEST_IDS.unpack_from(payload, 0)
        wrap: Wrap = (
            (lambda r: RequestReceived(first, second, r))
            if frame_type == frames.REQUEST
            else (lambda r: ResponseReceived(first, second, third, r))
        )
        event = self._method_frame(channel, payload[_REQUEST_IDS.size :])
        if isinstance(event, Method):
            self._partials[channel] = PartialContent(event, wrap)
            return None
        return wrap(event) if isinstance(event, MethodReceived) else event

    def _method_frame(self, channel: int, payload: bytes) -> Event | Method | None:
        """The event of a method frame, None for a discarded method, or a content-bearing
        method itself: its content is still to be read."""
        assert self.spec is not None
        if len(payload) < 4:
            raise protocol_error(502, "method frame shorter than its class and method ids")
        class_id, method_id = _METHOD_IDS.unpack_from(payload, 0)
        cls = self.spec.method_by_id(class_id, method_id)
        if cls is None:
            err = protocol_error(503, f"unknown method: class {class_id}, method {method_id}")
            raise err.with_culprit(class_id, method_id)
        try:
            method, end = cls.decode(payload, 4)
        except AMQPError as err:
            raise err.with_culprit(class_id, method_id) from None
        if end != len(payload):
            raise protocol_error(
                502, f"{cls.NAME}: {len(payload) - end} bytes after the arguments", method
            )
        # The common case first: a class method on an open channel of a live connection.
        if not (
            class_id > LIFE_CYCLE_CLASSES
            and channel in self.open_channels
            and not self.closing
            and channel not in self._closing_channels
        ) and not self._accept(channel, method):
            return None
        partial = self._partials.get(channel)
        if partial is not None:
            raise self._out_of_sequence(
                f"{cls.NAME} arrived while content of {partial.method.NAME} was incomplete",
                method,
            )
        if class_id <= LIFE_CYCLE_CLASSES:
            self._track(channel, cls.NAME, sent=False)
        if cls.HAS_CONTENT:
            return method
        return MethodReceived(channel, method)
