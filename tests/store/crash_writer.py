"""The process the crash tests kill -9: publishes persistent messages to several durable
queues through the journal (and acks some), printing each confirm and each durable ack.

    python -m tests.store.crash_writer DATA_DIR QUEUE_ID... [--ack | --sparse]

``--ack`` acks the oldest five of every seven messages, like a consumer behind the publisher;
``--sparse`` acks every message but one in ``SPARSE_KEEP`` at once, so that old segments are
compacted (``journal.COMPACT_LIVE_FRACTION``). Prints ``C <queue id> <seq>`` once a publish
is on disk, ``R <queue id> <seq>`` before an ack is requested, ``A <queue id> <seq>`` once
an ack is; message bodies are ``<seq>``.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import cast

from broker.store import Store, StoreError
from testbed.store_data import persistent

_STDOUT = threading.Lock()
SPARSE_KEEP = 20


def emit(lines: str) -> None:
    """Whole lines, flushed; the journal's thread and the main thread both print."""
    with _STDOUT:
        sys.stdout.write(lines)
        sys.stdout.flush()


class PrintingListener:
    def committed(self, tokens: list[object]) -> None:
        emit("".join("{} {} {}\n".format(*cast(tuple[str, int, int], t)) for t in tokens))

    def failed(self, tokens: list[object], error: StoreError) -> None:
        emit(f"FAILED {error}\n")


def main() -> None:
    data_dir = Path(sys.argv[1])
    queue_ids = [int(a) for a in sys.argv[2:] if not a.startswith("--")]
    ack = "--ack" in sys.argv
    sparse = "--sparse" in sys.argv
    store = Store.open(data_dir)
    journal = store.start(PrintingListener(), segment_size=256 * 1024)
    published: dict[int, list[tuple[int, int]]] = {q: [] for q in queue_ids}
    for seq in range(10_000_000):  # bounded; the test kills the process long before
        for q in queue_ids:
            msg_id = journal.publish([q], persistent(b"%d" % seq), token=("C", q, seq))
            published[q].append((seq, msg_id))
        if ack and seq % 7 == 6:
            for q in queue_ids:  # ack the oldest few, like a consumer behind the publisher
                done, published[q] = published[q][:5], published[q][5:]
                # "R" before the ack is handed over: an ack may reach the disk before its "A"
                # line is printed, and the test must know which messages may be gone.
                emit("".join(f"R {q} {s}\n" for s, _ in done))
                for s, msg_id in done:
                    journal.ack(q, [msg_id], token=("A", q, s))
        if sparse and seq % SPARSE_KEEP:
            for q in queue_ids:
                s, msg_id = published[q].pop()
                emit(f"R {q} {s}\n")
                journal.ack(q, [msg_id], token=("A", q, s))


if __name__ == "__main__":
    main()
