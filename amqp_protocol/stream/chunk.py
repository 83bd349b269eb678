"""RabbitMQ's stream chunk (Osiris's format): build one, parse one, walk its records.

A stream is a log of *chunks*; a chunk is the unit RabbitMQ stores, replicates and
delivers. The layout is Osiris's (``src/osiris_log.erl``, "Chunk format", and
``make_chunk/7``; ``src/osiris.hrl`` for the constants), all integers big-endian:

- a 48-byte header: magic (4 bits, 5) and version (4 bits, 0) in one byte, chunk type
  (u8), number of entries (u16), number of records (u32), timestamp (i64, ms since the
  epoch), epoch (u64), chunk id = the offset of the chunk's first record (u64), CRC-32 of
  the data section (u32), data length (u32), trailer length (u32), bloom filter size (u8),
  3 reserved bytes;
- the bloom filter (``bloom size`` bytes; empty when no message carries a filter value);
- the data section (``data length`` bytes): ``number of entries`` entries, each either a
  *simple* entry (bit 0 = 0, 31-bit size, the record) or a *sub-batch* entry (bit 0 = 1,
  3-bit compression, 4 reserved bits, u16 number of records, u32 uncompressed length, u32
  length, the body: the records as simple entries, compressed as the compression says);
- the trailer (``trailer length`` bytes: the tracking entries of deduplication and
  offset tracking).

The CRC is ``crc32`` (zlib's) of the data section alone (``make_chunk/7``: "checksum is over
entry data only").

**Stored and delivered forms.** The broker stores the whole chunk (:func:`build_chunk`), but
a stream-protocol ``Deliver`` carries the header followed by the data section alone: Osiris's
``send_file`` for a consumer skips the bloom filter and the trailer of a user chunk while
sending the header unchanged (``select_amount_to_send(user_data, ...)``), so the header's
bloom and trailer sizes do not describe the delivered bytes. :func:`delivered_parts` cuts a
stored chunk into what ``Deliver`` sends; :func:`parse_chunk` reads either form.

**Compression.** Sub-batch bodies compressed with gzip (1) are decompressed with the
standard library; snappy (2), lz4 (3), zstd (4) and the user type (7) raise
:class:`UnsupportedCompression` (no stream client this project talks to writes them unless
asked to; the error names the type so a user knows what to turn off).

The record walkers return ``memoryview`` slices of the chunk (no copy), except for the
records of a compressed sub-batch, which are slices of the decompressed body.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Iterable, Sequence
from enum import IntEnum
from typing import NamedTuple

__all__ = [
    "HEADER",
    "MAGIC_VERSION",
    "ChunkError",
    "ChunkHeader",
    "ChunkType",
    "Compression",
    "ParsedChunk",
    "SubBatch",
    "SubBatchEntry",
    "UnsupportedCompression",
    "build_chunk",
    "chunk_records",
    "delivered_parts",
    "encode_sub_batch",
    "parse_chunk",
    "parse_chunk_header",
    "read_sub_batch_entry",
]

#: The chunk header: magic+version, type, entries, records, timestamp, epoch, chunk id
#: (first offset), data CRC, data length, trailer length, bloom size, 3 reserved bytes.
HEADER = struct.Struct(">BBHIqQQIIIB3x")
#: Magic 5 in the high nibble, chunk format version 0 in the low one (``osiris.hrl``).
MAGIC_VERSION = 0x50
_U32 = struct.Struct(">I")
#: A sub-batch entry's header after its first byte: records (u16), uncompressed length
#: (u32), length (u32).
_SUB_BATCH = struct.Struct(">BHII")
_SUB_BATCH_FLAG = 0x80000000
_MAX_SIMPLE_SIZE = 0x7FFFFFFF


class ChunkType(IntEnum):
    """What a chunk's entries are (``osiris.hrl``: ``CHNK_*``)."""

    USER = 0
    TRACKING_DELTA = 1
    TRACKING_SNAPSHOT = 2


class Compression(IntEnum):
    """A sub-batch body's compression (the stream clients' codes; Osiris stores 3 bits)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4
    USER = 7


class ChunkError(ValueError):
    """A chunk that is not in Osiris's format; the message names the field and its value."""


class UnsupportedCompression(ChunkError):
    """A sub-batch compressed with a codec this package does not decode."""

    def __init__(self, code: int) -> None:
        try:
            name = Compression(code).name.lower()
        except ValueError:
            name = "unknown"
        super().__init__(
            f"sub-batch compression {name} ({code}) is not supported: "
            f"only none ({Compression.NONE}) and gzip ({Compression.GZIP}) are"
        )
        self.code = code


class ChunkHeader(NamedTuple):
    """The fields of a chunk header (magic and version checked, reserved bytes dropped)."""

    chunk_type: int
    num_entries: int
    num_records: int
    #: Milliseconds since the epoch (Erlang system time) when the chunk was written.
    timestamp: int
    epoch: int
    #: The chunk id: the offset of the chunk's first record.
    first_offset: int
    crc: int
    data_length: int
    trailer_length: int
    bloom_size: int

    @property
    def next_offset(self) -> int:
        """The offset after the chunk's last record."""
        return self.first_offset + self.num_records

    @property
    def stored_size(self) -> int:
        """The size of the chunk as stored: header, bloom filter, data and trailer."""
        return HEADER.size + self.bloom_size + self.data_length + self.trailer_length

    @property
    def delivered_size(self) -> int:
        """The size of the chunk as ``Deliver`` carries it: header and data."""
        return HEADER.size + self.data_length


class SubBatch(NamedTuple):
    """A sub-batch entry to build: records stored as one entry, optionally compressed."""

    records: Sequence[bytes]
    compression: Compression = Compression.NONE


class SubBatchEntry(NamedTuple):
    """A sub-batch entry as it travels: header fields and the (compressed) body as is.

    What a ``Publish`` of a sub-batch carries; :func:`build_chunk` stores it unchanged.
    """

    compression: int
    num_records: int
    uncompressed_length: int
    body: bytes | memoryview

    def encode(self) -> bytes:
        """The entry: its 11-byte header and its body."""
        head = _SUB_BATCH.pack(
            0x80 | (self.compression << 4),
            self.num_records,
            self.uncompressed_length,
            len(self.body),
        )
        return head + self.body

    def records(self) -> list[memoryview]:
        """The records of the sub-batch (decompressed when gzip)."""
        records: list[memoryview] = []
        _sub_batch_records(memoryview(self.encode()), 0, records)
        return records


def read_sub_batch_entry(data: memoryview, pos: int) -> tuple[SubBatchEntry, int]:
    """The sub-batch entry at ``pos`` of ``data`` (its body a slice of it) and its end."""
    if len(data) - pos < _SUB_BATCH.size:
        raise ChunkError(f"data ends at byte {pos} inside a sub-batch header")
    flags, count, uncompressed, length = _SUB_BATCH.unpack_from(data, pos)
    start = pos + _SUB_BATCH.size
    if start + length > len(data):
        raise ChunkError(
            f"sub-batch at byte {pos} is {length} bytes: only {len(data) - start} are left"
        )
    entry = SubBatchEntry((flags >> 4) & 0x7, count, uncompressed, data[start : start + length])
    return entry, start + length


def parse_chunk_header(buf: bytes | bytearray | memoryview, offset: int = 0) -> ChunkHeader:
    """The header of the chunk at ``offset`` of ``buf``; :class:`ChunkError` if it is not one."""
    if len(buf) - offset < HEADER.size:
        raise ChunkError(f"chunk header needs {HEADER.size} bytes, got {max(len(buf) - offset, 0)}")
    magic_version, *fields = HEADER.unpack_from(buf, offset)
    if magic_version != MAGIC_VERSION:
        raise ChunkError(
            f"chunk magic/version byte is 0x{magic_version:02x}: expected 0x{MAGIC_VERSION:02x}"
            " (magic 5, version 0)"
        )
    return ChunkHeader(*fields)


class ParsedChunk(NamedTuple):
    """A parsed chunk: its header and its data section (a slice of the parsed buffer)."""

    header: ChunkHeader
    data: memoryview

    def records(self) -> list[memoryview]:
        """Every record of the chunk, in offset order (see :func:`chunk_records`)."""
        return chunk_records(self.data, self.header.num_entries)

    def check_crc(self) -> None:
        """Raise :class:`ChunkError` unless the data section's CRC-32 is the header's."""
        crc = zlib.crc32(self.data)
        if crc != self.header.crc:
            raise ChunkError(
                f"chunk {self.header.first_offset}: data CRC-32 is 0x{crc:08x},"
                f" the header says 0x{self.header.crc:08x}"
            )


def parse_chunk(
    buf: bytes | bytearray | memoryview, *, stored: bool = False, check_crc: bool = False
) -> ParsedChunk:
    """Parse the chunk that fills ``buf``: delivered (header + data) or ``stored`` (all of it).

    The data section is a ``memoryview`` of ``buf``: nothing is copied. ``check_crc``
    verifies the data's CRC-32 (a pass over the data; the connection already checks the
    frame sizes, so readers may leave it off on the hot path).
    """
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    header = parse_chunk_header(view)
    start = HEADER.size + (header.bloom_size if stored else 0)
    expected = header.stored_size if stored else header.delivered_size
    if len(view) != expected:
        form = "stored" if stored else "delivered"
        raise ChunkError(
            f"chunk {header.first_offset} is {len(view)} bytes: its header says {expected}"
            f" as {form} (data length {header.data_length})"
        )
    chunk = ParsedChunk(header, view[start : start + header.data_length])
    if check_crc:
        chunk.check_crc()
    return chunk


def chunk_records(data: memoryview, num_entries: int) -> list[memoryview]:
    """The records of a data section of ``num_entries`` entries, as slices of it.

    Simple entries give one record each; a sub-batch gives its records (slices of the
    decompressed body when compressed). The data must hold exactly the entries.
    """
    records: list[memoryview] = []
    append = records.append
    unpack = _U32.unpack_from
    end = len(data)
    pos = 0
    for _ in range(num_entries):
        if end - pos < 4:
            raise ChunkError(f"chunk data ends at byte {pos} inside an entry header")
        (size,) = unpack(data, pos)
        if size & _SUB_BATCH_FLAG:
            pos = _sub_batch_records(data, pos, records)
            continue
        pos += 4
        if pos + size > end:
            raise ChunkError(
                f"chunk entry at byte {pos - 4} is {size} bytes: only {end - pos} are left"
            )
        append(data[pos : pos + size])
        pos += size
    if pos != end:
        raise ChunkError(f"chunk data has {end - pos} bytes after its {num_entries} entries")
    return records


def _sub_batch_records(data: memoryview, pos: int, records: list[memoryview]) -> int:
    """Append the records of the sub-batch entry at ``pos`` to ``records``; its end."""
    entry, end = read_sub_batch_entry(data, pos)
    body = entry.body if isinstance(entry.body, memoryview) else memoryview(entry.body)
    if entry.compression == Compression.GZIP:
        body = memoryview(_gunzip(body, entry.uncompressed_length, pos))
    elif entry.compression != Compression.NONE:
        raise UnsupportedCompression(entry.compression)
    records += chunk_records(body, entry.num_records)
    return end


def _gunzip(body: memoryview, uncompressed: int, pos: int) -> bytes:
    try:
        plain = zlib.decompress(body, wbits=31)
    except zlib.error as exc:
        raise ChunkError(f"gzip sub-batch at byte {pos} does not decompress: {exc}") from None
    if len(plain) != uncompressed:
        raise ChunkError(
            f"gzip sub-batch at byte {pos} decompresses to {len(plain)} bytes:"
            f" its header says {uncompressed}"
        )
    return plain


def encode_sub_batch(batch: SubBatch) -> bytes:
    """A sub-batch entry: its 11-byte header and its (compressed) body.

    This is also the form of a sub-batched message of the stream protocol's ``Publish``.
    """
    plain = b"".join(_simple_entry(record) for record in batch.records)
    if batch.compression == Compression.GZIP:
        body = gzip.compress(plain, mtime=0)
    elif batch.compression == Compression.NONE:
        body = plain
    else:
        raise UnsupportedCompression(batch.compression)
    if len(batch.records) > 0xFFFF:
        raise ChunkError(f"a sub-batch holds at most 65535 records: got {len(batch.records)}")
    head = _SUB_BATCH.pack(
        0x80 | (batch.compression << 4), len(batch.records), len(plain), len(body)
    )
    return head + body


def _simple_entry(record: bytes | memoryview) -> bytes:
    if len(record) > _MAX_SIMPLE_SIZE:
        raise ChunkError(f"a record is at most {_MAX_SIMPLE_SIZE} bytes: got {len(record)}")
    return _U32.pack(len(record)) + bytes(record)


def build_chunk(
    entries: Iterable[bytes | memoryview | SubBatch | SubBatchEntry],
    *,
    first_offset: int,
    timestamp: int,
    epoch: int = 1,
    chunk_type: ChunkType = ChunkType.USER,
    bloom: bytes = b"",
    trailer: bytes = b"",
) -> bytes:
    """A chunk in its stored form, as Osiris's ``make_chunk/7`` writes it.

    ``entries`` are records (simple entries), :class:`SubBatch` es to encode or
    :class:`SubBatchEntry` s as published; ``first_offset`` is
    the offset of the first record, ``timestamp`` milliseconds since the epoch. ``bloom``
    is the bloom filter as stored (empty when no entry has a filter value) and ``trailer``
    the tracking entries.
    """
    parts: list[bytes] = []
    num_entries = 0
    num_records = 0
    for entry in entries:
        num_entries += 1
        if isinstance(entry, SubBatch):
            parts.append(encode_sub_batch(entry))
            num_records += len(entry.records)
        elif isinstance(entry, SubBatchEntry):
            parts.append(entry.encode())
            num_records += entry.num_records
        else:
            parts.append(_simple_entry(entry))
            num_records += 1
    if num_entries > 0xFFFF:
        raise ChunkError(f"a chunk holds at most 65535 entries: got {num_entries}")
    if len(bloom) > 0xFF:
        raise ChunkError(f"a chunk's bloom filter is at most 255 bytes: got {len(bloom)}")
    data = b"".join(parts)
    header = HEADER.pack(
        MAGIC_VERSION,
        chunk_type,
        num_entries,
        num_records,
        timestamp,
        epoch,
        first_offset,
        zlib.crc32(data),
        len(data),
        len(trailer),
        len(bloom),
    )
    return b"".join((header, bloom, data, trailer))


def delivered_parts(stored: bytes | memoryview) -> tuple[memoryview, memoryview]:
    """The header and the data section of a stored chunk: what ``Deliver`` sends of it.

    Two slices of ``stored`` (no copy), for a vectored write after the frame header.
    """
    view = stored if isinstance(stored, memoryview) else memoryview(stored)
    header = parse_chunk_header(view)
    start = HEADER.size + header.bloom_size
    return view[: HEADER.size], view[start : start + header.data_length]
