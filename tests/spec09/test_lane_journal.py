"""The file and message lanes of durable queues in the broker's journal (rules file:01,
message:01): what comes back after a restart, and that it is the journal that holds it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from broker import Broker
from broker.store import Store
from tests.durability.test_restart import _SlowSync

from .flows import declare_queue, peer_on, publish_file, transfer
from .peer import Peer

rule = pytest.mark.spec_rule
FILE_CLASS_ID = 70


def receive_files(peer: Peer, count: int) -> list[tuple[bytes, bool, str, object]]:
    """(body, redelivered, identifier, content type) of the next ``count`` file deliveries on
    channel 1, each acked."""
    out = []
    for _ in range(count):
        peer.expect(1, "file.open")
        peer.send(1, "file.open-ok", staged_size=0)
        stage = peer.expect(1, "file.stage")
        deliver = peer.expect(1, "file.deliver").method
        peer.send(1, "file.ack", delivery_tag=deliver.delivery_tag)
        out.append((stage.body, deliver.redelivered, deliver.identifier, stage.properties))
    return [(b, r, i, p.content_type) for b, r, i, p in out]


@rule("file:01")
def test_unacked_file_messages_come_back_in_order_with_their_properties(
    restarted: Callable[[], Broker], name: str
) -> None:
    peer = peer_on(restarted().url)
    declare_queue(peer, 1, name, durable=True)
    for i in range(4):
        properties = {"content_type": f"text/f{i}"}
        publish_file(peer, 1, name, b"f%d" % i, f"{name}-{i}", properties=properties)
    peer.call(1, "file.qos", prefetch_count=1)
    peer.call(1, "file.consume", queue=name, consumer_tag="first")
    assert receive_files(peer, 1) == [(b"f0", False, f"{name}-0", "text/f0")]
    peer.close()
    peer = peer_on(restarted().url)
    peer.call(1, "file.consume", queue=name)
    assert receive_files(peer, 3) == [
        (b"f%d" % i, True, f"{name}-{i}", f"text/f{i}") for i in range(1, 4)
    ]
    peer.close()
    peer = peer_on(restarted().url)
    assert peer.call(1, "queue.declare", queue=name, passive=True).message_count == 0
    peer.close()


def test_lane_messages_are_journal_records_of_their_class(
    restarted: Callable[[], Broker], name: str, tmp_path: Path
) -> None:
    peer = peer_on(restarted().url)
    declare_queue(peer, 1, name, durable=True)
    publish_file(peer, 1, name, b"a file", f"{name}-file")
    transfer(peer, 1, name, b"a persistent message", delivery_mode=2)
    peer.close()
    restarted().stop()  # the journal writes what is pending when it closes
    store = Store.open(tmp_path)
    try:
        (queue,) = store.topology.queues.values()
        classes = [class_id for _, class_id, _ in store.recovered_messages(queue.queue_id)]
    finally:
        store.close()
    assert classes == [FILE_CLASS_ID, 120]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "amqp-spark-data.json",
        "deliveries",
        "journal",
        "lock",
        "spill",
        "topology.json",
    ]


def test_a_file_routed_to_two_durable_queues_is_acked_per_queue(
    restarted: Callable[[], Broker], name: str
) -> None:
    peer = peer_on(restarted().url)
    for queue in ("a", "b"):
        declare_queue(peer, 1, f"{name}-{queue}", durable=True)
        peer.call(1, "queue.bind", queue=f"{name}-{queue}", exchange="amq.fanout")
    publish_file(peer, 1, "", b"to both", f"{name}-both", exchange="amq.fanout")
    peer.call(1, "file.consume", queue=f"{name}-a")
    assert receive_files(peer, 1) == [(b"to both", False, f"{name}-both", None)]
    peer.close()
    peer = peer_on(restarted().url)
    counts = [
        peer.call(1, "queue.declare", queue=f"{name}-{queue}", passive=True).message_count
        for queue in ("a", "b")
    ]
    assert counts == [0, 1]
    peer.close()


def test_tx_commit_ok_of_file_publishes_comes_only_after_fsync(
    broker_with: Callable[..., Broker], tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    peer = peer_on(broker_with(data_dir=str(tmp_path)).url)
    try:
        declare_queue(peer, 1, name, durable=True)
        peer.call(1, "tx.select")
        publish_file(peer, 1, name, b"in a transaction", f"{name}-tx")
        slow = _SlowSync(os.fdatasync, 0.3)
        monkeypatch.setattr(os, "fdatasync", slow)
        began = time.monotonic()
        peer.call(1, "tx.commit")
        committed = time.monotonic()
        monkeypatch.undo()
        assert slow.done and began < slow.done[0] <= committed
    finally:
        peer.close()
