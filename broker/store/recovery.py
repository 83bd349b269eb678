"""Rebuilding the queues' unacknowledged messages from the journal's segment files.

The scan is one tight loop per segment over an mmap of the file: ``struct.unpack_from`` on
the record headers, a CRC-32 of each payload, and per message only the dict entry that says
where it is (message bodies stay on disk until the broker reads them).
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import records
from .errors import StoreError, from_os_error
from .liveness import Liveness

log = logging.getLogger("broker.store")

SEGMENT_SUFFIX = ".seg"
_U32 = struct.Struct("<I")
_RECOVERY_ADVICE = (
    "Restore the data directory from a backup, or move this file out of it to start without "
    "the messages it holds (they will be lost)"
)


def segment_path(directory: Path, number: int) -> Path:
    return directory / f"{number:010d}{SEGMENT_SUFFIX}"


def segment_numbers(directory: Path) -> list[int]:
    numbers = []
    for entry in directory.iterdir():
        if entry.suffix == SEGMENT_SUFFIX and entry.stem.isdigit():
            numbers.append(int(entry.stem))
    return sorted(numbers)


@dataclass
class DroppedTail:
    """A torn or corrupt end of the last segment that recovery cut off."""

    path: Path
    offset: int
    size: int


@dataclass
class RecoveredJournal:
    #: queue id -> {message id: record location}, in message-id (= publish) order.
    queues: dict[int, dict[int, int]]
    liveness: Liveness
    next_msg_id: int
    records: int = 0
    dropped: list[DroppedTail] = field(default_factory=list)
    #: queues a MOVED record added a message to out of id order (sorted at the end)
    reordered: set[int] = field(default_factory=set)


def recover(directory: Path, known_queues: Iterable[int]) -> RecoveredJournal:
    """Replay every segment in ``directory``; messages of queues not in ``known_queues``
    (deleted queues) are skipped. A bad end of the last segment is truncated and logged; a bad
    record anywhere else raises StoreError."""
    state = RecoveredJournal({q: {} for q in known_queues}, Liveness(), next_msg_id=1)
    numbers = segment_numbers(directory)
    for i, number in enumerate(numbers):
        _recover_segment(segment_path(directory, number), number, i == len(numbers) - 1, state)
    for queue_id in state.reordered:
        queue = state.queues[queue_id]
        state.queues[queue_id] = {msg_id: queue[msg_id] for msg_id in sorted(queue)}
    return state


def _recover_segment(path: Path, number: int, is_last: bool, state: RecoveredJournal) -> None:
    try:
        with open(path, "r+b" if is_last else "rb") as f:
            size = os.fstat(f.fileno()).st_size
            header = f.read(records.SEGMENT_HEADER.size)
            if len(header) < records.SEGMENT_HEADER.size:
                if is_last:  # a crash while the segment was being created: nothing in it
                    _drop_tail(f.fileno(), path, 0, size, state)
                    return
                raise StoreError(path, "segment file is shorter than its header", _RECOVERY_ADVICE)
            version = _check_header(path, number, header)
            state.liveness.open_segment(number, state.next_msg_id)
            if size == records.SEGMENT_HEADER.size:
                return
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                end = _replay(mm, number, version, size, state)
                intact_after = _valid_records_after(mm, end, size) if end < size else 0
            if end < size:
                if not is_last or intact_after:
                    raise StoreError(
                        path,
                        f"corrupt record at offset {end} with {intact_after} intact record(s) "
                        "after it (not a torn write at the end of the journal)",
                        _RECOVERY_ADVICE,
                    )
                _drop_tail(f.fileno(), path, end, size, state)
    except OSError as e:
        raise from_os_error(path, "cannot read the journal segment", e) from e


def _check_header(path: Path, number: int, header: bytes) -> int:
    """The segment's format version, once its header is checked."""
    magic, version, recorded = records.SEGMENT_HEADER.unpack(header)
    if magic != records.SEGMENT_MAGIC:
        raise StoreError(path, "not an amqp-spark journal segment (bad magic)", _RECOVERY_ADVICE)
    if version > records.FORMAT_VERSION:
        raise StoreError(
            path,
            f"journal format version {version} is newer than this broker's "
            f"({records.FORMAT_VERSION})",
            "Run a newer amqp-spark broker on this data directory, or point --data-dir elsewhere",
        )
    if recorded != number:
        raise StoreError(path, f"header says segment {recorded}", _RECOVERY_ADVICE)
    return int(version)


def _replay(mm: mmap.mmap, number: int, version: int, size: int, state: RecoveredJournal) -> int:
    """Apply every intact record; returns the offset of the first bad one (or ``size``)."""
    view = memoryview(mm)
    queues = state.queues
    liveness = state.liveness
    published = liveness.published
    published_to = liveness.published_to
    acks_recorded = liveness.acks_recorded
    acked = liveness.acked
    crc32 = zlib.crc32
    unpack_header = records.RECORD_HEADER.unpack_from
    publish_head = records.publish_head(version)
    unpack_publish = publish_head.unpack_from
    ids_at = publish_head.size  # where the queue ids start in a PUBLISH payload
    unpack_ack = records.ACK_HEAD.unpack_from
    unpack_u32 = _U32.unpack_from
    base = number << records.OFFSET_BITS
    pos = records.SEGMENT_HEADER.size
    count = 0
    next_id = state.next_msg_id
    try:
        while pos + 8 <= size:
            length, crc = unpack_header(mm, pos)
            start = pos + 8
            end = start + length
            if length == 0 or end > size or crc32(view[start:end]) != crc:
                break
            kind = mm[start]
            if kind == records.PUBLISH:
                msg_id, nqueues = unpack_publish(mm, start)[1:3]
                if msg_id < next_id:
                    break
                if nqueues == 1:
                    queue = queues.get(unpack_u32(mm, start + ids_at)[0])
                    if queue is not None:
                        queue[msg_id] = base | pos
                    published(msg_id, 0 if queue is None else 1)
                else:
                    holders = []
                    for q in struct.unpack_from(f"<{nqueues}I", mm, start + ids_at):
                        queue = queues.get(q)
                        if queue is not None:
                            queue[msg_id] = base | pos
                            holders.append(q)
                    published_to(msg_id, tuple(holders))
                next_id = msg_id + 1
            elif kind == records.ACK:
                _, q, n = unpack_ack(mm, start)
                acks_recorded()
                queue = queues.get(q)
                if queue is not None:
                    pop = queue.pop
                    for msg_id in struct.unpack_from(f"<{n}Q", mm, start + 9):
                        if pop(msg_id, None) is not None:
                            acked(msg_id, q)
            elif kind == records.MOVED and version >= 3:
                _replay_moved(mm, start, base | pos, state)
            else:
                break
            pos = end
            count += 1
    finally:
        view.release()
    state.next_msg_id = next_id
    state.records += count
    return pos


def _replay_moved(mm: mmap.mmap, start: int, loc: int, state: RecoveredJournal) -> None:
    """A message compaction copied: it takes its place again in each queue (by id: its
    original is gone, or still in a segment a crash kept, where this copy replaces it)."""
    msg_id, nqueues = records.PUBLISH_HEAD.unpack_from(mm, start)[1:3]
    holders = []
    for q in struct.unpack_from(f"<{nqueues}I", mm, start + records.PUBLISH_HEAD.size):
        queue = state.queues.get(q)
        if queue is not None:
            if msg_id not in queue and queue and msg_id < next(reversed(queue)):
                state.reordered.add(q)
            queue[msg_id] = loc
            holders.append(q)
    state.liveness.moved(msg_id, tuple(holders))


def _valid_records_after(mm: mmap.mmap, pos: int, size: int) -> int:
    """How many intact records follow the bad record at ``pos``, walking its length chain.

    Zero means the bad record is a torn end (a crash mid-write): safe to cut off."""
    count = 0
    length, _ = records.RECORD_HEADER.unpack_from(mm, pos) if pos + 8 <= size else (0, 0)
    pos += 8 + length
    while length and pos + 8 <= size:
        length, crc = records.RECORD_HEADER.unpack_from(mm, pos)
        end = pos + 8 + length
        if length == 0 or end > size or zlib.crc32(mm[pos + 8 : end]) != crc:
            pos += 8 + length
            continue
        count += 1
        pos = end
    return count


def _drop_tail(fd: int, path: Path, offset: int, size: int, state: RecoveredJournal) -> None:
    if offset == 0:
        os.ftruncate(fd, 0)
        os.fsync(fd)
        os.unlink(path)
    else:
        os.ftruncate(fd, offset)
        os.fsync(fd)
    state.dropped.append(DroppedTail(path, offset, size - offset))
    log.warning(
        "%s: dropped a torn or corrupt tail of %d byte(s) at offset %d (records not fully "
        "written before a crash; they were never confirmed); everything before it was recovered",
        path,
        size - offset,
        offset,
    )


class SegmentReader:
    """Reads recovered messages back by location (one open file per segment read)."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        #: segment number -> (open file, format version)
        self._segments: dict[int, tuple[int, int]] = {}

    def read(self, loc: int) -> records.JournaledMessage:
        """The message of the PUBLISH (or MOVED) record at ``loc``."""
        number, offset = records.split_location(loc)
        path = segment_path(self._directory, number)
        try:
            segment = self._segments.get(number)
            if segment is None:
                fd = os.open(path, os.O_RDONLY)
                header = os.pread(fd, records.SEGMENT_HEADER.size, 0)
                segment = self._segments[number] = (fd, records.SEGMENT_HEADER.unpack(header)[1])
            fd, version = segment
            length, crc = records.RECORD_HEADER.unpack(os.pread(fd, 8, offset))
            payload = os.pread(fd, length, offset + 8)
        except OSError as e:
            raise from_os_error(path, "cannot read the journal segment", e) from e
        if len(payload) != length or zlib.crc32(payload) != crc:
            raise StoreError(path, f"record at offset {offset} changed on disk", _RECOVERY_ADVICE)
        return records.publish_message(payload, version)

    def close(self) -> None:
        for fd, _ in self._segments.values():
            os.close(fd)
        self._segments.clear()
