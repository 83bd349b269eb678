"""A small data directory as the broker wrote it in journal format version 3, and what a
broker must find in it.

``tests/store/fixtures/data-v3/`` was written by ``write`` (``python -m
tests.store.format_v3_data_dir tests/store/fixtures/data-v3``) at commit a66a041, the last
broker writing format 3; ``test_format_v3_recovery`` checks that later brokers recover it.
Format 3 has no delivery log: its messages all come back redelivered, and a quorum queue's
``x-delivery-count`` starts again at 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pika

from broker import Broker
from tests.store import format_v2_data_dir

QUORUM_QUEUE = "quorum"
#: bodies of QUORUM_QUEUE a broker must deliver after recovery, in journal order; "q0" was
#: delivered and returned (nacked) before the broker stopped, "q1" never delivered.
QUORUM_BODIES = [b"q0", b"q1"]


def write(data_dir: Path) -> None:
    """``format_v2_data_dir``'s queues, then QUORUM_QUEUE holding ``QUORUM_BODIES``."""
    format_v2_data_dir.write(data_dir)
    with Broker(data_dir=str(data_dir)) as broker:
        url = f"amqp://guest:guest@127.0.0.1:{broker.port}/%2F"
        with pika.BlockingConnection(pika.URLParameters(url)) as conn:
            ch = conn.channel()
            ch.confirm_delivery()
            ch.queue_declare(QUORUM_QUEUE, durable=True, arguments={"x-queue-type": "quorum"})
            for body in QUORUM_BODIES:
                ch.basic_publish("", QUORUM_QUEUE, body)
            method, _, _ = ch.basic_get(QUORUM_QUEUE, auto_ack=False)
            assert method is not None
            ch.basic_nack(method.delivery_tag, requeue=True)  # to the back: q1, q0


if __name__ == "__main__":
    write(Path(sys.argv[1]))
