"""Frame layout: type octet, channel short, size long, payload, frame-end octet (0xCE).

The frame types are 0-9's (method, header, body, out-of-band, trace, heartbeat) and the
0-10 draft's request and response frames, which wrap a method in ids (``REQUEST_IDS``).

The frame reader, the frame writer and content assembly use the layouts as module globals of
their own (``_FRAME_HEAD = frames.FRAME_HEADER``), not imported by name: CPython 3.11 compiles
``name.pack(...)`` of a name bound by ``from ... import`` as an attribute load and a call, not
LOAD_METHOD, so each call makes a bound method (measured under callgrind: 1,400 more
instructions per encoded or decoded message in ``benchmarks.before_after``'s codec counts, 2%
more per published message in ``benchmarks.broker_work``).

Also the broker's fast path for a delivery, ``deliver_frames``: basic.deliver and its content
built from pieces encoded once per message, the bytes ``Connection.send_content`` gives.
"""

from __future__ import annotations

import struct

from .generated.spec_0_9_1 import BasicDeliver

FRAME_HEADER = struct.Struct(">BHI")
#: The frame-end octet of one frame followed by the header of the next.
END_AND_HEADER = struct.Struct(">BBHI")
FRAME_END = 0xCE
FRAME_END_BYTE = b"\xce"
#: Bytes a frame adds around its payload (7 of header, 1 frame-end).
FRAME_OVERHEAD = 8
#: What a frame-max of 0 ("no limit") means on the wire.
NO_FRAME_LIMIT = 2**32 - 1

METHOD = 1
HEADER = 2
BODY = 3
OOB_METHOD = 4
OOB_HEADER = 5
OOB_BODY = 6
TRACE = 7
HEARTBEAT = 8
#: The 0-10 draft's frame-request and frame-response (see ``REQUEST_IDS``).
REQUEST = 9
RESPONSE = 10

#: What a 0-10 draft frame-request or frame-response carries before its method (class-id,
#: method-id, arguments, as in a method frame): a request holds request-id (longlong),
#: response-mark (longlong) and a reserved long (0); a response holds response-id
#: (longlong), request-id (longlong) and batch-offset (long). The draft names the two frame
#: types without a layout; this is the layout of Qpid's implementation of that framing
#: (docs/protocol-0-10.md).
REQUEST_IDS = struct.Struct(">QQI")

#: A method frame's payload starts with its class-id and method-id.
METHOD_IDS = struct.Struct(">HH")
#: A content header frame's payload up to its property flags: class-id, weight, body size.
CONTENT_HEADER = struct.Struct(">HHQ")
#: A content header frame's header followed by the class-id, weight and body size of its
#: payload.
HEADER_FRAME_HEAD = struct.Struct(">BHIHHQ")
#: The same followed by the first property-flags word.
HEADER_FRAME_AND_FLAGS = struct.Struct(">BHIHHQH")

#: frame-min-size of every spec: the frame-max before tuning and the least one may tune to.
FRAME_MIN_SIZE = 4096

HEARTBEAT_FRAME = FRAME_HEADER.pack(HEARTBEAT, 0, 0) + FRAME_END_BYTE


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


#: basic.deliver's class and method ids: the same in every version.
_DELIVER_IDS = METHOD_IDS.pack(BasicDeliver.CLASS_ID, BasicDeliver.METHOD_ID)
_TAG_AND_REDELIVERED = struct.Struct(">QB")
#: class/method ids, delivery tag and redelivered: what basic.deliver adds to its strings
_DELIVER_FIXED = len(_DELIVER_IDS) + _TAG_AND_REDELIVERED.size


def deliver_frames(
    out: list[bytes],
    channel: int,
    consumer_tag: bytes,
    delivery_tag: int,
    redelivered: bool,
    envelope: bytes,
    header: bytes,
    body: bytes,
    frame_max: int,
) -> int:
    """Append the frames of one basic.deliver to ``out`` (as parts, joined when the
    connection writes); returns the bytes appended. ``consumer_tag`` is encoded as a short
    string, ``envelope`` is exchange and routing key as two short strings, ``header`` the
    content header's payload: what does not depend on the consumer is encoded once."""
    method_size = _DELIVER_FIXED + len(consumer_tag) + len(envelope)
    header_size = len(header)
    body_size = len(body)
    method_parts = (
        FRAME_HEADER.pack(METHOD, channel, method_size),
        _DELIVER_IDS,
        consumer_tag,
        _TAG_AND_REDELIVERED.pack(delivery_tag, redelivered),
        envelope,
        END_AND_HEADER.pack(FRAME_END, HEADER, channel, header_size),
        header,
    )
    if 0 < body_size <= frame_max - FRAME_OVERHEAD:
        out += method_parts
        out += (END_AND_HEADER.pack(FRAME_END, BODY, channel, body_size), body, FRAME_END_BYTE)
        return method_size + header_size + body_size + 24  # three frames of 8 octets overhead
    out += method_parts
    out.append(FRAME_END_BYTE)
    if not body_size:
        return method_size + header_size + 16
    chunks = encode_body_frames(channel, body, frame_max)
    out += chunks
    return method_size + header_size + body_size + 16 + 8 * len(chunks) // 3
