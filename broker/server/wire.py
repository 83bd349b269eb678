"""Hand-built frames for the hot path: basic.deliver with its content.

Everything per message that does not depend on the consumer (content header, exchange and
routing key) is encoded once and cached on the message.
"""

from __future__ import annotations

import struct

from amqp_protocol.frames import FRAME_HEADER, encode_body_frames

from ..model.message import Message

_DELIVER_IDS = struct.pack(">HH", 60, 60)
_TAG_AND_REDELIVERED = struct.Struct(">QB")
#: class/method ids, delivery tag and redelivered: what basic.deliver adds to its strings
_DELIVER_FIXED = len(_DELIVER_IDS) + _TAG_AND_REDELIVERED.size
_METHOD, _HEADER, _BODY = 1, 2, 3
_END = b"\xce"
#: The frame-end octet of one frame and the header of the next.
_END_AND_HEAD = struct.Struct(">BBHI")
_FRAME_END = 0xCE


def deliver_frames(
    out: list[bytes],
    channel: int,
    consumer_tag: bytes,
    delivery_tag: int,
    redelivered: bool,
    message: Message,
    frame_max: int,
) -> int:
    """Append the frames of one basic.deliver to ``out`` (as parts, joined when the
    connection writes); returns the bytes appended. ``consumer_tag`` is already encoded as
    a short string."""
    envelope = message.envelope
    header = message.header_payload
    body = message.body
    method_size = _DELIVER_FIXED + len(consumer_tag) + len(envelope)
    header_size = len(header)
    body_size = len(body)
    method_parts = (
        FRAME_HEADER.pack(_METHOD, channel, method_size),
        _DELIVER_IDS,
        consumer_tag,
        _TAG_AND_REDELIVERED.pack(delivery_tag, redelivered),
        envelope,
        _END_AND_HEAD.pack(_FRAME_END, _HEADER, channel, header_size),
        header,
    )
    if 0 < body_size <= frame_max - 8:
        out += method_parts
        out += (_END_AND_HEAD.pack(_FRAME_END, _BODY, channel, body_size), body, _END)
        return method_size + header_size + body_size + 24
    out += method_parts
    out.append(_END)
    if not body_size:
        return method_size + header_size + 16
    chunks = encode_body_frames(channel, body, frame_max)
    out += chunks
    return method_size + header_size + body_size + 16 + 8 * len(chunks) // 3
