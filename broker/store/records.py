"""The journal's byte format: segment headers and checksummed records.

Everything is little-endian. A segment file starts with a 16-byte header::

    magic  8s  b"ASPKJRNL"
    version u32  FORMAT_VERSION (the version of the segment's records)
    number  u32  the segment's sequence number (also its file name)

then records, each::

    length u32  bytes of payload that follow the 8-byte record header
    crc    u32  CRC-32 (zlib) of the payload
    payload:  kind u8, then by kind
      PUBLISH  msg_id u64, nqueues u16, class_id u16, published_ms u64, nkeys u16,
               queue_id u32 * nqueues, BCC key (shortstr) * nkeys,
               message bytes (the rest)
      ACK      queue_id u32, count u32, msg_id u64 * count
      MOVED    as PUBLISH: a live message compaction copied out of an older segment, with
               its original id and publish time and the queues that still held it

Version 4 segments are laid out as version 3 ones (format 4 added the data directory's
delivery log, ``deliveries.py``). Version 2 segments have no ``published_ms``, ``nkeys`` nor
keys in PUBLISH, and no MOVED; version 1 segments have no ``class_id`` either (their
messages are all basic ones).

See docs/storage-format.md for the rules that go with it.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from typing import NamedTuple

FORMAT_VERSION = 4
SEGMENT_MAGIC = b"ASPKJRNL"

SEGMENT_HEADER = struct.Struct("<8sII")
RECORD_HEADER = struct.Struct("<II")
#: kind, msg_id, nqueues, class_id, published_ms, nkeys
PUBLISH_HEAD = struct.Struct("<BQHHQH")
#: PUBLISH of format version 2: no publish time, no BCC keys.
PUBLISH_HEAD_V2 = struct.Struct("<BQHH")
#: PUBLISH of format version 1: no content class either.
PUBLISH_HEAD_V1 = struct.Struct("<BQH")
ACK_HEAD = struct.Struct("<BII")

#: The content class of a basic message (AMQP class id); other classes' messages are the
#: AMQP 0-9 file (70) and message (120) classes' (see broker.server.spec09.lane_queue).
BASIC_CLASS = 60

PUBLISH = 1
ACK = 2
MOVED = 3

#: A record location packs the segment number and the record's offset in that segment.
OFFSET_BITS = 32


class JournaledMessage(NamedTuple):
    """What a PUBLISH (or MOVED) record holds besides its id and queues."""

    class_id: int
    #: the message bytes of its class (``message_codec``)
    message: bytes
    #: wall-clock milliseconds since the epoch when it was journaled; 0: not recorded
    #: (formats 1 and 2)
    published_ms: int = 0
    #: the keys of the ``BCC`` header it was published with
    blind_keys: tuple[str, ...] = ()


def publish_head(version: int) -> struct.Struct:
    """The fixed head of a PUBLISH payload in a segment of format ``version``."""
    if version == 1:
        return PUBLISH_HEAD_V1
    return PUBLISH_HEAD_V2 if version == 2 else PUBLISH_HEAD


def location(segment: int, offset: int) -> int:
    return (segment << OFFSET_BITS) | offset


def split_location(loc: int) -> tuple[int, int]:
    return loc >> OFFSET_BITS, loc & ((1 << OFFSET_BITS) - 1)


def segment_header(number: int) -> bytes:
    return SEGMENT_HEADER.pack(SEGMENT_MAGIC, FORMAT_VERSION, number)


def _frame(payload: bytes) -> bytes:
    return RECORD_HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def publish_record(
    msg_id: int, queue_ids: Sequence[int], message: JournaledMessage, kind: int = PUBLISH
) -> bytes:
    """A PUBLISH record (or with ``kind`` MOVED, its copy by compaction)."""
    keys = message.blind_keys
    head = PUBLISH_HEAD.pack(
        kind, msg_id, len(queue_ids), message.class_id, message.published_ms, len(keys)
    )
    parts = [head, struct.pack(f"<{len(queue_ids)}I", *queue_ids)]
    for key in keys:
        encoded = key.encode("utf-8", "surrogateescape")
        parts += (bytes((len(encoded),)), encoded)
    parts.append(message.message)
    return _frame(b"".join(parts))


def ack_record(queue_id: int, msg_ids: Sequence[int]) -> bytes:
    head = ACK_HEAD.pack(ACK, queue_id, len(msg_ids))
    return _frame(head + struct.pack(f"<{len(msg_ids)}Q", *msg_ids))


def publish_queue_ids(payload: bytes | memoryview, version: int) -> tuple[int, ...]:
    """The queue ids of a PUBLISH (or MOVED) payload of a segment of format ``version``."""
    head = publish_head(version)
    nqueues = head.unpack_from(payload, 0)[2]
    return struct.unpack_from(f"<{nqueues}I", payload, head.size)


def publish_message(payload: bytes | memoryview, version: int) -> JournaledMessage:
    """The message of a PUBLISH (or MOVED) payload of a segment of format ``version``."""
    head = publish_head(version)
    fields = head.unpack_from(payload, 0)
    pos = head.size + 4 * fields[2]
    if version == 1:
        return JournaledMessage(BASIC_CLASS, bytes(payload[pos:]))
    if version == 2:
        return JournaledMessage(fields[3], bytes(payload[pos:]))
    keys = []
    for _ in range(fields[5]):
        end = pos + 1 + payload[pos]
        keys.append(bytes(payload[pos + 1 : end]).decode("utf-8", "surrogateescape"))
        pos = end
    return JournaledMessage(fields[3], bytes(payload[pos:]), fields[4], tuple(keys))


def iter_publishes(data: bytes, version: int) -> Iterator[tuple[int, int, memoryview]]:
    """(kind, msg id, payload) of each PUBLISH and MOVED record of a whole segment file of
    format ``version`` whose records are intact (recovery checked them, or this broker wrote
    them); ValueError if one's checksum no longer matches."""
    view = memoryview(data)
    pos = SEGMENT_HEADER.size
    head = publish_head(version)
    while pos + RECORD_HEADER.size <= len(data):
        length, crc = RECORD_HEADER.unpack_from(data, pos)
        start = pos + RECORD_HEADER.size
        pos = start + length
        kind = data[start]
        if kind in (PUBLISH, MOVED):
            payload = view[start:pos]
            if zlib.crc32(payload) != crc:
                raise ValueError(f"record at offset {start - RECORD_HEADER.size} changed on disk")
            yield kind, head.unpack_from(payload, 0)[1], payload
