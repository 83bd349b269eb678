"""Recovery of a million persistent messages (the benchmark reports how long it takes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.store import Store
from broker.store.records import (
    BASIC_CLASS,
    JournaledMessage,
    ack_record,
    publish_record,
    segment_header,
)
from broker.store.recovery import segment_path
from tests.store.conftest import declare_queues
from tests.store.messages import persistent

MESSAGES = 1_000_000
PER_SEGMENT = 100_000


def write_journal(data_dir: Path, queue_ids: list[int], messages: int) -> None:
    """Segments holding ``messages`` 100-byte messages round-robin over ``queue_ids``, the first
    tenth of them acked: what a broker would have written, without its overhead."""
    message = JournaledMessage(BASIC_CLASS, persistent(b"m" * 100))
    acked: dict[int, list[int]] = {q: [] for q in queue_ids}
    for i in range(1, messages // 10 + 1):
        acked[queue_of(i, queue_ids)].append(i)
    for segment, first in enumerate(range(0, messages, PER_SEGMENT), start=1):
        ids = range(first + 1, min(first + PER_SEGMENT, messages) + 1)
        parts = [segment_header(segment)]
        parts += [publish_record(i, [queue_of(i, queue_ids)], message) for i in ids]
        if first == 0:
            parts += [ack_record(q, acked_ids) for q, acked_ids in acked.items()]
        segment_path(data_dir / "journal", segment).write_bytes(b"".join(parts))


def queue_of(msg_id: int, queue_ids: list[int]) -> int:
    return queue_ids[msg_id % len(queue_ids)]


@pytest.mark.slow
def test_a_million_messages_are_recovered(data_dir: Path) -> None:
    queue_ids = list(declare_queues(data_dir, ["a", "b", "c"]).values())
    write_journal(data_dir, queue_ids, MESSAGES)
    store = Store.open(data_dir)
    try:
        recovered = store.recovered.queues
        assert sum(len(q) for q in recovered.values()) == MESSAGES - MESSAGES // 10
        for q in queue_ids:
            ids = list(recovered[q])
            assert ids == sorted(ids) and all(i > MESSAGES // 10 for i in ids)
            assert all(queue_of(i, queue_ids) == q for i in ids)
        assert store.recovered.next_msg_id == MESSAGES + 1
    finally:
        store.close()
