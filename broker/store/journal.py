"""The message journal: append-only segment files written by one thread with group commit.

The broker calls ``publish``/``ack`` from its event loop; they encode the record, give it a
message id and queue it, and return at once. A writer thread takes whatever accumulated while
its previous ``fdatasync`` ran, writes it with one ``write`` and one ``fdatasync``, and then
hands the tokens of that group to ``CommitListener.committed`` (from the writer thread: an
asyncio broker passes them on with ``loop.call_soon_threadsafe``). So a confirm waits for at
most two fsyncs, and one fsync covers every publish that arrived in the meantime.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from . import records
from .errors import StoreError, from_os_error
from .files import fsync_dir
from .liveness import Liveness
from .recovery import segment_path

DEFAULT_SEGMENT_SIZE = 64 * 1024 * 1024


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
    ) -> None:
        self._directory = directory
        self._liveness = liveness
        self._next_id = next_msg_id
        self._next_id_written = next_msg_id  # writer thread only
        self._listener = listener
        self._segment_size = segment_size
        # (record bytes, token, msg id or 0, queue count or acked ids)
        self._pending: list[tuple[bytes, object, int, int | Sequence[int]]] = []
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
    ) -> int:
        """Journal ``message`` (of content class ``class_id``) as held by ``queue_ids``;
        returns its message id. ``token`` (if not None) is handed to ``committed`` once the
        record is on disk."""
        with self._cond:
            self._check()
            msg_id = self._next_id
            self._next_id += 1
            data = records.publish_record(msg_id, queue_ids, message, class_id)
            self._pending.append((data, token, msg_id, len(queue_ids)))
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
            self._pending.append((data, token, 0, msg_ids))
            self._cond.notify()

    def barrier(self, token: object) -> None:
        """Hand ``token`` to ``committed`` once everything journaled before it is fsync'd."""
        with self._cond:
            self._check()
            self._pending.append((b"", token, 0, ()))
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
                self._listener.failed([t for _, t, _, _ in batch if t is not None], error)
                return
            tokens = []
            for _, token, msg_id, what in batch:
                if msg_id:
                    self._liveness.published(msg_id, what)  # type: ignore[arg-type]
                    self._next_id_written = msg_id + 1
                else:
                    for acked in what:  # type: ignore[union-attr]
                        self._liveness.acked(acked)
                if token is not None:
                    tokens.append(token)
            self._delete_dead_segments()
            if tokens:
                self._listener.committed(tokens)

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
