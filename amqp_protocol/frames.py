"""Frame layout: type octet, channel short, size long, payload, frame-end octet (0xCE)."""

from __future__ import annotations

import struct

FRAME_HEADER = struct.Struct(">BHI")
FRAME_END = 0xCE
FRAME_END_BYTE = b"\xce"
#: Bytes a frame adds around its payload (7 of header, 1 frame-end).
FRAME_OVERHEAD = 8

METHOD = 1
HEADER = 2
BODY = 3
OOB_METHOD = 4
OOB_HEADER = 5
OOB_BODY = 6
TRACE = 7
HEARTBEAT = 8

#: frame-min-size of every spec: the frame-max before tuning and the least one may tune to.
FRAME_MIN_SIZE = 4096

HEARTBEAT_FRAME = FRAME_HEADER.pack(HEARTBEAT, 0, 0) + FRAME_END_BYTE


def encode_frame(frame_type: int, channel: int, payload: bytes) -> bytes:
    return FRAME_HEADER.pack(frame_type, channel, len(payload)) + payload + FRAME_END_BYTE


def encode_body_frames(channel: int, body: bytes, frame_max: int) -> list[bytes]:
    """Body frames for ``body``, each at most ``frame_max`` bytes on the wire."""
    step = frame_max - FRAME_OVERHEAD
    if len(body) <= step:
        return [FRAME_HEADER.pack(BODY, channel, len(body)), body, FRAME_END_BYTE] if body else []
    out: list[bytes] = []
    view = memoryview(body)
    for start in range(0, len(body), step):
        chunk = view[start : start + step]
        out += [FRAME_HEADER.pack(BODY, channel, len(chunk)), chunk.tobytes(), FRAME_END_BYTE]
    return out
