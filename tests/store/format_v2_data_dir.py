"""A small data directory as the broker wrote it in journal format version 2, and what a
broker must find in it.

``tests/store/fixtures/data-v2/`` was written by ``write`` (``python -m
tests.store.format_v2_data_dir tests/store/fixtures/data-v2``) at commit 7fe5bb8, the last
broker writing format 2; ``test_format_v2_recovery`` checks that later brokers recover it.
Format 2 is format 1's traffic (``format_v1_data_dir``) plus the 0-9 classes' PUBLISH
records: file messages in the lane of a durable queue.
"""

from __future__ import annotations

import sys
from pathlib import Path

from broker import Broker
from tests.spec09.flows import declare_queue, peer_on, publish_file, receive_file
from tests.store import format_v1_data_dir

FILE_QUEUE = "files"
#: bodies of the file lane of FILE_QUEUE a broker must deliver after recovery, in order
#: (all redelivered); "f0" was acked before the broker stopped.
FILES = [b"f1", b"f2"]


def write(data_dir: Path) -> None:
    """``format_v1_data_dir``'s queues, then FILE_QUEUE's file lane holding ``FILES``."""
    format_v1_data_dir.write(data_dir)
    with Broker(data_dir=str(data_dir)) as broker:
        peer = peer_on(f"amqp://guest:guest@127.0.0.1:{broker.port}/%2F")
        try:
            declare_queue(peer, 1, FILE_QUEUE, durable=True)
            peer.call(1, "tx.select")
            for i in range(3):
                publish_file(peer, 1, FILE_QUEUE, b"f%d" % i, f"id-{i}")
            peer.call(1, "tx.commit")
            peer.call(1, "file.qos", prefetch_count=1)
            peer.call(1, "file.consume", queue=FILE_QUEUE)
            deliver, _ = receive_file(peer, 1)
            peer.send(1, "file.ack", delivery_tag=deliver.delivery_tag)
            peer.call(1, "tx.commit")
        finally:
            peer.close()


if __name__ == "__main__":
    write(Path(sys.argv[1]))
