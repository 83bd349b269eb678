"""A small data directory as the broker wrote it in journal format version 1, and what a
broker must find in it.

``tests/store/fixtures/data-v1/`` was written by ``write`` (``python -m
tests.store.format_v1_data_dir tests/store/fixtures/data-v1``) at commit 939c476, the last
broker writing format 1; ``test_format_v1_recovery`` checks that later brokers recover it.
Run today, ``write`` produces the current format, which must recover the same content.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pika

from broker import Broker

PERSISTENT = pika.BasicProperties(delivery_mode=2, content_type="text/plain", priority=3)

#: queue -> bodies a broker must deliver after recovery, in order (all redelivered).
EXPECTED = {
    "orders": [b"o2", b"o3", b"o4", b"both"],
    "audit": [b"both"],
}


def write(data_dir: Path) -> None:
    """Durable queues "orders" and "audit" holding ``EXPECTED`` (two of "orders" acked)."""
    with Broker(data_dir=str(data_dir)) as broker:
        url = f"amqp://guest:guest@127.0.0.1:{broker.port}/%2F"
        with pika.BlockingConnection(pika.URLParameters(url)) as conn:
            ch = conn.channel()
            ch.confirm_delivery()
            for queue in EXPECTED:
                ch.queue_declare(queue, durable=True)
                ch.queue_bind(queue, "amq.fanout" if queue == "audit" else "amq.direct", queue)
            for i in range(5):
                ch.basic_publish("amq.direct", "orders", b"o%d" % i, PERSISTENT)
            ch.basic_publish("amq.fanout", "", b"both", PERSISTENT)
            ch.queue_bind("orders", "amq.fanout")
            ch.basic_publish("amq.fanout", "", b"both", PERSISTENT)
            ch.queue_unbind("orders", "amq.fanout")
            for _ in range(2):
                method, _, _ = ch.basic_get("orders", auto_ack=False)
                assert method is not None
                ch.basic_ack(method.delivery_tag)
            method, _, _ = ch.basic_get("audit", auto_ack=True)  # the first "both" of audit


if __name__ == "__main__":
    write(Path(sys.argv[1]))
