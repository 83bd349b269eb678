"""The storage of a stream queue: an append-only, segmented log of records in a directory.

No asyncio and no AMQP here: a record is an offset, a timestamp and opaque bytes. The on-disk
format is described in ``broker/streams/README.md``; in short:

* ``<first offset, 20 digits>.segment``: a 16-byte header (magic ``AMQPSTRM``, format
  version), then chunks. A chunk is what one ``append`` wrote: a 28-byte header (first
  offset, timestamp in ms, record count, data size, CRC32 of header and data), then the
  data: since version 2 the chunk's filter (a u8 length and its bytes, opaque here: see
  ``chunk_filter.py``), then the records, each a u32 length and its bytes. Offsets are
  dense across chunks and segments. A version 1 segment (no filters) is still read, its
  chunks having an empty filter; the next append after opening one starts a new segment.
* ``<first offset>.index``: a 16-byte header (magic ``AMQPSIDX``, version), then one
  24-byte entry per chunk (first offset, file position, timestamp; little-endian int64).
  The index is sparse (per chunk, not per record) and can always be rebuilt from the
  segment; entries not yet written when the process died are recovered by scanning the
  segment from the last indexed chunk.

A segment is sealed (fsynced, never written again) when it reaches ``max_segment_bytes``
and the next append starts a new one. Retention drops whole sealed segments, oldest first.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
import sys
import time
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger(__name__)

FORMAT_VERSION = 2
#: The first version whose chunks carry a filter.
FILTERS_SINCE = 2
SEGMENT_MAGIC = b"AMQPSTRM"
INDEX_MAGIC = b"AMQPSIDX"
#: RabbitMQ's default for ``x-stream-max-segment-size-bytes``.
DEFAULT_MAX_SEGMENT_BYTES = 500_000_000

_FILE_HEADER = struct.Struct(">8sI4x")  # magic, format version, reserved
_CHUNK_HEADER = struct.Struct(">QqIII")  # first offset, timestamp ms, records, data size, crc
_CHUNK_CRC_AT = _CHUNK_HEADER.size - 4
_RECORD_LENGTH = struct.Struct(">I")
_INDEX_ENTRY_BYTES = 24  # three int64: first offset, position, timestamp
#: Index entries are written to the index file in batches of this many (and on sync/close).
_INDEX_WRITE_BATCH = 256


class Record(NamedTuple):
    offset: int
    timestamp: int  #: milliseconds since the epoch, shared by the records of one chunk
    payload: bytes


class LogError(Exception):
    """The log's files cannot be used; the message names the path."""


class UnsupportedFormat(LogError):
    """A file was written by a newer version of the format than this code reads."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _encode_records(payloads: Sequence[bytes]) -> bytes:
    pack = _RECORD_LENGTH.pack
    parts: list[bytes] = []
    for p in payloads:
        parts.append(pack(len(p)))
        parts.append(p)
    return b"".join(parts)


def _decode_records(data: bytes, first: int, timestamp: int, skip_below: int) -> list[Record]:
    records: list[Record] = []
    pos, offset, end = 0, first, len(data)
    unpack = _RECORD_LENGTH.unpack_from
    while pos < end:
        (n,) = unpack(data, pos)
        pos += 4
        if offset >= skip_below:
            records.append(Record(offset, timestamp, data[pos : pos + n]))
        pos += n
        offset += 1
    return records


def _chunk_crc(header_without_crc: bytes, data: bytes) -> int:
    return zlib.crc32(data, zlib.crc32(header_without_crc))


def _write_all(fd: int, data: bytes, position: int = 0) -> None:
    """Write all of ``data`` at ``position`` (not at the file offset: a segment reopened by
    recovery has its offset at 0)."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view = view[written:]
        position += written


def _check_file_header(path: Path, header: bytes, magic: bytes) -> int:
    """The file's format version, once its magic is right and the version not too new."""
    if len(header) < _FILE_HEADER.size:
        raise LogError(f"{path}: truncated file header")
    found_magic, version = _FILE_HEADER.unpack(header[: _FILE_HEADER.size])
    if found_magic != magic:
        raise LogError(f"{path}: not a stream log file (magic {found_magic!r}, expected {magic!r})")
    if version > FORMAT_VERSION:
        raise UnsupportedFormat(
            f"{path}: stream log format version {version} is newer than the version this "
            f"broker reads ({FORMAT_VERSION}); upgrade the broker to open it"
        )
    return int(version)


def _segment_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class _Segment:
    """One segment file, its index in memory (parallel arrays, one slot per chunk) and the
    index entries not yet written to its index file."""

    def __init__(self, directory: Path, base_offset: int) -> None:
        self.base_offset = base_offset
        self.path = directory / _segment_name(base_offset, ".segment")
        self.index_path = directory / _segment_name(base_offset, ".index")
        self.offsets = array("q")
        self.positions = array("q")
        self.timestamps = array("q")
        self.size = 0
        self.next_offset = base_offset
        self.indexed = 0  #: how many chunks the index file holds
        self.version = FORMAT_VERSION  #: of the segment file (its chunks' layout)
        self.fd = -1
        self.index_fd = -1

    # -- creation and recovery ----------------------------------------------------------------

    def create(self) -> None:
        header = _FILE_HEADER.pack(SEGMENT_MAGIC, FORMAT_VERSION)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        _write_all(self.fd, header)
        self.index_fd = os.open(self.index_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        _write_all(self.index_fd, _FILE_HEADER.pack(INDEX_MAGIC, FORMAT_VERSION))
        self.size = len(header)

    def recover(self, *, last: bool) -> None:
        """Open an existing segment: load its index, then check (and for the last segment,
        repair) everything after the last indexed chunk."""
        self.fd = os.open(self.path, os.O_RDWR)
        self.size = os.fstat(self.fd).st_size
        header = os.pread(self.fd, _FILE_HEADER.size, 0)
        if len(header) == _FILE_HEADER.size:
            self.version = _check_file_header(self.path, header, SEGMENT_MAGIC)
        elif last:
            # Died while creating the segment: nothing was ever appended to it.
            log.warning("stream log %s: incomplete segment header, rewriting it", self.path)
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, _FILE_HEADER.pack(SEGMENT_MAGIC, FORMAT_VERSION), 0)
            self.size = _FILE_HEADER.size
        else:
            raise LogError(f"{self.path}: truncated file header")
        self._load_index()
        self._scan_tail(repair=last)
        if last and not self.offsets and self.version < FORMAT_VERSION:
            os.pwrite(self.fd, _FILE_HEADER.pack(SEGMENT_MAGIC, FORMAT_VERSION), 0)
            self.version = FORMAT_VERSION  # empty: appends may use the current layout
        self._open_index_file()

    def _load_index(self) -> None:
        """Load the index file's entries that describe chunks inside the segment, in order.
        The index is derived data: a missing or damaged one is rebuilt by the tail scan."""
        try:
            data = self.index_path.read_bytes()
            _check_file_header(self.index_path, data, INDEX_MAGIC)
        except UnsupportedFormat:
            raise
        except (OSError, LogError) as e:
            log.warning("stream log %s: rebuilding the index (%s)", self.path, e)
            return
        body = data[_FILE_HEADER.size :]
        entries = array("q")
        entries.frombytes(body[: len(body) - len(body) % _INDEX_ENTRY_BYTES])
        if sys.byteorder == "big":
            entries.byteswap()
        offsets, positions, timestamps = entries[0::3], entries[1::3], entries[2::3]
        keep = 0
        if positions[:1] == array("q", [_FILE_HEADER.size]) and self.size > _FILE_HEADER.size:
            keep = 1
            while keep < len(positions) and positions[keep - 1] < positions[keep] < self.size:
                keep += 1
        self.offsets, self.positions = offsets[:keep], positions[:keep]
        self.timestamps = timestamps[:keep]
        self.indexed = keep

    def _scan_tail(self, *, repair: bool) -> None:
        """Verify chunks from the last indexed one to the end of the file, indexing those the
        index lacks; on a torn or corrupt chunk, truncate the last segment there (a sealed
        segment cannot be repaired without leaving a gap in the offsets)."""
        if self.positions:
            pos, expected = self.positions[-1], self.offsets[-1]
            del self.offsets[-1], self.positions[-1], self.timestamps[-1]
        else:
            pos, expected = _FILE_HEADER.size, self.base_offset
        while pos < self.size:
            chunk = self._chunk_at(pos, expected)
            if chunk is None:
                dropped = self.size - pos
                if not repair:
                    raise LogError(
                        f"{self.path}: corrupt chunk at byte {pos} (offset {expected}) in a "
                        "sealed segment"
                    )
                log.warning(
                    "stream log %s: dropped %d bytes of torn or corrupt tail at byte %d "
                    "(from offset %d)",
                    self.path,
                    dropped,
                    pos,
                    expected,
                )
                os.ftruncate(self.fd, pos)
                os.fsync(self.fd)
                self.size = pos
                break
            count, timestamp, length = chunk
            self.offsets.append(expected)
            self.positions.append(pos)
            self.timestamps.append(timestamp)
            pos += length
            expected += count
        self.next_offset = expected

    def _chunk_at(self, pos: int, expected_offset: int) -> tuple[int, int, int] | None:
        """(record count, timestamp, length on disk) of a valid chunk at ``pos``, else None."""
        header = os.pread(self.fd, _CHUNK_HEADER.size, pos)
        if len(header) < _CHUNK_HEADER.size:
            return None
        first, timestamp, count, size, crc = _CHUNK_HEADER.unpack(header)
        if first != expected_offset or pos + _CHUNK_HEADER.size + size > self.size:
            return None
        data = os.pread(self.fd, size, pos + _CHUNK_HEADER.size)
        if _chunk_crc(header[:_CHUNK_CRC_AT], data) != crc:
            return None
        return count, timestamp, _CHUNK_HEADER.size + size

    def _open_index_file(self) -> None:
        """Make the index file hold exactly the entries recovery kept or found."""
        self.index_fd = os.open(self.index_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.indexed = min(self.indexed, len(self.offsets))
        if self.indexed == 0:
            os.ftruncate(self.index_fd, 0)
            os.pwrite(self.index_fd, _FILE_HEADER.pack(INDEX_MAGIC, FORMAT_VERSION), 0)
        os.ftruncate(self.index_fd, _FILE_HEADER.size + self.indexed * _INDEX_ENTRY_BYTES)
        self.write_index()

    # -- appending ----------------------------------------------------------------------------

    def append_chunk(
        self, first: int, timestamp: int, payloads: Sequence[bytes], filter_bytes: bytes
    ) -> None:
        data = _encode_records(payloads)
        if self.version >= FILTERS_SINCE:
            data = bytes((len(filter_bytes),)) + filter_bytes + data
        head = _CHUNK_HEADER.pack(first, timestamp, len(payloads), len(data), 0)
        crc = _chunk_crc(head[:_CHUNK_CRC_AT], data)
        _write_all(self.fd, head[:_CHUNK_CRC_AT] + crc.to_bytes(4, "big") + data, self.size)
        self.offsets.append(first)
        self.positions.append(self.size)
        self.timestamps.append(timestamp)
        self.size += _CHUNK_HEADER.size + len(data)
        self.next_offset = first + len(payloads)
        if len(self.offsets) - self.indexed >= _INDEX_WRITE_BATCH:
            self.write_index()

    def write_index(self) -> None:
        """Append the index entries not yet in the index file."""
        start = self.indexed
        n = len(self.offsets)
        if start == n:
            return
        entries = array("q", bytes(_INDEX_ENTRY_BYTES * (n - start)))
        entries[0::3] = self.offsets[start:]
        entries[1::3] = self.positions[start:]
        entries[2::3] = self.timestamps[start:]
        if sys.byteorder == "big":
            entries.byteswap()
        os.pwrite(self.index_fd, entries.tobytes(), _FILE_HEADER.size + start * _INDEX_ENTRY_BYTES)
        self.indexed = n

    def sync(self) -> None:
        self.write_index()
        os.fsync(self.fd)
        os.fsync(self.index_fd)

    # -- reading ------------------------------------------------------------------------------

    def read_chunk(self, i: int, skip_below: int) -> list[Record]:
        pos = self.positions[i]
        end = self.positions[i + 1] if i + 1 < len(self.positions) else self.size
        raw = os.pread(self.fd, end - pos, pos)
        first, timestamp, _count, size, crc = _CHUNK_HEADER.unpack_from(raw)
        data = raw[_CHUNK_HEADER.size :]
        if len(data) != size or _chunk_crc(raw[:_CHUNK_CRC_AT], data) != crc:
            raise LogError(f"{self.path}: corrupt chunk at byte {pos} (offset {first})")
        if self.version >= FILTERS_SINCE:
            data = data[1 + data[0] :]
        return _decode_records(data, first, timestamp, skip_below)

    def chunk_filter(self, i: int) -> bytes:
        """The filter of chunk ``i`` without reading its records (empty before version 2)."""
        if self.version < FILTERS_SINCE:
            return b""
        raw = os.pread(self.fd, 256, self.positions[i] + _CHUNK_HEADER.size)
        return raw[1 : 1 + raw[0]]

    def close(self) -> None:
        for fd in (self.fd, self.index_fd):
            if fd >= 0:
                os.close(fd)
        self.fd = self.index_fd = -1

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
        self.index_path.unlink(missing_ok=True)


class SegmentedLog:
    """The log in ``directory`` (created if needed, recovered if it exists).

    Appends go to the last segment; ``sync`` makes everything appended so far durable
    against power loss (a write alone already survives the death of the process).
    Retention (``max_bytes``: total size of the segments; ``max_age_ms``: age of a
    segment's newest chunk) drops whole sealed segments when a segment is sealed or when
    ``apply_retention`` is called.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        max_segment_bytes: int = DEFAULT_MAX_SEGMENT_BYTES,
        max_bytes: int | None = None,
        max_age_ms: int | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.max_segment_bytes = max_segment_bytes
        self.max_bytes = max_bytes
        self.max_age_ms = max_age_ms
        self.directory.mkdir(parents=True, exist_ok=True)
        self._segments: list[_Segment] = []
        self._bases: list[int] = []
        self._open()

    def _open(self) -> None:
        bases = sorted(int(p.stem) for p in self.directory.glob("*.segment") if p.stem.isdigit())
        for i, base in enumerate(bases):
            segment = _Segment(self.directory, base)
            segment.recover(last=i == len(bases) - 1)
            if self._segments and self._segments[-1].next_offset != base:
                raise LogError(
                    f"{segment.path}: starts at offset {base} but the previous segment ends "
                    f"at {self._segments[-1].next_offset}"
                )
            self._add(segment)
        if not self._segments:
            segment = _Segment(self.directory, 0)
            segment.create()
            self._add(segment)

    def _add(self, segment: _Segment) -> None:
        self._segments.append(segment)
        self._bases.append(segment.base_offset)

    # -- offsets ------------------------------------------------------------------------------

    @property
    def first_offset(self) -> int:
        """The offset of the oldest record kept (``next_offset`` when the log is empty)."""
        return self._segments[0].base_offset

    @property
    def next_offset(self) -> int:
        """The offset the next appended record gets."""
        return self._segments[-1].next_offset

    @property
    def last_offset(self) -> int | None:
        """The offset of the newest record, None when the log holds none."""
        last = self.next_offset - 1
        return last if last >= self.first_offset else None

    @property
    def last_chunk_offset(self) -> int | None:
        """The first offset of the newest chunk: where RabbitMQ's ``last`` attaches."""
        for segment in reversed(self._segments):
            if segment.offsets:
                return segment.offsets[-1]
        return None

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    def offset_for_timestamp(self, timestamp_ms: int) -> int:
        """The first offset of the first chunk written at or after ``timestamp_ms``
        (``next_offset`` if there is none). Timestamps never decrease along the log."""
        for segment in self._segments:
            if segment.timestamps and segment.timestamps[-1] >= timestamp_ms:
                return segment.offsets[bisect.bisect_left(segment.timestamps, timestamp_ms)]
        return self.next_offset

    # -- writing ------------------------------------------------------------------------------

    def append(
        self,
        payloads: Sequence[bytes],
        timestamp_ms: int | None = None,
        filter_bytes: bytes = b"",
    ) -> int:
        """Append the payloads as one chunk with this filter (at most 255 bytes, opaque to
        the log); returns the offset of the first one."""
        if not payloads:
            raise ValueError("nothing to append")
        if len(filter_bytes) > 255:
            raise ValueError(f"a chunk filter has at most 255 bytes, not {len(filter_bytes)}")
        segment = self._segments[-1]
        outdated = segment.version < FORMAT_VERSION
        if (segment.size >= self.max_segment_bytes or outdated) and segment.offsets:
            segment = self._roll()
        last_ts = segment.timestamps[-1] if segment.timestamps else 0
        timestamp = max(now_ms() if timestamp_ms is None else timestamp_ms, last_ts)
        first = segment.next_offset
        segment.append_chunk(first, timestamp, payloads, filter_bytes)
        return first

    def _roll(self) -> _Segment:
        sealed = self._segments[-1]
        sealed.sync()
        segment = _Segment(self.directory, sealed.next_offset)
        segment.create()
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._add(segment)
        self.apply_retention()
        return segment

    def sync(self) -> None:
        """fsync what was appended, and the index."""
        self._segments[-1].sync()

    def sync_data(self) -> None:
        """fdatasync the active segment: what a confirm needs (the index is derived and
        rebuilt from the segment on open). The broker calls it once per flushed batch."""
        os.fdatasync(self._segments[-1].fd)

    def apply_retention(self, now: int | None = None) -> int:
        """Drop the oldest sealed segments beyond ``max_bytes`` or older than ``max_age_ms``;
        returns how many were dropped."""
        dropped = 0
        cutoff = None if self.max_age_ms is None else (now or now_ms()) - self.max_age_ms
        while len(self._segments) > 1:
            oldest = self._segments[0]
            too_big = self.max_bytes is not None and self.size_bytes > self.max_bytes
            too_old = cutoff is not None and oldest.timestamps[-1] < cutoff
            if not (too_big or too_old):
                break
            log.info("stream log %s: retention drops %s", self.directory, oldest.path.name)
            oldest.remove()
            del self._segments[0], self._bases[0]
            dropped += 1
        return dropped

    # -- reading ------------------------------------------------------------------------------

    def read_chunk(self, offset: int) -> list[Record]:
        """The records of the chunk holding ``offset``, from ``offset`` on (RabbitMQ delivers
        stream messages a chunk at a time). An offset before the first record reads from the
        first; at or past ``next_offset``, the result is empty."""
        offset = max(offset, self.first_offset)
        if offset >= self.next_offset:
            return []
        segment = self._segments[bisect.bisect_right(self._bases, offset) - 1]
        i = bisect.bisect_right(segment.offsets, offset) - 1
        return segment.read_chunk(i, offset)

    def chunk_start(self, offset: int) -> int:
        """The first offset of the chunk holding ``offset`` (which must be in the log)."""
        segment = self._segments[bisect.bisect_right(self._bases, offset) - 1]
        return segment.offsets[bisect.bisect_right(segment.offsets, offset) - 1]

    def chunk_filter(self, offset: int) -> tuple[bytes, int]:
        """The filter of the chunk holding ``offset`` (which must be in the log) and the
        offset after that chunk, for a reader deciding whether to skip it."""
        segment = self._segments[bisect.bisect_right(self._bases, offset) - 1]
        i = bisect.bisect_right(segment.offsets, offset) - 1
        end = segment.offsets[i + 1] if i + 1 < len(segment.offsets) else segment.next_offset
        return segment.chunk_filter(i), end

    def read(
        self, from_offset: int, max_records: int = 1000, max_bytes: int = 1 << 20
    ) -> list[Record]:
        """Records from ``from_offset`` on: at most ``max_records``, and no more than
        ``max_bytes`` of payload unless the first record alone is bigger."""
        out: list[Record] = []
        size = 0
        offset = max(from_offset, self.first_offset)
        while len(out) < max_records:
            chunk = self.read_chunk(offset)
            if not chunk:
                break
            for record in chunk:
                size += len(record.payload)
                if len(out) == max_records or (out and size > max_bytes):
                    return out
                out.append(record)
            offset = chunk[-1].offset + 1
        return out

    def close(self) -> None:
        for segment in self._segments:
            if segment is self._segments[-1]:
                segment.sync()
            segment.close()

    def __enter__(self) -> SegmentedLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
