"""Deliveries as columns: a consumer's basic.deliver contents read in runs, without a method,
a properties object or an event per message (``DeliveriesReceived``).

``DeliveryRuns`` is one of the parts ``Connection`` is made of (see ``connection.py``). A
client asks for it per channel (``deliver_as_columns``); the frame reader then offers it
every method frame on that channel, and it reads as many deliveries as follow one another
whole in the bytes at hand: each one a basic.deliver frame, a content header frame and one
body frame (or none, for an empty body), all on that channel.

Why it is fast: a consumer's deliveries mostly share everything but their delivery tag and
body (one queue, one consumer, one publisher's properties). The bytes a delivery shares with
the one before it are compared in place (``bytes.startswith`` at an offset), not sliced or
decoded; a delivery that differs is looked up by its encoded form in the run's kinds, and
only a kind not seen before is decoded (by the generated classes, as the frame-by-frame path
decodes it). A delivery costs its frames' headers, its tag and its body's slice.

Anything else (another frame, a body in several frames, a body over ``max_body_size``, bytes
that do not decode) ends the run; the frame-by-frame path reads it, and raises what a faulty
frame deserves. A delivery it assembles on such a channel is reported as a run of one, so
the channel's deliveries all arrive as runs, in order. A run never ends inside a delivery
whose bytes have not all arrived: the reader waits for them (``_wanted``).
"""

from __future__ import annotations

import struct
from typing import Any

from . import frames
from .content_assembly import ContentAssembly
from .errors import AMQPError
from .events import ContentReceived, DeliveriesReceived, DeliveryColumns, DeliveryKind
from .properties import Properties

#: A method frame's header, its class and method ids and its first octet (for basic.deliver,
#: the consumer tag's length).
_METHOD_HEAD = struct.Struct(">BHIHHB")
_TAG = struct.Struct(">Q")
#: Aliases, not imported by name: see ``frames``' docstring.
_HEADER_HEAD = frames.HEADER_FRAME_HEAD
_FRAME_HEAD = frames.FRAME_HEADER
_BASIC = 60
_DELIVER = 60
#: Where a content header frame's properties (flags first) begin, from the frame's start.
_PROPERTIES_AT = 7 + frames.CONTENT_HEADER.size


class DeliveryRuns(ContentAssembly):
    """The channels whose deliveries are read as columns, and the reading of their runs."""

    #: Channels that take their deliveries as ``DeliveriesReceived``; a channel leaves the set
    #: when it closes (see ``life_cycle``).
    columnar: set[int]

    def deliver_as_columns(self, channel: int) -> None:
        """From now on until it closes, report the deliveries on ``channel`` as
        ``DeliveriesReceived`` runs (call it before consuming on the channel)."""
        self.columnar.add(channel)

    def _as_run(self, event: ContentReceived) -> DeliveriesReceived | ContentReceived:
        """A delivery assembled frame by frame on a columnar channel, as a run of one."""
        m: Any = event.method
        if m.CLASS_ID != _BASIC or m.METHOD_ID != _DELIVER:
            return event
        kind = _kind_of(m, event.properties)
        columns = DeliveryColumns([m.delivery_tag], [0], [event.body], [kind], [None])
        return DeliveriesReceived(event.channel, columns)

    def _delivery_run(
        self, data: bytes, pos: int, channel: int, size_limit: int
    ) -> tuple[DeliveriesReceived | None, int, int]:
        """The deliveries on ``channel`` that follow one another whole in ``data`` from the
        method frame at ``pos``: the run (None when the first is not one), the position after
        it, and how many bytes from there must be at hand before reading on (0: read on now;
        the data ended inside a delivery that is still one so far)."""
        if (
            self.closing
            or channel not in self.open_channels
            or channel in self._closing_channels
            or channel in self._partials
        ):
            return None, pos, 0
        tags: list[int] = []
        kinds: list[int] = []
        bodies: list[bytes] = []
        distinct: list[DeliveryKind] = []
        keys: list[bytes | None] = []
        kind_of: dict[bytes, int] = {}
        max_body = self.max_body_size
        n = len(data)
        # The last delivery's kind: its method frame up to the tag, after the tag, and its
        # content header's properties, compared in place with the next one's.
        head = rest = props = b""
        wanted = 0
        while True:
            if n - pos < 12:
                break  # the frame-by-frame path waits for a whole frame
            same_head = bool(head) and data.startswith(head, pos)
            if same_head:
                tag_at = pos + len(head)
                end = tag_at + 8 + len(rest)
            else:
                frame_type, frame_channel, size, class_id, method_id, tag_size = (
                    _METHOD_HEAD.unpack_from(data, pos)
                )
                if (
                    frame_type != frames.METHOD
                    or frame_channel != channel
                    or class_id != _BASIC
                    or method_id != _DELIVER
                    or size > size_limit
                ):
                    break
                tag_at = pos + 12 + tag_size
                end = pos + 7 + size
                if tag_at + 9 > end:  # not even a tag and the redelivered octet
                    break
            header = end + 1
            if n - header < _PROPERTIES_AT + 2:
                wanted = header + _PROPERTIES_AT + 2 - pos
                break
            if data[end] != frames.FRAME_END:
                break
            frame_type, frame_channel, size, class_id, _weight, body_size = (
                _HEADER_HEAD.unpack_from(data, header)
            )
            header_end = header + 7 + size
            if (
                frame_type != frames.HEADER
                or frame_channel != channel
                or class_id != _BASIC
                or not 14 <= size <= size_limit
                or (max_body is not None and body_size > max_body)
                or body_size > size_limit
            ):
                break
            after = header_end + 1 + (8 + body_size if body_size else 0)
            if after > n:
                wanted = after - pos
                break
            if data[header_end] != frames.FRAME_END:
                break
            if body_size:
                frame_type, frame_channel, size = _FRAME_HEAD.unpack_from(data, header_end + 1)
                if (
                    frame_type != frames.BODY
                    or frame_channel != channel
                    or size != body_size
                    or data[after - 1] != frames.FRAME_END
                ):
                    break
            same = (
                same_head
                and header_end - header - _PROPERTIES_AT == len(props)
                and data.startswith(rest, tag_at + 8)
                and data.startswith(props, header + _PROPERTIES_AT)
            )
            if not same:
                head, rest, props = (
                    data[pos:tag_at],
                    data[tag_at + 8 : end],
                    data[header + _PROPERTIES_AT : header_end],
                )
                key = head + rest + props
                found = kind_of.get(key)
                if found is None:
                    decoded = self._kind(data, pos, end, header, header_end)
                    if decoded is None:
                        break
                    found = kind_of[key] = len(distinct)
                    distinct.append(decoded)
                    keys.append(key)
                kind = found
            tags.append(_TAG.unpack_from(data, tag_at)[0])
            kinds.append(kind)
            bodies.append(data[header_end + 8 : after - 1] if body_size else b"")
            pos = after
        if not tags:
            return None, pos, wanted
        columns = DeliveryColumns(tags, kinds, bodies, distinct, keys)
        return DeliveriesReceived(channel, columns), pos, wanted

    def _kind(
        self, data: bytes, pos: int, end: int, header: int, header_end: int
    ) -> DeliveryKind | None:
        """The kind of the delivery whose method frame starts at ``pos``, decoded as the
        frame-by-frame path decodes it; None when it does not decode (that path then reads
        it and raises its error)."""
        assert self.spec is not None
        method_class = self.spec.method_by_id(_BASIC, _DELIVER)
        properties_class = self.spec.properties_by_id(_BASIC)
        if method_class is None or properties_class is None:
            return None
        try:
            method, method_end = method_class.decode(data[pos + 7 : end], 4)
            properties: Properties = properties_class.decode(data[header + 7 : header_end], 12)
        except AMQPError:
            return None
        if method_end != end - pos - 7:
            return None
        return _kind_of(method, properties)


def _kind_of(deliver: Any, properties: Properties) -> DeliveryKind:
    """The kind of a delivery: its basic.deliver but the tag, and its properties."""
    return DeliveryKind(
        deliver.consumer_tag, deliver.redelivered, deliver.exchange, deliver.routing_key, properties
    )
