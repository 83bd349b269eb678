"""The journal's byte format: segment headers and checksummed records.

Everything is little-endian. A segment file starts with a 16-byte header::

    magic  8s  b"ASPKJRNL"
    version u32  FORMAT_VERSION (the version of the segment's records)
    number  u32  the segment's sequence number (also its file name)

then records, each::

    length u32  bytes of payload that follow the 8-byte record header
    crc    u32  CRC-32 (zlib) of the payload
    payload:  kind u8, then by kind
      PUBLISH  msg_id u64, nqueues u16, class_id u16, queue_id u32 * nqueues,
               message bytes (the rest)
      ACK      queue_id u32, count u32, msg_id u64 * count

Version 1 segments have no ``class_id`` in PUBLISH: their messages are all basic ones.

See docs/storage-format.md for the rules that go with it.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

FORMAT_VERSION = 2
SEGMENT_MAGIC = b"ASPKJRNL"

SEGMENT_HEADER = struct.Struct("<8sII")
RECORD_HEADER = struct.Struct("<II")
PUBLISH_HEAD = struct.Struct("<BQHH")
#: PUBLISH of format version 1: no content class.
PUBLISH_HEAD_V1 = struct.Struct("<BQH")
ACK_HEAD = struct.Struct("<BII")

#: The content class of a basic message (AMQP class id); other classes' messages are the
#: AMQP 0-9 file (70) and message (120) classes' (see broker.server.spec09.lane_queue).
BASIC_CLASS = 60

PUBLISH = 1
ACK = 2

#: A record location packs the segment number and the record's offset in that segment.
OFFSET_BITS = 32


def location(segment: int, offset: int) -> int:
    return (segment << OFFSET_BITS) | offset


def split_location(loc: int) -> tuple[int, int]:
    return loc >> OFFSET_BITS, loc & ((1 << OFFSET_BITS) - 1)


def segment_header(number: int) -> bytes:
    return SEGMENT_HEADER.pack(SEGMENT_MAGIC, FORMAT_VERSION, number)


def _frame(payload: bytes) -> bytes:
    return RECORD_HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def publish_record(
    msg_id: int, queue_ids: Sequence[int], message: bytes, class_id: int = BASIC_CLASS
) -> bytes:
    head = PUBLISH_HEAD.pack(PUBLISH, msg_id, len(queue_ids), class_id)
    return _frame(head + struct.pack(f"<{len(queue_ids)}I", *queue_ids) + message)


def ack_record(queue_id: int, msg_ids: Sequence[int]) -> bytes:
    head = ACK_HEAD.pack(ACK, queue_id, len(msg_ids))
    return _frame(head + struct.pack(f"<{len(msg_ids)}Q", *msg_ids))


def publish_message(payload: bytes | memoryview, version: int) -> tuple[int, bytes]:
    """The content class id and the message bytes of a PUBLISH payload of a segment of format
    ``version``."""
    if version == 1:
        _, _, nqueues = PUBLISH_HEAD_V1.unpack_from(payload, 0)
        return BASIC_CLASS, bytes(payload[PUBLISH_HEAD_V1.size + 4 * nqueues :])
    _, _, nqueues, class_id = PUBLISH_HEAD.unpack_from(payload, 0)
    return class_id, bytes(payload[PUBLISH_HEAD.size + 4 * nqueues :])
