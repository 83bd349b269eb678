"""Recovery of a million persistent messages (the benchmark reports how long it takes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.store import Store
from testbed.store_data import declare_queues, queue_of, write_journal

MESSAGES = 1_000_000


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
