"""Content assembly: a content-bearing method, its header frame and its body frames into one
``ContentReceived`` event.

``ContentAssembly`` is one of the parts ``Connection`` is made of (see ``connection.py``):
the frame reader hands it the header and body frames, and first offers it the frames that
follow a content-bearing method in the same read, which it assembles at once when they hold
the whole content. Bodies over ``max_body_size`` are counted, not kept.
"""

from __future__ import annotations

from collections.abc import Callable

from . import frames
from .errors import AMQPError, protocol_error
from .events import ContentReceived, ContentTooLarge, Event, MethodReceived
from .life_cycle import ChannelLifeCycle
from .methods import Method
from .properties import Properties

#: Aliases, not imported by name: see ``frames``' docstring.
_CONTENT_HEADER = frames.CONTENT_HEADER
_END_AND_HEAD = frames.END_AND_HEADER
_HEADER_FRAME_AND_FLAGS = frames.HEADER_FRAME_AND_FLAGS

#: Makes the event of a 0-10 draft request or response frame of its method's event.
Wrap = Callable[[MethodReceived | ContentReceived], Event]


class PartialContent:
    """A content-bearing method waiting for its header and body frames."""

    __slots__ = ("method", "properties", "size", "received", "chunks", "skip", "wrap")

    def __init__(self, method: Method, wrap: Wrap | None = None) -> None:
        self.method = method
        #: 0-10 draft: the request or response frame the method came in, whose event is to
        #: wrap the content's.
        self.wrap = wrap
        self.properties: Properties | None = None
        self.size = 0
        self.received = 0
        self.chunks: list[bytes] = []
        self.skip = False  #: the body is over max_body_size: count its frames, keep nothing


class ContentAssembly(ChannelLifeCycle):
    """The contents arriving per channel; content frames on a channel being closed are
    discarded, as its life cycle says."""

    #: Bodies announced larger than this are skipped and reported as ContentTooLarge when
    #: their last frame has arrived (as RabbitMQ closes the channel only then).
    max_body_size: int | None

    def partial_body(self, channel: int) -> bytes:
        """The body octets received so far of a content still arriving on ``channel``
        (b"" when none is): what a cut 0-9 file.stage leaves for a later resume."""
        partial = self._partials.get(channel)
        return b"".join(partial.chunks) if partial is not None else b""

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
            except AMQPError as err:
                raise err.with_culprit(method.CLASS_ID, method.METHOD_ID) from None
        return ContentReceived(channel, method, properties, body), after

    def _header_frame(self, channel: int, payload: bytes) -> Event | None:
        partial = self._partials.get(channel)
        if partial is None or partial.properties is not None:
            if self._discarding(channel):
                return None
            raise self._out_of_sequence(
                f"content header on channel {channel} without a content method"
            )
        if len(payload) < 14:
            raise protocol_error(502, "content header truncated", partial.method)
        class_id, _weight, size = _CONTENT_HEADER.unpack_from(payload, 0)
        if class_id != partial.method.CLASS_ID:
            raise self._out_of_sequence(
                f"content header of class {class_id} after {partial.method.NAME}",
                partial.method,
            )
        assert self.spec is not None
        props_cls = self.spec.properties_by_id(class_id)
        if props_cls is None:
            raise protocol_error(503, f"class {class_id} has no content properties", partial.method)
        try:
            properties = props_cls.decode(payload, 12)
        except AMQPError as err:
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
            raise protocol_error(
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
