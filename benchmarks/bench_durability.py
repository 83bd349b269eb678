"""Durability: the store's journal on its own, and persistent publishing through the broker.

* journal group commit: 8 producer threads journal persistent 100-byte messages, each with
  at most 1000 unconfirmed (a client's confirm window); a message counts once the journal
  reported it fsync'd (what a publisher confirm waits for). Also the number of messages each
  fdatasync covered.
* recovery: opening a data directory whose journal holds 1,000,000 persistent messages
  (100,000 with ``--quick``), 100-byte bodies over 3 durable queues, a tenth of them acked.
* persistent publish with confirms to a durable queue, the bundled broker vs RabbitMQ on the
  same disk: only once the broker journals messages (until then the row is left out and a
  note says so on stderr).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import cast

from benchmarks.common import Row, row
from broker.store import Store, StoreError
from tests.store.conftest import declare_queues
from tests.store.messages import persistent
from tests.store.test_recovery_scale import write_journal

PRODUCERS = 8
WINDOW = 1000
DATA_ROOT = Path(tempfile.gettempdir())  # the same disk as RabbitMQ's private node


class _WindowListener:
    """Releases the producer's window slot of each committed message; counts fsync groups."""

    def __init__(self) -> None:
        self.groups = 0
        self.error: StoreError | None = None

    def committed(self, tokens: list[object]) -> None:
        self.groups += 1
        for slot in tokens:
            cast(threading.Semaphore, slot).release()

    def failed(self, tokens: list[object], error: StoreError) -> None:
        self.error = error
        for slot in tokens:
            cast(threading.Semaphore, slot).release()


def journal_rate(data_dir: Path, messages: int) -> tuple[float, float]:
    """Messages per second fsync'd with group commit, and messages per fsync. Each producer
    keeps at most ``WINDOW`` messages unconfirmed, like a client's confirm window."""
    (queue_id,) = declare_queues(data_dir, ["q"]).values()
    store = Store.open(data_dir)
    listener = _WindowListener()
    journal = store.start(listener)
    message = persistent(bytes(100))
    per_thread = messages // PRODUCERS

    def produce() -> None:
        window = threading.Semaphore(WINDOW)
        for _ in range(per_thread):
            if not window.acquire(timeout=60):
                raise TimeoutError("no confirm in 60 s")
            journal.publish([queue_id], message, token=window)
        for _ in range(WINDOW):  # every confirm is in
            window.acquire(timeout=60)

    threads = [threading.Thread(target=produce) for _ in range(PRODUCERS)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    store.close()
    if listener.error is not None:
        raise listener.error
    return per_thread * PRODUCERS / elapsed, per_thread * PRODUCERS / listener.groups


def recovery_seconds(data_dir: Path, messages: int) -> float:
    queue_ids = list(declare_queues(data_dir, ["a", "b", "c"]).values())
    write_journal(data_dir, queue_ids, messages)
    start = time.perf_counter()
    store = Store.open(data_dir)
    elapsed = time.perf_counter() - start
    store.close()
    return elapsed


def broker_is_durable() -> bool:
    from broker.model.persistence import InMemory
    from broker.server.app import make_persistence

    with tempfile.TemporaryDirectory(dir=DATA_ROOT) as d:
        return not isinstance(make_persistence(d), InMemory)


def run(quick: bool) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory(dir=DATA_ROOT) as tmp:
        rate, per_fsync = journal_rate(Path(tmp) / "rate", 50_000 if quick else 400_000)
        rows.append(row(f"journal: persistent msgs fsync'd, {PRODUCERS} producers", "msg/s", rate))
        rows.append(row("journal: messages per fdatasync (group commit)", "msg", per_fsync))
        shutil.rmtree(Path(tmp) / "rate")
        count = 100_000 if quick else 1_000_000
        seconds = recovery_seconds(Path(tmp) / "recovery", count)
        rows.append(row(f"recovery of {count:,} persistent messages", "s", seconds))
    if not broker_is_durable():
        print(
            "bench_durability: skipped 'persistent publish with confirms, bundled vs RabbitMQ': "
            "the bundled broker does not journal messages yet (broker.server.app."
            "make_persistence returns InMemory)",
            file=sys.stderr,
        )
    return rows
