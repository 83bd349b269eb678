"""Durability: the store's journal on its own, and persistent publishing through the broker.

* journal group commit: 8 producer threads journal persistent 100-byte messages, each with
  at most 1000 unconfirmed (a client's confirm window); a message counts once the journal
  reported it fsync'd (what a publisher confirm waits for). Also the number of messages each
  fdatasync covered.
* journal disk with stragglers: 1,000,000 persistent 100-byte messages (200,000 in 4 MiB
  segments with ``--quick``) journaled and acked, except every 1000th, which stays unacked:
  the bytes of segment files left, with compaction (``journal.COMPACT_LIVE_FRACTION``) and,
  as the reference, without (fraction 0: only segments with no live message are deleted, as
  before format 3).
* recovery: opening a data directory whose journal holds 1,000,000 persistent messages
  (100,000 with ``--quick``), 100-byte bodies over 3 durable queues, a tenth of them acked.
* persistent publish with confirms to a durable queue, the bundled broker (``python -m
  broker --data-dir`` under the temp dir) vs RabbitMQ (its private node, also under the temp
  dir: the same disk), with bench_broker's pipelined client.
* recovery through the broker: from starting the program on a journal of 1,000,000
  persistent messages (100,000 with ``--quick``) until a client sees them in their queue.
* a queue larger than memory: the broker's peak RSS while one queue is filled with
  10,000,000 100-byte messages (1,000,000 with ``--quick``) and drained again (the tail of
  the queue is spilled to disk past ``ReadyMessages.SPILL_AFTER_*``).
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import cast

import pika

from amqp_protocol import SPEC_0_9_1
from benchmarks.bench_broker import Client, M, _timed
from benchmarks.common import Row, row
from broker.store import Store, StoreError
from broker.store.journal import COMPACT_LIVE_FRACTION
from testbed.broker_process import BrokerProcess
from testbed.rabbitmq import RabbitMQUnavailable, rabbitmq
from testbed.store_data import declare_queues, persistent, write_journal

PRODUCERS = 8
WINDOW = 1000
DATA_ROOT = Path(tempfile.gettempdir())  # the same disk as RabbitMQ's private node
QUEUE = "bench-durable"
PERSISTENT = SPEC_0_9_1.properties("basic")(delivery_mode=2)


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


STRAGGLER_EVERY = 1000


def journal_bytes_with_stragglers(
    data_dir: Path, messages: int, segment_size: int, compact_live_fraction: float
) -> int:
    """Bytes of journal segments once ``messages`` were journaled and all but every
    ``STRAGGLER_EVERY``-th acked (in chunks, as a consumer's acks of one event-loop turn)."""
    (queue_id,) = declare_queues(data_dir, ["q"]).values()
    store = Store.open(data_dir)
    listener = _WindowListener()
    journal = store.start(listener, segment_size, compact_live_fraction)
    message = persistent(bytes(100))
    window = threading.Semaphore(WINDOW)
    acks: list[int] = []
    for i in range(messages):
        if not window.acquire(timeout=60):
            raise TimeoutError("no confirm in 60 s")
        msg_id = journal.publish([queue_id], message, token=window)
        if i % STRAGGLER_EVERY:
            acks.append(msg_id)
        if len(acks) >= WINDOW:
            journal.ack(queue_id, acks)
            acks = []
    journal.ack(queue_id, acks)
    for _ in range(WINDOW):  # every confirm is in
        window.acquire(timeout=60)
    for _ in range(3):  # groups after the last acks: the writer compacts one segment per group
        done = threading.Semaphore(0)
        journal.barrier(done)
        done.acquire(timeout=60)
    size = sum(p.stat().st_size for p in (data_dir / "journal").glob("*.seg"))
    store.close()
    if listener.error is not None:
        raise listener.error
    return size


def recovery_seconds(data_dir: Path, messages: int) -> float:
    queue_ids = list(declare_queues(data_dir, ["a", "b", "c"]).values())
    write_journal(data_dir, queue_ids, messages)
    start = time.perf_counter()
    store = Store.open(data_dir)
    elapsed = time.perf_counter() - start
    store.close()
    return elapsed


def _persistent_publisher(host: str, port: int) -> Client:
    """A client publishing persistent messages with confirms to the empty durable QUEUE."""
    client = Client(host, port)
    client.call(M("queue.declare")(queue=QUEUE, durable=True), "queue.declare-ok")
    client.call(M("queue.purge")(queue=QUEUE), "queue.purge-ok")
    client.call(M("confirm.select")(), "confirm.select-ok")
    client.props = PERSISTENT
    return client


def publish_persistent_rate(host: str, port: int, messages: int) -> float:
    """msgs/s of persistent 100-byte publishes to one durable queue, all confirmed (the
    pipelined client of bench_broker, at most its WINDOW unconfirmed)."""
    client = _persistent_publisher(host, port)
    try:
        began = time.perf_counter()
        client.publish([QUEUE], messages, confirm=True)
        rate = messages / (time.perf_counter() - began)
        client.call(M("queue.delete")(queue=QUEUE), "queue.delete-ok")
    finally:
        client.close()
    return rate


def consume_persistent_rate(host: str, port: int, messages: int) -> float:
    """msgs/s of consuming (and acking, bench_broker's client) a backlog of ``messages``
    persistent 100-byte messages from one durable queue: every delivery is recorded in the
    data directory's delivery log (``broker/store/deliveries.py``) before it goes out."""
    client = _persistent_publisher(host, port)
    try:
        client.publish([QUEUE], messages, confirm=True)
        rate = _timed(lambda: Client(host, port).consume([QUEUE], messages), messages)
        client.call(M("queue.delete")(queue=QUEUE), "queue.delete-ok")
    finally:
        client.close()
    return rate


def broker_recovery_seconds(data_dir: Path, messages: int) -> float:
    """Seconds from starting ``python -m broker`` on a journal of ``messages`` persistent
    messages (a tenth of them acked) until a client sees them all in their queue."""
    (queue_id,) = declare_queues(data_dir, [QUEUE]).values()
    write_journal(data_dir, [queue_id], messages)
    began = time.perf_counter()
    with BrokerProcess(data_dir, "--log-level", "WARNING") as broker:
        client = Client("127.0.0.1", broker.port)
        ok = client.call(M("queue.declare")(queue=QUEUE, passive=True), "queue.declare-ok")
        elapsed = time.perf_counter() - began
        client.close()
    expected = messages - messages // 10
    if ok.message_count != expected:  # type: ignore[attr-defined]
        raise AssertionError(f"recovered {ok.message_count} of {expected}")  # type: ignore[attr-defined]
    return elapsed


def peak_rss_with_a_long_queue(data_dir: Path, messages: int) -> tuple[float, float]:
    """The broker's peak RSS (MiB, VmHWM) while one queue fills with ``messages`` 100-byte
    messages and is then consumed completely, and the seconds the whole run took."""
    began = time.perf_counter()
    with BrokerProcess(data_dir, "--log-level", "WARNING") as broker:
        client = Client("127.0.0.1", broker.port)
        client.call(M("queue.declare")(queue=QUEUE, durable=True), "queue.declare-ok")
        client.publish([QUEUE], messages, confirm=False)
        ok = client.call(M("queue.declare")(queue=QUEUE, passive=True), "queue.declare-ok")
        if ok.message_count != messages:  # type: ignore[attr-defined]
            raise AssertionError(f"{ok.message_count} of {messages} queued")  # type: ignore[attr-defined]
        client.consume([QUEUE], messages)
        client.close()
        assert broker.proc is not None
        status = Path(f"/proc/{broker.proc.pid}/status").read_text()
    peak_kib = int(status.split("VmHWM:")[1].split()[0])
    return peak_kib / 1024, time.perf_counter() - began


def broker_rows(quick: bool, tmp: Path) -> list[Row]:
    """Persistent publish with confirms, bundled vs RabbitMQ on the same disk, and recovery
    of a million messages (100,000 with --quick) through the broker."""
    messages = 20_000 if quick else 100_000
    with BrokerProcess(tmp / "broker", "--log-level", "WARNING") as broker:
        ours = publish_persistent_rate("127.0.0.1", broker.port, messages)
        consumed = consume_persistent_rate("127.0.0.1", broker.port, messages)
    reference = consumed_reference = None
    with contextlib.suppress(RabbitMQUnavailable), rabbitmq() as url:
        params = pika.URLParameters(url)
        reference = publish_persistent_rate(params.host, params.port, messages)
        consumed_reference = consume_persistent_rate(params.host, params.port, messages)
    count = 100_000 if quick else 1_000_000
    long_queue = 1_000_000 if quick else 10_000_000
    peak_mib, seconds = peak_rss_with_a_long_queue(tmp / "long-queue", long_queue)
    return [
        row(
            "broker: persistent publish with confirms, durable queue (fsync'd)",
            "msgs/s",
            ours,
            reference,
            "RabbitMQ" if reference else "",
        ),
        row(
            "broker: consume + ack a backlog of persistent msgs, durable queue",
            "msgs/s",
            consumed,
            consumed_reference,
            "RabbitMQ" if consumed_reference else "",
        ),
        row(
            f"broker: start + recover {count:,} persistent messages (tenth acked)",
            "s",
            broker_recovery_seconds(tmp / "recovery-broker", count),
        ),
        row(
            f"broker: peak RSS, queue of {long_queue:,} 100-byte msgs filled+drained",
            "MiB",
            peak_mib,
        ),
        row(f"broker: fill + drain a queue of {long_queue:,} 100-byte msgs", "s", seconds),
    ]


def run(quick: bool) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory(dir=DATA_ROOT) as tmp:
        rate, per_fsync = journal_rate(Path(tmp) / "rate", 50_000 if quick else 400_000)
        rows.append(row(f"journal: persistent msgs fsync'd, {PRODUCERS} producers", "msg/s", rate))
        rows.append(row("journal: messages per fdatasync (group commit)", "msg", per_fsync))
        shutil.rmtree(Path(tmp) / "rate")
        messages, segment_size = (200_000, 4 << 20) if quick else (1_000_000, 64 << 20)
        sizes = []
        for fraction in (COMPACT_LIVE_FRACTION, 0.0):
            where = Path(tmp) / f"stragglers-{fraction}"
            sizes.append(journal_bytes_with_stragglers(where, messages, segment_size, fraction))
            shutil.rmtree(where)
        rows.append(
            row(
                f"journal: disk after {messages:,} msgs, every {STRAGGLER_EVERY}th unacked",
                "MiB",
                sizes[0] / (1 << 20),
                sizes[1] / (1 << 20),
                "without compaction",
            )
        )
        count = 100_000 if quick else 1_000_000
        seconds = recovery_seconds(Path(tmp) / "recovery", count)
        rows.append(row(f"store: open + recover {count:,} persistent messages", "s", seconds))
        rows += broker_rows(quick, Path(tmp))
    return rows


if __name__ == "__main__":
    for r in run("--quick" in sys.argv):
        ratio = f"{r['ours'] / r['reference']:.2f}" if r["reference"] else "-"
        print(f"{r['figure']:<70} {r['ours']:>12.2f} {r['reference'] or 0:>12.2f}  ratio {ratio}")
