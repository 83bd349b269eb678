"""The storage of a stream queue: an append-only, segmented log of chunks in a directory,
in the layout of RabbitMQ's Osiris.

No asyncio and no AMQP here: a record is an offset, a timestamp and opaque bytes (the
broker stores AMQP 1.0 messages). The on-disk format is Osiris's (``osiris_log.erl``;
``broker/streams/README.md`` has the details):

* ``<first offset, 20 digits>.segment``: ``OSIL`` and the log version (u32, 1), then
  chunks back to back, each as ``amqp_protocol.stream.chunk.build_chunk`` makes it: the
  48-byte chunk header (magic and version, type, entries, records, timestamp, epoch, first
  offset, CRC-32 of the data, data, trailer and bloom sizes), the bloom filter of the
  chunk's filter values (none when no message has one), the entries. A chunk is served
  to a stream-protocol subscriber as it is stored.
* ``<first offset>.index``: ``OSII`` and the index version (u32, 1), then one 29-byte
  entry per chunk: chunk id (its first offset), timestamp, epoch, file position, chunk
  type. The index is derived: entries not yet written when the process died, or a
  damaged index, are recovered by scanning the segment from the last good entry.

A segment is sealed (fsynced, never written again) when it reaches ``max_segment_bytes``
and the next append starts a new one. Retention drops whole sealed segments, oldest first.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
import time
import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from amqp_protocol.stream.chunk import (
    HEADER,
    ChunkError,
    ChunkType,
    build_chunk,
    chunk_records,
    entry_bounds,
    parse_chunk_header,
)

from ..store.files import fsync_dir

log = logging.getLogger(__name__)

#: Osiris's log and index versions (``LOG_VERSION``, ``IDX_VERSION``).
FORMAT_VERSION = 1
SEGMENT_MAGIC = b"OSIL"
INDEX_MAGIC = b"OSII"
#: The epoch of every chunk: a single node's log, whose leader never changes.
EPOCH = 1
#: RabbitMQ's default for ``x-stream-max-segment-size-bytes``.
DEFAULT_MAX_SEGMENT_BYTES = 500_000_000
#: The bloom filter of a chunk is at most this long (its size is a u8 of the header).
MAX_BLOOM_BYTES = 255

_FILE_HEADER = struct.Struct(">4sI")  # magic, version
#: chunk id, timestamp, epoch, file position, chunk type (``INDEX_RECORD_SIZE_B``: 29)
_INDEX_ENTRY = struct.Struct(">QqQIB")
#: Index entries are written to the index file in batches of this many (and on sync/close).
_INDEX_WRITE_BATCH = 256


class Record(NamedTuple):
    offset: int
    timestamp: int  #: milliseconds since the epoch, shared by the records of one chunk
    payload: bytes


class LogError(Exception):
    """The log's files cannot be used; the message names the path."""


class UnsupportedFormat(LogError):
    """A file was written by a newer version of the format than this code reads, or by
    an older one that ``legacy_log`` migrates (the broker does so when it opens a stream)."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _write_all(fd: int, data: bytes, position: int) -> None:
    """Write all of ``data`` at ``position`` (not at the file offset: a segment reopened by
    recovery has its offset at 0)."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view = view[written:]
        position += written


def _check_file_header(path: Path, header: bytes, magic: bytes) -> None:
    if len(header) < _FILE_HEADER.size:
        raise LogError(f"{path}: truncated file header")
    found_magic, version = _FILE_HEADER.unpack(header[: _FILE_HEADER.size])
    if found_magic != magic:
        raise UnsupportedFormat(
            f"{path}: not an Osiris stream log file (magic {found_magic!r}, expected {magic!r})"
        )
    if version > FORMAT_VERSION:
        raise UnsupportedFormat(
            f"{path}: stream log format version {version} is newer than the version this "
            f"broker reads ({FORMAT_VERSION}); upgrade the broker to open it"
        )


def _segment_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def _records(raw: bytes, first: int, timestamp: int, skip_below: int) -> list[Record]:
    """The records of the stored chunk ``raw`` from offset ``skip_below`` on."""
    header = parse_chunk_header(raw)
    start = HEADER.size + header.bloom_size
    data = raw[start : start + header.data_length]
    if zlib.crc32(data) != header.crc:
        raise ChunkError(f"chunk {first}: data CRC-32 does not match its header")
    skip = max(skip_below - first, 0)
    bounds = entry_bounds(memoryview(data), header.num_entries)
    if bounds is None:  # sub-batches: walk them
        payloads = [bytes(r) for r in chunk_records(memoryview(data), header.num_entries)]
        return [Record(first + i, timestamp, p) for i, p in enumerate(payloads) if i >= skip]
    return [
        Record(first + i, timestamp, data[bounds[i] + 4 : bounds[i + 1]])
        for i in range(skip, header.num_entries)
    ]


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
        self.fd = -1
        self.index_fd = -1

    # -- creation and recovery ----------------------------------------------------------------

    def create(self) -> None:
        header = _FILE_HEADER.pack(SEGMENT_MAGIC, FORMAT_VERSION)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        _write_all(self.fd, header, 0)
        self.index_fd = os.open(self.index_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        _write_all(self.index_fd, _FILE_HEADER.pack(INDEX_MAGIC, FORMAT_VERSION), 0)
        self.size = len(header)

    def recover(self, *, last: bool) -> None:
        """Open an existing segment: load its index, then check (and for the last segment,
        repair) everything after the last indexed chunk."""
        self.fd = os.open(self.path, os.O_RDWR)
        self.size = os.fstat(self.fd).st_size
        header = os.pread(self.fd, _FILE_HEADER.size, 0)
        if len(header) == _FILE_HEADER.size:
            _check_file_header(self.path, header, SEGMENT_MAGIC)
        elif last:
            # Died while creating the segment: nothing was ever appended to it.
            log.warning("stream log %s: incomplete segment header, rewriting it", self.path)
            os.ftruncate(self.fd, 0)
            _write_all(self.fd, _FILE_HEADER.pack(SEGMENT_MAGIC, FORMAT_VERSION), 0)
            self.size = _FILE_HEADER.size
        else:
            raise LogError(f"{self.path}: truncated file header")
        self._load_index()
        self._scan_tail(repair=last)
        self._open_index_file()

    def _load_index(self) -> None:
        """Load the index file's entries that describe chunks inside the segment, in order.
        The index is derived data: a missing or damaged one is rebuilt by the tail scan."""
        try:
            raw = self.index_path.read_bytes()
        except FileNotFoundError:
            return
        if len(raw) < _FILE_HEADER.size or raw[:4] != INDEX_MAGIC:
            log.warning("stream log %s: unreadable index, rebuilding it", self.index_path)
            return
        whole = (len(raw) - _FILE_HEADER.size) // _INDEX_ENTRY.size * _INDEX_ENTRY.size
        last_offset, last_position = -1, -1
        for chunk_id, timestamp, _epoch, position, _type in _INDEX_ENTRY.iter_unpack(
            raw[_FILE_HEADER.size : _FILE_HEADER.size + whole]
        ):
            if not (last_offset < chunk_id and last_position < position < self.size):
                break
            self.offsets.append(chunk_id)
            self.positions.append(position)
            self.timestamps.append(timestamp)
            last_offset, last_position = chunk_id, position
        self.indexed = len(self.offsets)

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
                if not repair:
                    raise LogError(
                        f"{self.path}: corrupt chunk at byte {pos} (offset {expected}) in a "
                        "sealed segment"
                    )
                log.warning(
                    "stream log %s: dropped %d bytes of torn or corrupt tail at byte %d "
                    "(from offset %d)",
                    self.path,
                    self.size - pos,
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
        self.indexed = min(self.indexed, len(self.offsets))

    def _chunk_at(self, pos: int, expected_offset: int) -> tuple[int, int, int] | None:
        """(record count, timestamp, size as stored) of a valid chunk at ``pos``, else None."""
        try:
            header = parse_chunk_header(os.pread(self.fd, HEADER.size, pos))
        except ChunkError:
            return None
        end = pos + header.stored_size
        if header.first_offset != expected_offset or end > self.size:
            return None
        data = os.pread(self.fd, header.data_length, pos + HEADER.size + header.bloom_size)
        if zlib.crc32(data) != header.crc:
            return None
        return header.num_records, header.timestamp, header.stored_size

    def _open_index_file(self) -> None:
        """Make the index file hold exactly the entries recovery kept or found."""
        self.index_fd = os.open(self.index_path, os.O_RDWR | os.O_CREAT, 0o644)
        _write_all(self.index_fd, _FILE_HEADER.pack(INDEX_MAGIC, FORMAT_VERSION), 0)
        os.ftruncate(self.index_fd, _FILE_HEADER.size + self.indexed * _INDEX_ENTRY.size)
        self.write_index()

    # -- appending ----------------------------------------------------------------------------

    def append_chunk(self, chunk: bytes, first: int, count: int, timestamp: int) -> None:
        _write_all(self.fd, chunk, self.size)
        self.offsets.append(first)
        self.positions.append(self.size)
        self.timestamps.append(timestamp)
        self.size += len(chunk)
        self.next_offset = first + count
        if len(self.offsets) - self.indexed >= _INDEX_WRITE_BATCH:
            self.write_index()

    def write_index(self) -> None:
        """Append the index entries not yet in the index file."""
        start, n = self.indexed, len(self.offsets)
        if start == n:
            return
        pack = _INDEX_ENTRY.pack
        entries = b"".join(
            pack(self.offsets[i], self.timestamps[i], EPOCH, self.positions[i], ChunkType.USER)
            for i in range(start, n)
        )
        os.pwrite(self.index_fd, entries, _FILE_HEADER.size + start * _INDEX_ENTRY.size)
        self.indexed = n

    def sync(self) -> None:
        self.write_index()
        os.fsync(self.fd)
        os.fsync(self.index_fd)

    # -- reading ------------------------------------------------------------------------------

    def stored_chunk(self, i: int) -> bytes:
        """Chunk ``i`` as stored: header, bloom filter, data, trailer (one ``pread``)."""
        pos = self.positions[i]
        end = self.positions[i + 1] if i + 1 < len(self.positions) else self.size
        return os.pread(self.fd, end - pos, pos)

    def read_chunk(self, i: int, skip_below: int) -> list[Record]:
        try:
            return _records(self.stored_chunk(i), self.offsets[i], self.timestamps[i], skip_below)
        except ChunkError as e:
            raise LogError(f"{self.path}: corrupt chunk at byte {self.positions[i]}: {e}") from None

    def chunk_filter(self, i: int) -> bytes:
        """The bloom filter of chunk ``i`` without reading its records (empty: none)."""
        raw = os.pread(self.fd, HEADER.size + MAX_BLOOM_BYTES, self.positions[i])
        bloom_size = parse_chunk_header(raw).bloom_size
        return raw[HEADER.size : HEADER.size + bloom_size]

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
    ``apply_retention`` is called. A new, empty log starts at ``first_offset``.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        max_segment_bytes: int = DEFAULT_MAX_SEGMENT_BYTES,
        max_bytes: int | None = None,
        max_age_ms: int | None = None,
        first_offset: int = 0,
    ) -> None:
        self.directory = Path(directory)
        self.max_segment_bytes = max_segment_bytes
        self.max_bytes = max_bytes
        self.max_age_ms = max_age_ms
        self.directory.mkdir(parents=True, exist_ok=True)
        self._segments: list[_Segment] = []
        self._bases: list[int] = []
        try:
            self._open(first_offset)
        except BaseException:
            for segment in self._segments:
                segment.close()
            raise

    def _open(self, first_offset: int) -> None:
        bases = sorted(int(p.stem) for p in self.directory.glob("*.segment") if p.stem.isdigit())
        for i, base in enumerate(bases):
            segment = _Segment(self.directory, base)
            self._segments.append(segment)  # closed with the log if recovery fails
            segment.recover(last=i == len(bases) - 1)
            if i and self._segments[-2].next_offset != base:
                raise LogError(
                    f"{segment.path}: starts at offset {base} but the previous segment ends "
                    f"at {self._segments[-2].next_offset}"
                )
            self._bases.append(base)
        if not self._segments:
            segment = _Segment(self.directory, first_offset)
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
        """Append the payloads as one chunk whose bloom filter is ``filter_bytes`` (at most
        255 bytes, opaque to the log); returns the offset of the first one."""
        if not payloads:
            raise ValueError("nothing to append")
        if len(filter_bytes) > MAX_BLOOM_BYTES:
            raise ValueError(f"a chunk filter has at most 255 bytes, not {len(filter_bytes)}")
        segment = self._segments[-1]
        if segment.size >= self.max_segment_bytes and segment.offsets:
            segment = self._roll()
        last_ts = segment.timestamps[-1] if segment.timestamps else 0
        timestamp = max(now_ms() if timestamp_ms is None else timestamp_ms, last_ts)
        first = segment.next_offset
        chunk = build_chunk(
            payloads, first_offset=first, timestamp=timestamp, epoch=EPOCH, bloom=filter_bytes
        )
        segment.append_chunk(chunk, first, len(payloads), timestamp)
        return first

    def _roll(self) -> _Segment:
        sealed = self._segments[-1]
        sealed.sync()
        segment = _Segment(self.directory, sealed.next_offset)
        segment.create()
        fsync_dir(self.directory)
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

    def _locate(self, offset: int) -> tuple[_Segment, int]:
        """The segment and the chunk number in it of the chunk holding ``offset`` (which
        must be in the log)."""
        segment = self._segments[bisect.bisect_right(self._bases, offset) - 1]
        return segment, bisect.bisect_right(segment.offsets, offset) - 1

    def read_chunk(self, offset: int) -> list[Record]:
        """The records of the chunk holding ``offset``, from ``offset`` on (RabbitMQ delivers
        stream messages a chunk at a time). An offset before the first record reads from the
        first; at or past ``next_offset``, the result is empty."""
        offset = max(offset, self.first_offset)
        if offset >= self.next_offset:
            return []
        segment, i = self._locate(offset)
        return segment.read_chunk(i, offset)

    def stored_chunk(self, offset: int) -> bytes:
        """The chunk holding ``offset`` (which must be in the log) as stored, unparsed."""
        segment, i = self._locate(offset)
        return segment.stored_chunk(i)

    def chunk_start(self, offset: int) -> int:
        """The first offset of the chunk holding ``offset`` (which must be in the log)."""
        segment, i = self._locate(offset)
        return segment.offsets[i]

    def chunk_filter(self, offset: int) -> tuple[bytes, int]:
        """The bloom filter of the chunk holding ``offset`` (which must be in the log) and
        the offset after that chunk, for a reader deciding whether to skip it."""
        segment, i = self._locate(offset)
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
            if segment is self._segments[-1] and segment.fd >= 0:
                segment.sync()
            segment.close()

    def __enter__(self) -> SegmentedLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
