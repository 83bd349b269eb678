"""The data directory: opening it (checks, lock, recovery) before the broker serves, then
the journal, the topology file and spill space while it runs.

Layout (see docs/storage-format.md)::

    <data dir>/amqp-spark-data.json   format marker: {"format": ..., "version": 4}
    <data dir>/lock                   flock'd by the broker that uses the directory
    <data dir>/topology.json          durable definitions
    <data dir>/journal/NNNNNNNNNN.seg message journal segments
    <data dir>/deliveries             what queues may have delivered (deliveries.py)
    <data dir>/spill/                 queues larger than memory (emptied at open)
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from . import records
from .deliveries import Deliveries, DeliveryLog, read_deliveries
from .errors import StoreError, from_os_error
from .files import write_atomically
from .journal import COMPACT_LIVE_FRACTION, DEFAULT_SEGMENT_SIZE, CommitListener, Journal
from .recovery import RecoveredJournal, SegmentReader, recover
from .spill import SpillFifo
from .topology import Topology, load_topology, save_topology

log = logging.getLogger("broker.store")

DATA_FORMAT = "amqp-spark-broker-data"
MARKER = "amqp-spark-data.json"
APP_DIR = "amqp-spark-broker"


def default_data_dir() -> Path:
    """$XDG_DATA_HOME/amqp-spark-broker, else ~/.local/share/amqp-spark-broker."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / APP_DIR


class Store:
    """Use ``Store.open(path)``; it raises StoreError (naming the path and what to do) for
    anything that would make the broker lose data, before anything is served."""

    def __init__(
        self,
        data_dir: Path,
        lock_fd: int,
        topology: Topology,
        recovered: RecoveredJournal,
        deliveries: Deliveries,
    ) -> None:
        self.data_dir = data_dir
        self.topology = topology
        self.recovered = recovered
        #: what the recovered messages' queues may have delivered before the restart
        self.deliveries = deliveries
        self.journal: Journal | None = None
        self.delivery_log: DeliveryLog | None = None
        self._lock_fd = lock_fd

    @classmethod
    def open(cls, data_dir: Path) -> Store:
        data_dir = Path(data_dir)
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise from_os_error(data_dir, "cannot create the data directory", e) from e
        lock_fd = _lock(data_dir)
        try:
            _check_marker(data_dir)
            journal_dir = data_dir / "journal"
            spill_dir = data_dir / "spill"
            shutil.rmtree(spill_dir, ignore_errors=True)
            for d in (journal_dir, spill_dir):
                try:
                    d.mkdir(exist_ok=True)
                except OSError as e:
                    raise from_os_error(d, "cannot create", e) from e
            if (data_dir / "amqp0-9").is_dir():
                log.warning(
                    "%s: 0-9 lane files of journal format 1 are not read (see "
                    "docs/storage-format.md, '0-9 file and message lanes')",
                    data_dir / "amqp0-9",
                )
            topology = load_topology(data_dir / "topology.json")
            known = [q.queue_id for q in topology.queues.values()]
            recovered = recover(journal_dir, known)
            deliveries = read_deliveries(data_dir)
            if not deliveries.trusted:
                deliveries.distrust(recovered.queues)
            deliveries.order(recovered.queues)
            # The ids of messages long gone (their segments deleted) are not given again: the
            # delivery log still names some of them.
            recovered.next_msg_id = max(recovered.next_msg_id, deliveries.highest_id + 1)
        except BaseException:
            os.close(lock_fd)
            raise
        return cls(data_dir, lock_fd, topology, recovered, deliveries)

    def start(
        self,
        listener: CommitListener,
        segment_size: int = DEFAULT_SEGMENT_SIZE,
        compact_live_fraction: float = COMPACT_LIVE_FRACTION,
    ) -> Journal:
        """Start the journal's writer thread and the delivery log; from now on messages can be
        journaled and deliveries recorded."""
        known = [q.queue_id for q in self.topology.queues.values()]
        self.delivery_log = DeliveryLog(self.data_dir, self.deliveries, known)
        self.journal = Journal(
            self.data_dir / "journal",
            self.recovered.liveness,
            self.recovered.next_msg_id,
            listener,
            segment_size,
            compact_live_fraction,
        )
        return self.journal

    def save_topology(self) -> None:
        """Persist ``self.topology`` (atomically, fsync'd) after the broker changed it."""
        save_topology(self.data_dir / "topology.json", self.topology)

    def recovered_messages(self, queue_id: int) -> Iterator[tuple[int, int, bytes]]:
        """The unacknowledged messages of a durable queue, in order, as (message id, content
        class id, message bytes); basic ones (``records.BASIC_CLASS``) decode with
        ``decode_message``. ``deliveries`` says which may have been delivered before."""
        for msg_id, journaled in self.recovered_journal_entries(queue_id):
            yield msg_id, journaled.class_id, journaled.message

    def recovered_journal_entries(
        self, queue_id: int
    ) -> Iterator[tuple[int, records.JournaledMessage]]:
        """``recovered_messages`` with all the journal has on each: publish time and ``BCC``
        keys too (format 3 on)."""
        reader = SegmentReader(self.data_dir / "journal")
        try:
            for msg_id, loc in self.recovered.queues.get(queue_id, {}).items():
                yield msg_id, reader.read(loc)
        finally:
            reader.close()

    def spill_fifo(self) -> SpillFifo:
        return SpillFifo(self.data_dir / "spill")

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()
            self.journal = None
        if self.delivery_log is not None:
            self.delivery_log.close()
            self.delivery_log = None
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1


def _lock(data_dir: Path) -> int:
    path = data_dir / "lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise from_os_error(path, "cannot open the lock file", e) from e
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreError(
            data_dir,
            "another broker is using this data directory",
            "Stop that broker, point --data-dir elsewhere, or run with --in-memory",
        ) from None
    return fd


def _check_marker(data_dir: Path) -> None:
    path = data_dir / MARKER
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        others = {p.name for p in data_dir.iterdir()} - {"lock"}
        if others:
            raise StoreError(
                data_dir,
                f"not an amqp-spark broker data directory (no {MARKER}, but other files)",
                "Point --data-dir at an empty or new directory",
            ) from None
        _write_marker(path)
        return
    except (OSError, ValueError) as e:
        raise StoreError(path, f"unreadable format marker ({e})", "Restore it from a backup") from e
    version = doc.get("version") if isinstance(doc, dict) else None
    if not isinstance(version, int) or doc.get("format") != DATA_FORMAT:
        raise StoreError(path, "not an amqp-spark format marker", "Restore it from a backup")
    if version > records.FORMAT_VERSION:
        raise StoreError(
            data_dir,
            f"data directory format version {version} is newer than this broker's "
            f"({records.FORMAT_VERSION})",
            "Run a newer amqp-spark broker on it, or point --data-dir elsewhere",
        )
    if version < records.FORMAT_VERSION:
        # Older segments stay readable; new records are written in this version, which
        # older brokers must refuse from the marker on.
        _write_marker(path)


def _write_marker(path: Path) -> None:
    marker = {"format": DATA_FORMAT, "version": records.FORMAT_VERSION}
    write_atomically(path, json.dumps(marker).encode())
