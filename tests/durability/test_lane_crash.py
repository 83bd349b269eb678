"""kill -9 of the broker program and the 0-9 file lane of a durable queue: what a committed
transaction published comes back exactly once, in order and redelivered, and what it acked
does not."""

from __future__ import annotations

from pathlib import Path

from testbed.broker_process import BrokerProcess
from tests.spec09.flows import declare_queue, peer_on, publish_file, receive_file

QUEUE = "files"
COMMITTED = 12
ACKED = 5


def test_committed_file_messages_survive_kill_9_and_committed_acks_hold(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    broker = BrokerProcess(data_dir).start()
    try:
        peer = peer_on(broker.url)
        declare_queue(peer, 1, QUEUE, durable=True)
        peer.call(1, "tx.select")
        for i in range(COMMITTED):
            publish_file(peer, 1, QUEUE, b"f%d" % i, f"id-{i}")
        peer.call(1, "tx.commit")
        peer.call(1, "file.qos", prefetch_count=ACKED)
        peer.call(1, "file.consume", queue=QUEUE)
        for _ in range(ACKED):
            deliver, _ = receive_file(peer, 1)
            peer.send(1, "file.ack", delivery_tag=deliver.delivery_tag)
        peer.call(1, "tx.commit")
        publish_file(peer, 1, QUEUE, b"never committed", "id-uncommitted")
        broker.kill()
        peer.close()
        broker.start()
        peer = peer_on(broker.url)
        peer.call(1, "file.consume", queue=QUEUE, no_ack=True)
        received = []
        for _ in range(COMMITTED - ACKED):
            deliver, body = receive_file(peer, 1)
            received.append((body, deliver.redelivered))
        assert received == [(b"f%d" % i, True) for i in range(ACKED, COMMITTED)]
        peer.nothing(1, "file.open")
        peer.close()
    finally:
        broker.kill()
