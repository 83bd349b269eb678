"""The delivery log (``<data dir>/deliveries``): which journaled messages each durable queue
may have delivered, so that after a restart only those come back with ``redelivered`` set
(as RabbitMQ's classic and quorum queues do), and quorum queues keep ``x-delivery-count``.

It is kept apart from the journal because of when it must be written: a delivery's record
has to be in the file *before* the delivery's frames reach the socket, or a broker killed
in between would bring a delivered message back as never delivered (the flag is a hint,
but a wrong ``false`` is the one error it must not make). The journal's writer thread
cannot promise that without making the event loop wait; this file is written by the event
loop itself, one ``write`` per dispatch (the connection sends its output later in the same
loop turn), and never fsync'd while the broker runs:

* a classic queue delivers in journal-id order, so it records a *mark*: every message of
  the queue with an id up to it may have been delivered. One small record per dispatch.
* a queue that counts deliveries (quorum, or ``x-delivery-limit``) records the ids it
  delivered; a recovered message's ``x-delivery-count`` is the number of times it was
  delivered (each delivery ended with a return, and the restart returned the last one).

* a quorum queue without ``x-delivery-limit`` requeues a nacked or rejected message to its
  back; the log records where: behind every message with an id up to the journal's last id at
  the requeue (the messages published before it) and behind the messages requeued before it.
  Recovery puts such messages back there, as a RabbitMQ quorum queue keeps them (its Raft
  log replays the requeue). Requeues are rare; deliveries pay nothing for this.

What a restart can trust: after a clean stop (a CLOSED record, fsync'd), everything; after
the process was killed (the same boot: the page cache kept every write), everything too;
after the machine crashed (another boot id, no CLOSED record) or if the file is missing or
damaged, nothing: every recovered message is then marked as possibly delivered.

Layout: header ``magic 8s "ASPKDLVR", version u32, boot id 16s`` (the writer's
``/proc/sys/kernel/random/boot_id``), then records framed as the journal's (length u32, CRC-32
u32, payload), payload ``kind u8`` and by kind: 1 MARK ``queue_id u32, msg_id u64``;
2 DELIVERED ``queue_id u32, msg_id u64 * n``; 3 CLOSED (nothing); 4 COUNTS ``queue_id u32,
(msg_id u64, count u32) * n`` (a rewrite's copy of the counts); 5 REQUEUED ``queue_id u32,
after u64, msg_id u64 * n`` (version 2: the ids went to the back of the queue, in this
order, behind every message with an id up to ``after``). The broker rewrites the file
(temporary file, fsync, rename) at every start and whenever it outgrows ``REWRITE_AFTER``:
the marks of every queue, and the counts and requeued places of messages still queued.
Version 1 files (no REQUEUED records) are read as they are.
"""

from __future__ import annotations

import logging
import os
import struct
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .files import fsync_dir

log = logging.getLogger("broker.store")

FILE_NAME = "deliveries"
MAGIC = b"ASPKDLVR"
VERSION = 2
HEADER = struct.Struct("<8sI16s")
RECORD_HEADER = struct.Struct("<II")
MARK_RECORD = struct.Struct("<BIQ")
IDS_HEAD = struct.Struct("<BI")
REQUEUED_HEAD = struct.Struct("<BIQ")
COUNT = struct.Struct("<QI")
MARK = 1
DELIVERED = 2
CLOSED = 3
COUNTS = 4
REQUEUED = 5
#: Bytes of records after which the running broker rewrites the file to its live content.
REWRITE_AFTER = 4 << 20
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> bytes:
    """This boot of the machine (16 bytes; zeros if unknown, which no other boot matches as
    trusted: a file written then is never trusted after an unclean stop)."""
    try:
        return uuid.UUID(_BOOT_ID.read_text().strip()).bytes
    except (OSError, ValueError):
        return bytes(16)


@dataclass
class Deliveries:
    """What the log says: per queue id, its mark, its messages' delivery counts and the
    messages it requeued to its back."""

    marks: dict[int, int] = field(default_factory=dict)
    counts: dict[int, dict[int, int]] = field(default_factory=dict)
    #: queue id -> {msg id: the journal's last id when it was requeued}, in requeue order
    requeued: dict[int, dict[int, int]] = field(default_factory=dict)
    #: False when deliveries may be missing (machine crash, no or damaged file)
    trusted: bool = True
    #: the highest message id the log names (the journal must not give it again)
    highest_id: int = 0

    def delivery_count(self, queue_id: int, msg_id: int) -> int:
        counts = self.counts.get(queue_id)
        return counts.get(msg_id, 0) if counts else 0

    def may_have_delivered(self, queue_id: int, msg_id: int) -> bool:
        return msg_id <= self.marks.get(queue_id, 0) or self.delivery_count(queue_id, msg_id) > 0

    def distrust(self, queues: dict[int, dict[int, int]]) -> None:
        """Count every message of ``queues`` (queue id -> {msg id: ...}, in id order) as
        possibly delivered."""
        for queue_id, messages in queues.items():
            if messages:
                last = next(reversed(messages))
                self.marks[queue_id] = max(self.marks.get(queue_id, 0), last)
        self.trusted = True

    def order(self, queues: dict[int, dict[int, int]]) -> None:
        """Put the messages of ``queues`` (queue id -> {msg id: ...}, in id order) that were
        requeued to the back where the requeue put them; forget the counts and requeues of
        messages no longer queued."""
        for queue_id, requeued in list(self.requeued.items()):
            queue = queues.get(queue_id, {})
            back = {m: (after, 1, i) for i, (m, after) in enumerate(requeued.items()) if m in queue}
            if back:
                self.requeued[queue_id] = {m: requeued[m] for m in back}
                queues[queue_id] = _in_requeue_order(queue, back)
            else:
                del self.requeued[queue_id]
        for queue_id, counts in self.counts.items():
            queue = queues.get(queue_id, {})
            self.counts[queue_id] = {m: n for m, n in counts.items() if m in queue}


def _in_requeue_order(
    queue: dict[int, int], back: dict[int, tuple[int, int, int]]
) -> dict[int, int]:
    """``queue`` (in id order) with the messages of ``back`` moved to their sort keys
    ``(after, 1, requeue position)``: behind the message with id ``after`` and the ones
    requeued before them; any other message keeps its id as key."""
    order = sorted(queue, key=lambda m: back.get(m) or (m, 0, 0))
    return {m: queue[m] for m in order}


def read_deliveries(data_dir: Path) -> Deliveries:
    """The delivery log of ``data_dir`` as the last broker left it (``trusted`` False when it
    cannot be relied on)."""
    path = data_dir / FILE_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Deliveries(trusted=False)  # a new directory, or one of format 3 or older
    except OSError as e:
        log.warning("%s: unreadable (%s); recovered messages count as delivered", path, e)
        return Deliveries(trusted=False)
    if len(data) < HEADER.size or data[:8] != MAGIC:
        log.warning("%s: not a delivery log; recovered messages count as delivered", path)
        return Deliveries(trusted=False)
    _, version, writer_boot = HEADER.unpack_from(data)
    if version > VERSION:
        log.warning(
            "%s: delivery log version %d is newer than this broker's (%d); recovered messages "
            "count as delivered",
            path,
            version,
            VERSION,
        )
        return Deliveries(trusted=False)
    state = Deliveries()
    pos, closed = HEADER.size, False
    while pos + RECORD_HEADER.size <= len(data):
        length, crc = RECORD_HEADER.unpack_from(data, pos)
        start, pos = pos + RECORD_HEADER.size, pos + RECORD_HEADER.size + length
        if length == 0 or pos > len(data) or zlib.crc32(data[start:pos]) != crc:
            break
        closed = _apply(state, data[start:pos])
    else:
        state.trusted = closed or writer_boot == boot_id()
        return state
    log.warning("%s: damaged at offset %d; recovered messages count as delivered", path, pos)
    state.trusted = False
    return state


def _apply(state: Deliveries, payload: bytes) -> bool:
    """Apply one record; True if it is CLOSED."""
    kind = payload[0]
    if kind == MARK:
        _, queue_id, msg_id = MARK_RECORD.unpack(payload)
        state.marks[queue_id] = max(state.marks.get(queue_id, 0), msg_id)
        state.highest_id = max(state.highest_id, msg_id)
    elif kind == DELIVERED:
        _, queue_id = IDS_HEAD.unpack_from(payload)
        counts = state.counts.setdefault(queue_id, {})
        msg_ids = _ids(payload, IDS_HEAD.size)
        for msg_id in msg_ids:
            counts[msg_id] = counts.get(msg_id, 0) + 1
        state.highest_id = max(state.highest_id, max(msg_ids, default=0))
    elif kind == COUNTS:
        _, queue_id = IDS_HEAD.unpack_from(payload)
        counts = state.counts.setdefault(queue_id, {})
        for msg_id, times in COUNT.iter_unpack(memoryview(payload)[IDS_HEAD.size :]):
            counts[msg_id] = times
        state.highest_id = max(state.highest_id, max(counts, default=0))
    elif kind == REQUEUED:
        _, queue_id, after = REQUEUED_HEAD.unpack_from(payload)
        _move_to_back(
            state.requeued.setdefault(queue_id, {}), after, _ids(payload, REQUEUED_HEAD.size)
        )
        state.highest_id = max(state.highest_id, after)
    return kind == CLOSED


def _ids(payload: bytes, at: int) -> tuple[int, ...]:
    return struct.unpack_from(f"<{(len(payload) - at) // 8}Q", payload, at)


def _move_to_back(requeued: dict[int, int], after: int, msg_ids: Iterable[int]) -> None:
    for msg_id in msg_ids:
        requeued.pop(msg_id, None)
        requeued[msg_id] = after


def _frame(payload: bytes) -> bytes:
    return RECORD_HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def _delivered_record(queue_id: int, msg_ids: Sequence[int]) -> bytes:
    return _frame(IDS_HEAD.pack(DELIVERED, queue_id) + struct.pack(f"<{len(msg_ids)}Q", *msg_ids))


def _requeued_record(queue_id: int, after: int, msg_ids: Sequence[int]) -> bytes:
    head = REQUEUED_HEAD.pack(REQUEUED, queue_id, after)
    return _frame(head + struct.pack(f"<{len(msg_ids)}Q", *msg_ids))


def _requeued_records(queue_id: int, requeued: Mapping[int, int]) -> Iterable[bytes]:
    """``requeued`` (msg id -> after, in requeue order) as records: one per run of one
    ``after``."""
    run: list[int] = []
    run_after = 0
    for msg_id, after in requeued.items():
        if run and after != run_after:
            yield _requeued_record(queue_id, run_after, run)
            run = []
        run.append(msg_id)
        run_after = after
    if run:
        yield _requeued_record(queue_id, run_after, run)


class DeliveryLog:
    """The running broker's delivery log; used from the event loop only.

    A write error is logged and the file removed: the next start then counts every recovered
    message as delivered, the safe direction."""

    def __init__(self, data_dir: Path, state: Deliveries, known_queues: Iterable[int]) -> None:
        self._path = data_dir / FILE_NAME
        known = set(known_queues)
        self._marks = {q: m for q, m in state.marks.items() if q in known}
        self._counts = {q: c for q, c in state.counts.items() if q in known and c}
        self._requeued = {q: r for q, r in state.requeued.items() if q in known and r}
        self._fd = -1
        self._size = 0
        self._rewrite()

    def mark(self, queue_id: int, msg_id: int) -> None:
        """Every message of the queue with an id up to ``msg_id`` may have been delivered."""
        if msg_id > self._marks.get(queue_id, 0):
            self._marks[queue_id] = msg_id
            self._append(_frame(MARK_RECORD.pack(MARK, queue_id, msg_id)))

    def delivered(self, queue_id: int, msg_ids: Sequence[int]) -> None:
        """Each of ``msg_ids`` was delivered once more."""
        counts = self._counts.setdefault(queue_id, {})
        for msg_id in msg_ids:
            counts[msg_id] = counts.get(msg_id, 0) + 1
        self._append(_delivered_record(queue_id, msg_ids))

    def requeued(self, queue_id: int, after: int, msg_ids: Sequence[int]) -> None:
        """``msg_ids`` went to the back of the queue, in this order, behind every message with
        an id up to ``after`` (the journal's last id). The broker no longer writes such
        records (a quorum queue puts returns back at the head, as RabbitMQ 4.0 does); those a
        version that followed RabbitMQ 3.10 wrote are still honoured at recovery, and the
        store tests write them with this."""
        _move_to_back(self._requeued.setdefault(queue_id, {}), after, msg_ids)
        self._append(_requeued_record(queue_id, after, msg_ids))

    def forget(self, queue_id: int, msg_id: int) -> None:
        """The queue no longer holds the message: its count and place need not be kept."""
        for kept in (self._counts.get(queue_id), self._requeued.get(queue_id)):
            if kept:
                kept.pop(msg_id, None)

    def close(self) -> None:
        """A clean stop: everything recorded is to be trusted at the next start."""
        if self._fd < 0:
            return
        self._append(_frame(bytes((CLOSED,))))
        if self._fd >= 0:
            try:
                os.fsync(self._fd)
            except OSError as e:
                self._fail(e)
                return
            os.close(self._fd)
            self._fd = -1

    def _append(self, record: bytes) -> None:
        if self._fd < 0:
            return
        try:
            os.write(self._fd, record)
        except OSError as e:
            self._fail(e)
            return
        self._size += len(record)
        if self._size > REWRITE_AFTER:
            self._rewrite()

    def _rewrite(self) -> None:
        """Replace the file by its live content (fsync'd), and append to that."""
        parts = [HEADER.pack(MAGIC, VERSION, boot_id())]
        for queue_id, msg_id in self._marks.items():
            parts.append(_frame(MARK_RECORD.pack(MARK, queue_id, msg_id)))
        for queue_id, counts in self._counts.items():
            pairs = b"".join(COUNT.pack(msg_id, n) for msg_id, n in counts.items())
            parts.append(_frame(IDS_HEAD.pack(COUNTS, queue_id) + pairs))
        for queue_id, requeued in self._requeued.items():
            parts.extend(_requeued_records(queue_id, requeued))
        data = b"".join(parts)
        tmp = self._path.with_suffix(".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self._path)
            fsync_dir(self._path.parent)
            fd = os.open(self._path, os.O_WRONLY | os.O_APPEND)
        except OSError as e:
            self._fail(e)
            return
        if self._fd >= 0:
            os.close(self._fd)
        self._fd, self._size = fd, len(data)

    def _fail(self, error: OSError) -> None:
        log.error(
            "%s: cannot record deliveries (%s); after a restart every recovered message will "
            "be marked redelivered",
            self._path,
            error,
        )
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        try:
            self._path.unlink(missing_ok=True)
        except OSError:
            log.error("%s: cannot remove it either; delete it before the next start", self._path)
