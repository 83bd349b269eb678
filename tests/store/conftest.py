"""Fixtures for the store's tests: a data directory with durable queues declared."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.store import QueueDef, Store


def declare_queues(data_dir: Path, names: list[str]) -> dict[str, int]:
    """Open the store, declare durable queues ``names`` and close it; returns their ids."""
    store = Store.open(data_dir)
    try:
        ids = {}
        for name in names:
            queue_id = store.topology.allocate_queue_id()
            store.topology.queues[("/", name)] = QueueDef("/", name, queue_id)
            ids[name] = queue_id
        store.save_topology()
        return ids
    finally:
        store.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"
