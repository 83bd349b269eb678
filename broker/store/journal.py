"""The message journal: append-only segment files written by one thread with group commit.

The broker calls ``publish``/``ack`` from its event loop; they encode the record, give it a
message id and queue it, and return at once. A writer thread takes whatever accumulated while
its previous ``fdatasync`` ran, writes it with one ``write`` and one ``fdatasync``, and then
hands the tokens of that group to ``CommitListener.committed`` (from the writer thread: an
asyncio broker passes them on with ``loop.call_soon_threadsafe``). So a confirm waits for at
most two fsyncs, and one fsync covers every publish that arrived in the meantime.

After each group the writer deletes the oldest segments no live message is left in, and
compacts the oldest one if few are (``COMPACT_LIVE_FRACTION``): it appends MOVED copies of its
live messages to the newest segment, fsyncs them, and only then deletes it. A crash in between
leaves both copies, and recovery keeps the MOVED one (``recovery._replay_moved``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from . import records
from .errors import StoreError, from_os_error
from .files import fsync_dir
from .liveness import Liveness
from .recovery import segment_path

DEFAULT_SEGMENT_SIZE = 64 * 1024 * 1024
#: The oldest segment is compacted once at most this fraction of its records hold messages a
#: queue still holds (one old unacknowledged message must not keep every later segment).
COMPACT_LIVE_FRACTION = 0.1
#: Test hook (crash tests): the writer kills its own process (SIGKILL) at this point of a
#: compaction: "torn" half-way through writing the MOVED records, "written" once they are
#: fsync'd but before the old segment is deleted.
CRASH_IN_COMPACTION_ENV = "AMQP_SPARK_STORE_CRASH_IN_COMPACTION"


class CommitListener(Protocol):
    """What the journal tells the broker; both methods are called from the writer thread."""

    def committed(self, tokens: list[object]) -> None:
        """The records these tokens were appended with are on disk (fsync'd)."""

    def failed(self, tokens: list[object], error: StoreError) -> None:
        """These records could not be written; the journal accepts nothing more."""


class Journal:
    def __init__(
        self,
        directory: Path,
        liveness: Liveness,
        next_msg_id: int,
        listener: CommitListener,
        segment_size: int = DEFAULT_SEGMENT_SIZE,
        compact_live_fraction: float = COMPACT_LIVE_FRACTION,
    ) -> None:
        """``compact_live_fraction`` 0 turns compaction off (benchmarks compare)."""
        self._directory = directory
        self._liveness = liveness
        self._next_id = next_msg_id
        self._next_id_written = next_msg_id  # writer thread only
        self._listener = listener
        self._segment_size = segment_size
        self._compact_live_fraction = compact_live_fraction
        self._crash_point = os.environ.get(CRASH_IN_COMPACTION_ENV)
        # (record bytes, token, msg id (0: not a PUBLISH), acking queue id, queue or msg ids)
        self._pending: list[tuple[bytes, object, int, int, Sequence[int]]] = []
        self._cond = threading.Condition()
        self._closing = False
        self._error: StoreError | None = None
        numbers = liveness.segment_numbers
        self._segment = numbers[-1] if numbers else 0
        self._fd = -1
        if numbers and _segment_version(segment_path(directory, self._segment)) == (
            records.FORMAT_VERSION
        ):
            path = segment_path(directory, self._segment)
            self._fd = self._open(path, os.O_WRONLY | os.O_APPEND)
            self._size = os.fstat(self._fd).st_size
        else:  # no segment yet, or the last one is of an older format: records go in a new one
            self._rotate()
        self._thread = threading.Thread(target=self._run, name="broker-journal", daemon=True)
        self._thread.start()

    # -- called by the broker ------------------------------------------------------------

    def publish(
        self,
        queue_ids: Sequence[int],
        message: bytes,
        token: object = None,
        class_id: int = records.BASIC_CLASS,
        blind_keys: tuple[str, ...] = (),
    ) -> int:
        """Journal ``message`` (of content class ``class_id``, published with the ``BCC``
        keys ``blind_keys``) as held by ``queue_ids``, with the time now; returns its message
        id. ``token`` (if not None) is handed to ``committed`` once the record is on disk."""
        journaled = records.JournaledMessage(
            class_id, message, time.time_ns() // 1_000_000, blind_keys
        )
        with self._cond:
            self._check()
            msg_id = self._next_id
            self._next_id += 1
            data = records.publish_record(msg_id, queue_ids, journaled)
            self._pending.append((data, token, msg_id, 0, queue_ids))
            self._cond.notify()
        return msg_id

    def ack(self, queue_id: int, msg_ids: Sequence[int], token: object = None) -> None:
        """Journal that ``queue_id`` no longer holds ``msg_ids`` (acked, purged, expired, or
        the queue was deleted)."""
        if not msg_ids:
            return
        data = records.ack_record(queue_id, msg_ids)
        with self._cond:
            self._check()
            self._pending.append((data, token, 0, queue_id, msg_ids))
            self._cond.notify()

    def barrier(self, token: object) -> None:
        """Hand ``token`` to ``committed`` once everything journaled before it is fsync'd."""
        with self._cond:
            self._check()
            self._pending.append((b"", token, 0, 0, ()))
            self._cond.notify()

    def check(self) -> None:
        """Raise the StoreError that stopped the journal, if any."""
        with self._cond:
            self._check()

    def close(self) -> None:
        """Write and fsync what is pending, then stop the writer thread."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def segments(self) -> list[int]:
        return self._liveness.segment_numbers

    # -- the writer thread ---------------------------------------------------------------

    def _check(self) -> None:
        if self._error is not None:
            raise self._error
        if self._closing:
            raise StoreError(self._directory, "the journal is closed", "Open the store again")

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                if not self._pending:
                    return
                batch, self._pending = self._pending, []
            try:
                self._write(b"".join(item[0] for item in batch))
            except StoreError as error:
                with self._cond:
                    self._error = error
                    batch += self._pending
                    self._pending = []
                self._listener.failed([item[1] for item in batch if item[1] is not None], error)
                return
            tokens = []
            liveness = self._liveness
            for _, token, msg_id, queue_id, ids in batch:
                if msg_id:
                    if len(ids) == 1:
                        liveness.published(msg_id, 1)
                    else:
                        liveness.published_to(msg_id, tuple(ids))
                    self._next_id_written = msg_id + 1
                elif queue_id:
                    liveness.acks_recorded()
                    for acked in ids:
                        liveness.acked(acked, queue_id)
                if token is not None:
                    tokens.append(token)
            self._delete_dead_segments()
            if tokens:
                self._listener.committed(tokens)
            try:
                self._compact_sparse_head()
            except StoreError as error:
                with self._cond:
                    self._error = error
                    failed, self._pending = self._pending, []
                self._listener.failed([item[1] for item in failed if item[1] is not None], error)
                return

    def _write(self, data: bytes) -> None:
        if self._size >= self._segment_size:
            self._rotate()
        path = segment_path(self._directory, self._segment)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fdatasync(self._fd)
        except OSError as e:
            # Cut off what was half written so the file ends with a whole record again.
            # If even that fails, recovery cuts the torn tail off instead.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            raise from_os_error(path, "cannot write the journal", e) from e
        self._size += len(data)

    def _rotate(self) -> None:
        """Start the next segment file (the last one is already fsync'd)."""
        number = self._segment + 1
        path = segment_path(self._directory, number)
        fd = self._open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL)
        try:
            os.write(fd, records.segment_header(number))
            os.fsync(fd)
            fsync_dir(self._directory)
        except OSError as e:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise from_os_error(path, "cannot start a journal segment", e) from e
        if self._fd >= 0:
            os.close(self._fd)
        self._fd, self._segment, self._size = fd, number, records.SEGMENT_HEADER.size
        # Ids are written in the order they were given, so the next PUBLISH written has this id.
        self._liveness.open_segment(number, self._next_id_written)

    def _delete_dead_segments(self) -> None:
        for number in self._liveness.pop_dead_head():
            segment_path(self._directory, number).unlink(missing_ok=True)

    def _compact_sparse_head(self) -> None:
        """Compact the oldest segment if few of its messages are live (one per group, after
        the group's confirms went out, to bound what a group waits for), then delete it."""
        number = self._liveness.sparse_head(self._compact_live_fraction)
        if number is not None:
            self._compact(number)
            self._delete_dead_segments()

    def _compact(self, number: int) -> None:
        """Copy the live messages of segment ``number`` (the oldest, not the last) to the end
        of the journal as MOVED records, fsync'd; its file can then go."""
        path = segment_path(self._directory, number)
        liveness = self._liveness
        moved: list[tuple[int, tuple[int, ...]]] = []
        data = []
        try:
            with open(path, "rb") as f:
                version = _segment_version(path)
                for kind, msg_id, payload in records.iter_publishes(f.read(), version):
                    if not liveness.is_live_in(number, msg_id, kind == records.MOVED):
                        continue
                    queue_ids = liveness.holders(msg_id) or records.publish_queue_ids(
                        payload, version
                    )
                    message = records.publish_message(payload, version)
                    data.append(records.publish_record(msg_id, queue_ids, message, records.MOVED))
                    moved.append((msg_id, queue_ids))
        except OSError as e:
            raise from_os_error(path, "cannot read the journal segment to compact it", e) from e
        except ValueError as e:
            raise StoreError(path, f"cannot compact: {e}", "Restore it from a backup") from e
        if data:
            blob = b"".join(data)
            if self._crash_point == "torn":
                self._write(blob[: len(blob) // 2])
                os.kill(os.getpid(), signal.SIGKILL)
            self._write(blob)
            if self._crash_point == "written":
                os.kill(os.getpid(), signal.SIGKILL)
        for msg_id, queue_ids in moved:
            liveness.moved(msg_id, queue_ids)

    def _open(self, path: Path, flags: int) -> int:
        try:
            return os.open(path, flags, 0o644)
        except OSError as e:
            raise from_os_error(path, "cannot open the journal segment", e) from e


def _segment_version(path: Path) -> int:
    """The format version in the header of a segment recovery has checked."""
    try:
        with open(path, "rb") as f:
            return int(records.SEGMENT_HEADER.unpack(f.read(records.SEGMENT_HEADER.size))[1])
    except OSError as e:
        raise from_os_error(path, "cannot read the journal segment", e) from e
