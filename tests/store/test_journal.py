"""The journal on its own: what is recovered after a clean restart, group commit, segment
deletion."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import cast

from broker.store import Store
from testbed.store_data import declare_queues, persistent, recovered_bodies
from tests.store.listeners import CollectingListener


def test_unacked_messages_are_recovered_in_order_and_acked_ones_are_not(data_dir: Path) -> None:
    ids = declare_queues(data_dir, ["a", "b"])
    store = Store.open(data_dir)
    listener = CollectingListener()
    journal = store.start(listener)
    msg_ids = [journal.publish([ids["a"]], persistent(b"a%d" % i), token=i) for i in range(10)]
    journal.publish([ids["a"], ids["b"]], persistent(b"both"), token="both")
    journal.ack(ids["a"], msg_ids[:3])
    listener.wait_for(11)
    store.close()

    store = Store.open(data_dir)
    try:
        assert recovered_bodies(store, ids["a"]) == [b"a%d" % i for i in range(3, 10)] + [b"both"]
        assert recovered_bodies(store, ids["b"]) == [b"both"]
        assert store.recovered.next_msg_id == msg_ids[-1] + 2
    finally:
        store.close()


def test_messages_of_a_deleted_queue_are_not_recovered(data_dir: Path) -> None:
    ids = declare_queues(data_dir, ["gone", "kept"])
    store = Store.open(data_dir)
    listener = CollectingListener()
    journal = store.start(listener)
    journal.publish([ids["gone"], ids["kept"]], persistent(b"m"), token=1)
    listener.wait_for(1)
    del store.topology.queues[("/", "gone")]
    store.save_topology()
    store.close()

    store = Store.open(data_dir)
    try:
        assert set(store.recovered.queues) == {ids["kept"]}
        assert recovered_bodies(store, ids["kept"]) == [b"m"]
    finally:
        store.close()


def test_concurrent_publishes_share_fsyncs(data_dir: Path) -> None:
    (queue_id,) = declare_queues(data_dir, ["q"]).values()
    store = Store.open(data_dir)
    listener = CollectingListener()
    journal = store.start(listener)
    per_thread = 500

    def produce(n: int) -> None:
        for i in range(per_thread):
            journal.publish([queue_id], persistent(b"x"), token=(n, i))

    threads = [threading.Thread(target=produce, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    listener.wait_for(8 * per_thread)
    store.close()
    assert sorted(cast(list[tuple[int, int]], listener.committed_tokens)) == [
        (n, i) for n in range(8) for i in range(per_thread)
    ]
    assert listener.groups < 8 * per_thread / 4


def test_segments_whose_messages_are_all_acked_are_deleted(data_dir: Path) -> None:
    (queue_id,) = declare_queues(data_dir, ["q"]).values()
    store = Store.open(data_dir)
    listener = CollectingListener()
    journal = store.start(listener, segment_size=4096)
    msg_ids = []
    for i in range(200):
        msg_ids.append(journal.publish([queue_id], persistent(b"%0100d" % i), token=i))
        listener.wait_for(i + 1)  # one record per group: segments rotate between them
    assert len(journal.segments) > 5
    journal.ack(queue_id, msg_ids[:-1], token="acked")
    listener.wait_for(201)
    assert len(journal.segments) <= 2
    store.close()

    store = Store.open(data_dir)
    try:
        assert recovered_bodies(store, queue_id) == [b"%0100d" % 199]
    finally:
        store.close()


def test_a_message_held_by_two_queues_stays_until_both_ack(data_dir: Path) -> None:
    ids = declare_queues(data_dir, ["a", "b"])
    store = Store.open(data_dir)
    listener = CollectingListener()
    journal = store.start(listener, segment_size=100)
    shared = journal.publish([ids["a"], ids["b"]], persistent(b"shared"), token=1)
    listener.wait_for(1)
    journal.ack(ids["a"], [shared], token=2)
    listener.wait_for(2)
    journal.publish([ids["a"]], persistent(b"later"), token=3)  # a new segment
    listener.wait_for(3)
    first_segment = journal.segments[0]
    assert first_segment in journal.segments
    journal.ack(ids["b"], [shared], token=4)
    listener.wait_for(4)
    journal.publish([ids["a"]], persistent(b"last"), token=5)
    listener.wait_for(5)
    assert first_segment not in journal.segments
    store.close()
