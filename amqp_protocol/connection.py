"""A sans-IO AMQP connection: bytes in, events out; methods and messages in, bytes out.

The same class serves both sides. It knows the framing rules, the protocol-header
negotiation, content assembly and the channel life cycle, and enforces them with the spec's
reply codes; what a method *means* (authentication, queues, ...) is the application's job.
The order of the connection class's methods (start ... open-ok, close) is ``handshake.py``'s.

Errors are raised as ``errors.AMQPError`` subclasses; events decoded before the faulty frame
ride along on the exception's ``events`` attribute so that nothing already received is lost.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Literal

from . import errors, frames, versions
from .events import (
    ContentReceived,
    ContentTooLarge,
    Event,
    HeartbeatReceived,
    MethodReceived,
    OtherFrameReceived,
    ProtocolHeaderReceived,
    RequestReceived,
    ResponseReceived,
    UnsupportedProtocol,
)
from .methods import Method
from .properties import Properties
from .spec import Spec
from .versions import spec_for_header

_CONTENT_HEADER = struct.Struct(">HHQ")
_FRAME_HEAD = frames.FRAME_HEADER
_END_AND_HEAD = frames.END_AND_HEADER
#: A content header frame's header with the class-id, weight and body size it starts with.
_HEADER_FRAME_HEAD = struct.Struct(">BHIHHQ")
#: The same followed by the first property-flags word.
_HEADER_FRAME_AND_FLAGS = struct.Struct(">BHIHHQH")
_METHOD_IDS = struct.Struct(">HH")
_REQUEST_IDS = frames.REQUEST_IDS
#: The channel life cycle. In the 0-10 draft a channel is opened by attaching a session to
#: it (session.open, or session.resume of a suspended one) as well as by channel.open, and
#: closed by session.close/closed (the session ends) or session.suspend/detached (the
#: session lives on, detached from the channel), as well as by channel.close/close-ok.
_CHANNEL_OPEN_METHODS = frozenset({"channel.open", "session.open", "session.resume"})
_CHANNEL_CLOSE_REQUESTS = frozenset({"channel.close", "session.close", "session.suspend"})
_CHANNEL_CLOSED_METHODS = frozenset({"channel.close-ok", "session.closed", "session.detached"})
_CHANNEL_CLOSE_METHODS = _CHANNEL_CLOSE_REQUESTS | _CHANNEL_CLOSED_METHODS
_CONNECTION_CLOSE_METHODS = frozenset({"connection.close", "connection.close-ok"})

#: frame-max used until tuning, large enough for any client's start-ok.
DEFAULT_FRAME_MAX = 131072


#: Makes the event of a 0-10 draft request or response frame of its method's event.
_Wrap = Callable[[MethodReceived | ContentReceived], Event]


class _Partial:
    """A content-bearing method waiting for its header and body frames."""

    __slots__ = ("method", "properties", "size", "received", "chunks", "skip", "wrap")

    def __init__(self, method: Method, wrap: _Wrap | None = None) -> None:
        self.method = method
        #: 0-10 draft: the request or response frame the method came in, whose event is to
        #: wrap the content's.
        self.wrap = wrap
        self.properties: Properties | None = None
        self.size = 0
        self.received = 0
        self.chunks: list[bytes] = []
        self.skip = False  #: the body is over max_body_size: count its frames, keep nothing


def _error(code: int, text: str, method: Method | None = None) -> errors.AMQPError:
    err = errors.error_for_code(code)(text)
    if method is not None:
        err.with_culprit(method.CLASS_ID, method.METHOD_ID)
    return err


#: Class id of connection: the same in every version.
CONNECTION_CLASS = 10
#: Classes up to this id hold the connection and channel life cycle methods: connection
#: (10) and channel (20) in every version; the 0-10 draft's session (20) and channel (21).
LIFE_CYCLE_CLASSES = 21
#: What a frame-max or channel-max of 0 ("no limit") means on the wire.
_NO_FRAME_LIMIT = 2**32 - 1
_NO_CHANNEL_LIMIT = 65535


class Connection:
    """Protocol state of one AMQP connection, for either side."""

    def __init__(
        self,
        role: Literal["client", "server"],
        spec: Spec | None = None,
        *,
        supported: Iterable[Spec] = (),
        frame_max: int = DEFAULT_FRAME_MAX,
        max_body_size: int | None = None,
    ) -> None:
        """``spec`` is required for a client. A server negotiates among ``supported`` (the
        first is its preferred version, offered to a peer whose header it does not know);
        by default ``(spec,)`` when a spec is given, else every version of ``ALL_SPECS``."""
        if role == "client" and spec is None:
            raise ValueError("a client connection needs a spec")
        offered = tuple(supported) or ((spec,) if spec is not None else versions.ALL_SPECS)
        self.role = role
        self.spec: Spec | None = spec
        self._offered = offered
        self._preferred = offered[0]
        self.frame_max = frame_max
        self.channel_max = 65535
        #: Bodies announced larger than this are skipped and reported as ContentTooLarge when
        #: their last frame has arrived (as RabbitMQ closes the channel only then).
        self.max_body_size = max_body_size
        self.open_channels: set[int] = set()
        self._closing_channels: set[int] = set()
        self._partials: dict[int, _Partial] = {}
        self._buffer = bytearray()
        #: Bytes the buffer must hold before parsing is worth trying again.
        self._wanted = 0
        self._awaiting_header = role == "server"
        #: Client: until the first frame, the server may answer with a protocol header.
        self._may_get_header = role == "client"
        self.closing = False  #: we sent connection.close
        self.closed = False  #: close-ok sent or received, or negotiation failed

    # -- output -------------------------------------------------------------------------------

    def initiate(self) -> bytes:
        """Client: the protocol header that opens the conversation."""
        assert self.spec is not None
        return self.spec.protocol_header

    def send_method(self, channel: int, method: Method) -> bytes:
        if method.CLASS_ID <= LIFE_CYCLE_CLASSES:
            self._track(channel, method.NAME, sent=True)
        payload = method.encode()
        return _FRAME_HEAD.pack(frames.METHOD, channel, len(payload)) + payload + b"\xce"

    def send_request(
        self, channel: int, method: Method, request_id: int, response_mark: int = 0
    ) -> bytes:
        """0-10 draft: ``method`` in a frame-request. A content-bearing method's header and
        body frames are the caller's to follow it with (``send_content`` writes a method
        frame)."""
        return self._send_wrapped(frames.REQUEST, channel, method, (request_id, response_mark, 0))

    def send_response(
        self,
        channel: int,
        method: Method,
        response_id: int,
        request_id: int,
        batch_offset: int = 0,
    ) -> bytes:
        """0-10 draft: ``method`` in a frame-response answering the requests ``request_id``
        to ``request_id + batch_offset``."""
        return self._send_wrapped(
            frames.RESPONSE, channel, method, (response_id, request_id, batch_offset)
        )

    def _send_wrapped(
        self, frame_type: int, channel: int, method: Method, ids: tuple[int, int, int]
    ) -> bytes:
        if self.spec is None or not self.spec.has_request_frames:
            label = self.spec.label if self.spec is not None else "an unnegotiated connection"
            raise ValueError(f"AMQP {label} has no request or response frames")
        try:
            packed = _REQUEST_IDS.pack(*ids)
        except struct.error as exc:
            raise _error(502, f"request or response frame ids {ids}: {exc}", method) from None
        if method.CLASS_ID <= LIFE_CYCLE_CLASSES:
            self._track(channel, method.NAME, sent=True)
        payload = packed + method.encode()
        return _FRAME_HEAD.pack(frame_type, channel, len(payload)) + payload + b"\xce"

    def send_content(
        self, channel: int, method: Method, properties: Properties, body: bytes
    ) -> bytes:
        """A content-bearing method with its header and body frames, split by frame-max."""
        payload = method.encode()
        header = properties.encode_header(len(body))
        parts = [
            _FRAME_HEAD.pack(frames.METHOD, channel, len(payload)),
            payload,
            _END_AND_HEAD.pack(frames.FRAME_END, frames.HEADER, channel, len(header)),
            header,
        ]
        frame_max = self.frame_max or _NO_FRAME_LIMIT
        if len(body) <= frame_max - frames.FRAME_OVERHEAD:
            if body:
                parts += [
                    _END_AND_HEAD.pack(frames.FRAME_END, frames.BODY, channel, len(body)),
                    body,
                ]
            parts.append(b"\xce")
        else:
            parts.append(b"\xce")
            parts += frames.encode_body_frames(channel, body, frame_max)
        return b"".join(parts)

    def content_frames(
        self, channel: int, method: Method, properties: Properties, body: bytes
    ) -> bytes:
        """The header and body frames that ``send_content`` writes after ``method``'s frame
        (in the 0-10 draft they also follow a method sent in a frame-request or
        frame-response). Cut from ``send_content``'s bytes, so that its hot path stays one
        call and one join, and the two cannot frame a content differently."""
        whole = self.send_content(channel, method, properties, body)
        _, _, size = _FRAME_HEAD.unpack_from(whole)
        return whole[frames.FRAME_OVERHEAD + size :]

    def send_encoded_contents(
        self, channel: int, class_id: int, contents: Iterable[tuple[bytes, bytes, bytes]]
    ) -> bytes:
        """Many content-bearing methods of class ``class_id`` at once, from their encoded
        parts: each item is (``Method.encode()``, ``Properties.encode_list()``, body). The
        bytes are those ``send_content`` writes for each, concatenated; a method payload
        that is the same object as the item before's is framed only once."""
        frame_max = self.frame_max or _NO_FRAME_LIMIT
        body_limit = frame_max - frames.FRAME_OVERHEAD
        header_head = _HEADER_FRAME_HEAD.pack
        body_head = _END_AND_HEAD.pack
        parts: list[bytes] = []
        last_payload: bytes | None = None
        method_frame = b""
        for payload, property_list, body in contents:
            if payload is not last_payload:
                last_payload = payload
                method_frame = (
                    _FRAME_HEAD.pack(frames.METHOD, channel, len(payload)) + payload + b"\xce"
                )
            size = len(body)
            header = header_head(frames.HEADER, channel, 12 + len(property_list), class_id, 0, size)
            if 0 < size <= body_limit:
                parts += (
                    method_frame,
                    header,
                    property_list,
                    body_head(frames.FRAME_END, frames.BODY, channel, size),
                    body,
                    b"\xce",
                )
            else:
                parts += (method_frame, header, property_list, b"\xce")
                parts += frames.encode_body_frames(channel, body, frame_max)
        return b"".join(parts)

    def send_heartbeat(self) -> bytes:
        return frames.HEARTBEAT_FRAME

    # -- input --------------------------------------------------------------------------------

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
        except errors.AMQPError as err:
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
        reply = self._preferred.protocol_header if self.role == "server" else b""
        events.append(UnsupportedProtocol(header, reply))

    def _read_frames(self, data: bytes, pos: int, events: list[Event]) -> int:
        """Handle the complete frames in ``data`` from ``pos``; returns where the first
        incomplete one starts."""
        size_limit = (self.frame_max or _NO_FRAME_LIMIT) - frames.FRAME_OVERHEAD
        unpack = _FRAME_HEAD.unpack_from
        n = len(data)
        while n - pos >= 8:
            frame_type, channel, size = unpack(data, pos)
            if size > size_limit:
                raise _error(501, f"frame of {size} bytes exceeds frame-max {self.frame_max}")
            end = pos + 7 + size
            if end >= n:
                self._wanted = end + 1 - pos
                return pos
            if data[end] != 0xCE:
                raise _error(501, f"frame-end octet is 0x{data[end]:02x}, not 0xce")
            payload = data[pos + 7 : end]
            pos = end + 1
            self._may_get_header = False
            if frame_type == 1:
                event = self._method_frame(channel, payload)
                if isinstance(event, Method):
                    content = self._whole_content(data, pos, channel, event, size_limit)
                    if content is None:
                        self._partials[channel] = _Partial(event)
                        continue
                    event, pos = content
            elif frame_type == 3:
                event = self._body_frame(channel, payload)
            elif frame_type == 2:
                event = self._header_frame(channel, payload)
            else:
                event = self._other_frame(frame_type, channel, payload)
            if event is not None:
                events.append(event)
                if self.closed:
                    break
        self._wanted = 8
        return pos

    def _whole_content(
        self, data: bytes, pos: int, channel: int, method: Method, size_limit: int
    ) -> tuple[ContentReceived, int] | None:
        """The content of ``method`` when its header frame and one body frame holding the
        whole body (or none, for an empty body) follow at ``pos`` in ``data``: the event and
        the position after its frames.

        None for anything else (a frame not all there yet, a body in several frames, another
        channel's frame in between, a body over ``max_body_size``, a faulty frame): the
        frame-by-frame path then reads the content and raises what a faulty frame deserves.
        """
        n = len(data)
        if n - pos < 22:  # the least a content header frame takes
            return None
        frame_type, frame_channel, size, class_id, _weight, body_size, flags = (
            _HEADER_FRAME_AND_FLAGS.unpack_from(data, pos)
        )
        header_end = pos + 7 + size
        if (
            frame_type != 2
            or frame_channel != channel
            or not 14 <= size <= size_limit
            or header_end >= n
            or class_id != method.CLASS_ID
            or (self.max_body_size is not None and body_size > self.max_body_size)
        ):
            return None
        if body_size == 0:
            if data[header_end] != 0xCE:
                return None
            body, after = b"", header_end + 1
        else:
            if n - header_end < 8:
                return None
            end_octet, frame_type, frame_channel, body_frame_size = _END_AND_HEAD.unpack_from(
                data, header_end
            )
            after = header_end + 8 + body_frame_size
            if (
                end_octet != 0xCE
                or frame_type != 3
                or frame_channel != channel
                or body_frame_size != body_size
                or body_frame_size > size_limit
                or after >= n
                or data[after] != 0xCE
            ):
                return None
            body, after = data[header_end + 8 : after], after + 1
        assert self.spec is not None
        props_cls = self.spec.properties_by_id(class_id)
        if props_cls is None:
            return None
        if size == 14 and flags == 0:  # no properties: nothing to decode
            properties = props_cls.__new__(props_cls)
        else:
            try:
                properties = props_cls.decode(data[pos + 7 : header_end], 12)
            except errors.AMQPError as err:
                raise err.with_culprit(method.CLASS_ID, method.METHOD_ID) from None
        return ContentReceived(channel, method, properties, body), after

    def _other_frame(self, frame_type: int, channel: int, payload: bytes) -> Event | None:
        if frame_type == frames.HEARTBEAT:
            if channel != 0:
                raise _error(501, f"heartbeat frame on channel {channel}, not 0")
            return HeartbeatReceived()
        assert self.spec is not None
        if frames.OOB_METHOD <= frame_type <= frames.TRACE and self.spec.version != (0, 9, 1):
            return OtherFrameReceived(frame_type, channel, payload)
        if frame_type in (frames.REQUEST, frames.RESPONSE) and self.spec.has_request_frames:
            return self._wrapped_method_frame(frame_type, channel, payload)
        raise _error(501, f"unknown frame type {frame_type}")

    def _wrapped_method_frame(self, frame_type: int, channel: int, payload: bytes) -> Event | None:
        """The event of a 0-10 draft frame-request or frame-response: its ids around the
        event of its method (a content-bearing one once its content is in)."""
        if len(payload) < _REQUEST_IDS.size:
            kind = "request" if frame_type == frames.REQUEST else "response"
            raise _error(502, f"frame-{kind} shorter than its ids")
        first, second, third = _REQUEST_IDS.unpack_from(payload, 0)
        wrap: _Wrap = (
            (lambda r: RequestReceived(first, second, r))
            if frame_type == frames.REQUEST
            else (lambda r: ResponseReceived(first, second, third, r))
        )
        event = self._method_frame(channel, payload[_REQUEST_IDS.size :])
        if isinstance(event, Method):
            self._partials[channel] = _Partial(event, wrap)
            return None
        return wrap(event) if isinstance(event, MethodReceived) else event

    def _method_frame(self, channel: int, payload: bytes) -> Event | Method | None:
        """The event of a method frame, None for a discarded method, or a content-bearing
        method itself: its content is still to be read."""
        assert self.spec is not None
        if len(payload) < 4:
            raise _error(502, "method frame shorter than its class and method ids")
        class_id, method_id = _METHOD_IDS.unpack_from(payload, 0)
        cls = self.spec.method_by_id(class_id, method_id)
        if cls is None:
            err = _error(503, f"unknown method: class {class_id}, method {method_id}")
            raise err.with_culprit(class_id, method_id)
        try:
            method, end = cls.decode(payload, 4)
        except errors.AMQPError as err:
            raise err.with_culprit(class_id, method_id) from None
        if end != len(payload):
            raise _error(502, f"{cls.NAME}: {len(payload) - end} bytes after the arguments", method)
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

    def _accept(self, channel: int, method: Method) -> bool:
        """Check a received method against the channel life cycle; False: discard it."""
        name = method.NAME
        if self.closing:
            return name in _CONNECTION_CLOSE_METHODS
        is_connection_method = method.CLASS_ID == CONNECTION_CLASS
        if channel == 0:
            if not is_connection_method:
                raise _error(
                    504, f"{name} on channel 0, which carries only connection methods", method
                )
            return True
        if is_connection_method:
            raise _error(
                503, f"{name} on channel {channel}: connection methods belong on channel 0", method
            )
        if channel in self._closing_channels:
            return name in _CHANNEL_CLOSE_METHODS
        if name in _CHANNEL_OPEN_METHODS:
            if self.role == "server":
                self._check_channel_open(channel, method)
            return True
        if channel not in self.open_channels:
            raise _error(504, f"{name} on channel {channel}, which is not open", method)
        return True

    def _check_channel_open(self, channel: int, method: Method) -> None:
        """A server's checks of a channel.open. In 0-9-1, as RabbitMQ 4 does (measured on
        4.0.5), channel-max bounds how many channels are open at once, not their numbers (any
        of 1..65535 opens), and a channel opened twice is "second 'channel.open' seen"; 0-9
        and 0-8 keep their spec's rule: numbers above channel-max are refused."""
        rabbitmq = self.spec is not None and self.spec.version == (0, 9, 1)
        if channel in self.open_channels:
            if rabbitmq:
                raise _error(504, "CHANNEL_ERROR - second 'channel.open' seen", method)
            raise _error(504, f"channel {channel} is already open", method)
        if not rabbitmq:
            if channel > (self.channel_max or _NO_CHANNEL_LIMIT):
                raise _error(
                    530, f"channel {channel} exceeds channel-max {self.channel_max}", method
                )
        elif self.channel_max and len(self.open_channels) >= self.channel_max:
            raise _error(
                530,
                f"NOT_ALLOWED - number of channels opened ({len(self.open_channels)}) has "
                f"reached the negotiated channel_max ({self.channel_max})",
                method,
            )

    def _track(self, channel: int, name: str, *, sent: bool) -> None:
        if name in _CHANNEL_OPEN_METHODS:
            self.open_channels.add(channel)
        elif name in _CHANNEL_CLOSE_REQUESTS and sent:
            self._closing_channels.add(channel)
            self._partials.pop(channel, None)
        elif name in _CHANNEL_CLOSED_METHODS:
            self.open_channels.discard(channel)
            self._closing_channels.discard(channel)
            self._partials.pop(channel, None)
        elif name == "connection.close" and sent:
            self.closing = True
        elif name == "connection.close-ok":
            self.closed = True

    def channel_closing(self, channel: int) -> bool:
        """We sent channel.close on ``channel`` and wait for close-ok: events the peer sent
        before it saw our close may still arrive in the same read, and must be discarded."""
        return channel in self._closing_channels

    def partial_body(self, channel: int) -> bytes:
        """The body octets received so far of a content still arriving on ``channel``
        (b"" when none is): what a cut 0-9 file.stage leaves for a later resume."""
        partial = self._partials.get(channel)
        return b"".join(partial.chunks) if partial is not None else b""

    def _discarding(self, channel: int) -> bool:
        return self.closing or channel in self._closing_channels

    def _out_of_sequence(self, text: str, method: Method | None = None) -> errors.AMQPError:
        """The error of a frame out of sequence (content without its method, a method in the
        middle of content): 505 unexpected-frame, the code of 0-9-1 that the broker gives in
        0-9 and 0-8 too, as RabbitMQ does; the 0-10 draft has no 505 and names an invalid
        sequence of frames 503 command-invalid."""
        draft = self.spec is not None and self.spec.has_request_frames
        return _error(503 if draft else 505, text, method)

    def _header_frame(self, channel: int, payload: bytes) -> Event | None:
        partial = self._partials.get(channel)
        if partial is None or partial.properties is not None:
            if self._discarding(channel):
                return None
            raise self._out_of_sequence(
                f"content header on channel {channel} without a content method"
            )
        if len(payload) < 14:
            raise _error(502, "content header truncated", partial.method)
        class_id, _weight, size = _CONTENT_HEADER.unpack_from(payload, 0)
        if class_id != partial.method.CLASS_ID:
            raise self._out_of_sequence(
                f"content header of class {class_id} after {partial.method.NAME}",
                partial.method,
            )
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
            received = ContentReceived(channel, partial.method, properties, b"")
            return received if partial.wrap is None else partial.wrap(received)
        partial.properties = properties
        partial.size = size
        if self.max_body_size is not None and size > self.max_body_size:
            partial.skip = True
        return None

    def _body_frame(self, channel: int, payload: bytes) -> Event | None:
        partial = self._partials.get(channel)
        if partial is None or partial.properties is None:
            if self._discarding(channel):
                return None
            raise self._out_of_sequence(
                f"content body on channel {channel} without a content header"
            )
        if not payload and self.spec is not None and self.spec.version != (0, 9, 1):
            # 0-9's cancel frame (rule basic.reject:01): the sender gave up this content.
            del self._partials[channel]
            return None
        partial.received += len(payload)
        if partial.received > partial.size:
            raise _error(
                501,
                f"content body exceeds the {partial.size} bytes its header declared",
                partial.method,
            )
        if partial.received < partial.size:
            if not partial.skip:
                partial.chunks.append(payload)
            return None
        del self._partials[channel]
        if partial.skip:
            assert self.max_body_size is not None
            return ContentTooLarge(channel, partial.method, partial.size, self.max_body_size)
        body = b"".join([*partial.chunks, payload]) if partial.chunks else payload
        received = ContentReceived(channel, partial.method, partial.properties, body)
        return received if partial.wrap is None else partial.wrap(received)
