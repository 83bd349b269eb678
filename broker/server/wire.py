"""Hand-built frames for the hot path: basic.deliver with its content.

Everything per message that does not depend on the consumer (content header, exchange and
routing key) is encoded once and cached on the message.
"""

from __future__ import annotations

import struct

from amqp_spark.protocol.frames import FRAME_HEADER, encode_body_frames

from ..model.message import Message

_DELIVER_IDS = struct.pack(">HH", 60, 60)
_TAG = struct.Struct(">Q")
_REDELIVERED = (b"\x00", b"\x01")
_METHOD, _HEADER, _BODY = 1, 2, 3
_END = b"\xce"


def deliver_frames(
    out: list[bytes],
    channel: int,
    consumer_tag: bytes,
    delivery_tag: int,
    redelivered: bool,
    message: Message,
    frame_max: int,
) -> int:
    """Append the frames of one basic.deliver to ``out``; returns the bytes appended.
    ``consumer_tag`` is already encoded as a short string."""
    payload = b"".join(
        (
            _DELIVER_IDS,
            consumer_tag,
            _TAG.pack(delivery_tag),
            _REDELIVERED[redelivered],
            message.envelope,
        )
    )
    header = message.header_payload
    body = message.body
    pack = FRAME_HEADER.pack
    if len(body) <= frame_max - 8:
        out.append(
            b"".join(
                (
                    pack(_METHOD, channel, len(payload)),
                    payload,
                    _END,
                    pack(_HEADER, channel, len(header)),
                    header,
                    _END,
                    pack(_BODY, channel, len(body)) if body else b"",
                    body,
                    _END if body else b"",
                )
            )
        )
        return len(payload) + len(header) + len(body) + 24
    chunks = [
        pack(_METHOD, channel, len(payload)),
        payload,
        _END,
        pack(_HEADER, channel, len(header)),
        header,
        _END,
    ]
    chunks += encode_body_frames(channel, body, frame_max)
    out.extend(chunks)
    return len(payload) + len(header) + len(body) + 16 + 8 * (len(chunks) - 6) // 3
