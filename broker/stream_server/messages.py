"""Chunks for the stream protocol: a stored chunk's records as Osiris's chunk of AMQP 1.0
messages (``broker.streams.amqp10_records``, ``amqp_protocol.stream.chunk``), cached per
stream so that subscribers reading the same chunk share one conversion."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from amqp_protocol.stream.chunk import build_chunk

from ..streams.amqp10_records import Amqp10Records
from ..streams.log import Record

#: Converted chunks kept per stream: enough for subscribers reading near each other.
CACHED_CHUNKS = 32


def osiris_chunk(records: Sequence[Record]) -> bytes:
    """The chunk (Osiris's stored form, no bloom filter) of one stored chunk's records."""
    convert = Amqp10Records().convert
    return build_chunk(
        [convert(record.payload) for record in records],
        first_offset=records[0].offset,
        timestamp=records[0].timestamp,
    )


class ChunkCache:
    """The last converted chunks of one stream, by first offset."""

    def __init__(self, size: int = CACHED_CHUNKS) -> None:
        self._size = size
        self._chunks: OrderedDict[int, bytes] = OrderedDict()

    def chunk(self, records: Sequence[Record]) -> bytes:
        """The Osiris chunk of a whole stored chunk's ``records``."""
        first = records[0].offset
        chunk = self._chunks.get(first)
        if chunk is None:
            chunk = self._chunks[first] = osiris_chunk(records)
            if len(self._chunks) > self._size:
                self._chunks.popitem(last=False)
        else:
            self._chunks.move_to_end(first)
        return chunk
