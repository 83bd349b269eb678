"""Contents kept encoded, decoded where they are read.

A client channel may keep its deliveries as the frames they arrived in
(``Connection.keep_deliveries_encoded``): the process that receives them then pays only for
the framing, and another one (a Spark executor) decodes them here, with the same generated
method and property classes as every other path.
"""

from __future__ import annotations

import struct

from . import errors
from .frames import BODY, FRAME_END, HEADER, METHOD
from .methods import Method
from .properties import Properties
from .spec import Spec

#: A method frame's header and the class and method ids its payload starts with.
_METHOD_FRAME_HEAD = struct.Struct(">BHIHH")
#: A content header frame's header, class-id, weight, body size and first property flags.
_HEADER_FRAME_HEAD = struct.Struct(">BHIHHQH")
_FRAME_HEAD = struct.Struct(">BHI")


def decode_contents(spec: Spec, data: bytes) -> list[tuple[Method, Properties, bytes]]:
    """Each content-bearing method in ``data`` (consecutive frames: a method frame, its
    content header frame, its body frames; any channel) as (method, properties, body).

    Raises ``errors.AMQPError`` for bytes that are not such frames; the frames were checked
    when they were received, so that means they were damaged on the way here. One loop
    with no calls but the decoders': an executor decodes a whole micro-batch with it.
    """
    contents: list[tuple[Method, Properties, bytes]] = []
    method_head, header_head, frame_head = (
        _METHOD_FRAME_HEAD.unpack_from,
        _HEADER_FRAME_HEAD.unpack_from,
        _FRAME_HEAD.unpack_from,
    )
    pos, n = 0, len(data)
    try:
        while pos < n:
            frame_type, _, size, class_id, method_id = method_head(data, pos)
            cls = spec.method_by_id(class_id, method_id)
            end = pos + 7 + size
            if frame_type != METHOD or cls is None or not cls.HAS_CONTENT or data[end] != FRAME_END:
                raise _damaged(505, f"no content-bearing method frame at byte {pos}")
            method = cls.decode(data[pos + 7 : end], 4)[0]
            pos = end + 1
            frame_type, _, size, class_id, _, remaining, flags = header_head(data, pos)
            props_cls = spec.properties_by_id(class_id)
            end = pos + 7 + size
            if frame_type != HEADER or props_cls is None or size < 14 or data[end] != FRAME_END:
                raise _damaged(505, f"no content header frame at byte {pos}")
            if size == 14 and flags == 0:  # no properties: nothing to decode
                properties = props_cls.__new__(props_cls)
            else:
                properties = props_cls.decode(data[pos + 7 : end], 12)
            pos = end + 1
            chunks: list[bytes] = []
            while remaining > 0:
                frame_type, _, size = frame_head(data, pos)
                end = pos + 7 + size
                if frame_type != BODY or not 0 < size <= remaining or data[end] != FRAME_END:
                    raise _damaged(505, f"no body frame of at most {remaining} bytes at {pos}")
                chunks.append(data[pos + 7 : end])
                remaining -= size
                pos = end + 1
            body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            contents.append((method, properties, body))
    except (struct.error, IndexError):
        raise _damaged(502, f"a frame cut at byte {pos}") from None
    return contents


def _damaged(code: int, what: str) -> errors.AMQPError:
    return errors.error_for_code(code)(f"encoded contents: {what}")
