"""Compaction: the oldest segment, once few of its messages are live, is copied out (MOVED
records at the end of the journal) and deleted, so one old unacknowledged message does not
keep every later segment on disk. Recovery finds each message once, in publish order."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from broker.store import Journal, Store
from testbed.store_data import declare_queues, persistent, recovered_bodies
from tests.store.listeners import CollectingListener

SEGMENT_SIZE = 4096
MESSAGES = 300


def publish_one_per_group(
    journal: Journal,
    listener: CollectingListener,
    queue_ids: Sequence[int],
    count: int,
    blind_keys: tuple[str, ...] = (),
) -> list[int]:
    """``count`` messages (bodies "0", "1", ...), each in its own group so that the small
    segments rotate between them; their ids."""
    ids = []
    for i in range(count):
        ids.append(journal.publish(queue_ids, persistent(b"%d" % i), i, blind_keys=blind_keys))
        listener.wait_for(len(listener.committed_tokens) + 1)
    return ids


def settle(journal: Journal, listener: CollectingListener) -> None:
    """Barriers until the writer has no segment left to compact (one compaction per group)."""
    for _ in range(len(journal.segments) + 1):
        journal.barrier("settle")
        listener.wait_for(len(listener.committed_tokens) + 1)


def test_one_old_unacked_message_does_not_keep_the_later_segments(data_dir: Path) -> None:
    (queue_id,) = declare_queues(data_dir, ["q"]).values()
    store = Store.open(data_dir)
    listener = CollectingListener()
    journal = store.start(listener, segment_size=SEGMENT_SIZE)
    ids = publish_one_per_group(journal, listener, [queue_id], MESSAGES)
    assert len(journal.segments) > 5
    kept = {0, MESSAGES // 2, MESSAGES - 1}
    journal.ack(queue_id, [msg_id for i, msg_id in enumerate(ids) if i not in kept])
    settle(journal, listener)
    assert len(journal.segments) <= 2
    assert len(list((data_dir / "journal").glob("*.seg"))) == len(journal.segments)
    store.close()

    store = Store.open(data_dir)
    try:  # the MOVED copies of 0 and 150 come after 299 in the journal: order is by id
        assert recovered_bodies(store, queue_id) == [b"%d" % i for i in sorted(kept)]
    finally:
        store.close()


def test_a_moved_message_keeps_its_queues_keys_and_publish_time(data_dir: Path) -> None:
    ids = declare_queues(data_dir, ["a", "b"])
    store = Store.open(data_dir)
    listener = CollectingListener()
    journal = store.start(listener, segment_size=SEGMENT_SIZE)
    (shared,) = publish_one_per_group(journal, listener, [ids["a"], ids["b"]], 1, ("blind",))
    published_by = time.time_ns() // 1_000_000
    journal.ack(ids["b"], [shared])  # b is done with it before the compaction
    later = publish_one_per_group(journal, listener, [ids["a"]], MESSAGES)
    journal.ack(ids["a"], later)
    settle(journal, listener)
    assert 1 not in journal.segments
    store.close()

    store = Store.open(data_dir)
    try:
        assert recovered_bodies(store, ids["b"]) == []
        ((msg_id, journaled),) = store.recovered_journal_entries(ids["a"])
        assert msg_id == shared and journaled.blind_keys == ("blind",)
        assert 0 < journaled.published_ms <= published_by  # the publish's, not the move's
        journal = store.start(listener)
        journal.ack(ids["a"], [shared], token="last ack")  # acks the MOVED copy
        listener.wait_for(len(listener.committed_tokens) + 1)
    finally:
        store.close()

    store = Store.open(data_dir)
    try:
        assert recovered_bodies(store, ids["a"]) == []
    finally:
        store.close()
