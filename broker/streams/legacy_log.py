"""The stream log format of the bundled broker before it stored Osiris's chunks (its
"AMQPSTRM" segments, versions 1 and 2), read once to migrate a stream to the current
format (``log.py``) when the broker opens it.

The old layout, integers big-endian: a segment ``<first offset, 20 digits>.segment`` is a
16-byte header (``AMQPSTRM``, u32 version, 4 reserved bytes), then chunks: a 28-byte header
(u64 first offset, i64 timestamp ms, u32 record count, u32 data size, u32 CRC-32 of the
header before it and the data), then the data: in version 2 a u8 filter length and the
filter, then each record as a u32 length and its bytes. Its ``.index`` files are derived
and not read.

``migrate`` writes the converted log into a work directory beside the old segments, marks
it complete, then replaces the old files with it: a broker that dies while migrating
starts again from the old files, or finishes the replacement of a completed migration.
"""

from __future__ import annotations

import logging
import shutil
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from ..store.files import fsync_dir
from .log import LogError, SegmentedLog

log = logging.getLogger(__name__)

MAGIC = b"AMQPSTRM"
_FILE_HEADER = struct.Struct(">8sI4x")
_CHUNK_HEADER = struct.Struct(">QqIII")
_CRC_AT = _CHUNK_HEADER.size - 4
_LENGTH = struct.Struct(">I")
#: The work directory of a migration, inside the stream's directory.
WORK_DIRECTORY = "osiris-migration"
#: Written into the work directory once the migrated log is complete and synced.
COMPLETE_MARKER = "complete"


class LegacyChunk(NamedTuple):
    first_offset: int
    timestamp: int
    payloads: list[bytes]
    #: the chunk's filter; empty in version 1 (a chunk from before filters)
    filter_bytes: bytes


#: What a migration makes of an old chunk: its records and bloom filter in the new log.
Convert = Callable[[LegacyChunk], tuple[list[bytes], bytes]]


def _segments(directory: Path) -> list[Path]:
    paths = [p for p in directory.glob("*.segment") if p.stem.isdigit()]
    return sorted(paths, key=lambda p: int(p.stem))


def holds_legacy_log(directory: Path) -> bool:
    """Whether ``directory`` holds segments of the old format (or a migration to finish)."""
    if (directory / WORK_DIRECTORY).exists():
        return True
    for path in _segments(directory):
        with path.open("rb") as f:
            if f.read(len(MAGIC)) == MAGIC:
                return True
    return False


def _records(data: bytes) -> list[bytes]:
    records: list[bytes] = []
    pos = 0
    while pos < len(data):
        (n,) = _LENGTH.unpack_from(data, pos)
        records.append(data[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return records


def legacy_chunks(path: Path, *, last: bool) -> Iterator[LegacyChunk]:
    """The chunks of one old segment; a torn tail of the ``last`` segment ends it (as the
    old recovery truncated it), anywhere else it is an error naming the file."""
    raw = path.read_bytes()
    magic, version = _FILE_HEADER.unpack_from(raw) if len(raw) >= _FILE_HEADER.size else (b"", 0)
    if magic != MAGIC or version not in (1, 2):
        raise LogError(f"{path}: not a stream segment of the old format (version 1 or 2)")
    pos = _FILE_HEADER.size
    while pos < len(raw):
        chunk = _chunk_at(raw, pos, version)
        if chunk is None:
            if last:
                log.warning("stream log %s: old-format tail at byte %d dropped (torn)", path, pos)
                return
            raise LogError(f"{path}: corrupt chunk at byte {pos} in a sealed segment")
        yield chunk[0]
        pos = chunk[1]


def _chunk_at(raw: bytes, pos: int, version: int) -> tuple[LegacyChunk, int] | None:
    """The valid chunk at ``pos`` of a segment and where it ends; None if torn or corrupt."""
    if len(raw) - pos < _CHUNK_HEADER.size:
        return None
    first, timestamp, _count, size, crc = _CHUNK_HEADER.unpack_from(raw, pos)
    end = pos + _CHUNK_HEADER.size + size
    data = raw[pos + _CHUNK_HEADER.size : end]
    if end > len(raw) or zlib.crc32(data, zlib.crc32(raw[pos : pos + _CRC_AT])) != crc:
        return None
    filter_bytes = b""
    if version >= 2:
        filter_bytes, data = data[1 : 1 + data[0]], data[1 + data[0] :]
    return LegacyChunk(first, timestamp, _records(data), filter_bytes), end


def migrate(directory: Path, convert: Convert, **log_options: Any) -> None:
    """Rewrite the old-format log in ``directory`` as a log of Osiris chunks, each old chunk
    one new chunk (the same offsets and timestamps) of ``convert`` 's records and filter."""
    work = directory / WORK_DIRECTORY
    if not (work / COMPLETE_MARKER).exists():
        shutil.rmtree(work, ignore_errors=True)
        old = _segments(directory)
        first = int(old[0].stem) if old else 0
        log.warning("stream log %s: migrating the old format to Osiris chunks", directory)
        with SegmentedLog(work, first_offset=first, **log_options) as new:
            for i, path in enumerate(old):
                for chunk in legacy_chunks(path, last=i == len(old) - 1):
                    if chunk.first_offset != new.next_offset:
                        raise LogError(
                            f"{path}: a chunk at offset {chunk.first_offset} where "
                            f"{new.next_offset} was expected"
                        )
                    payloads, bloom = convert(chunk)
                    new.append(payloads, chunk.timestamp, bloom)
            new.sync()
        (work / COMPLETE_MARKER).touch()
        fsync_dir(work)
    for path in [*_segments(directory), *directory.glob("*.index")]:
        path.unlink()
    for path in work.iterdir():
        if path.name != COMPLETE_MARKER:
            path.rename(directory / path.name)
    fsync_dir(directory)
    shutil.rmtree(work)
    log.warning("stream log %s: migrated", directory)
