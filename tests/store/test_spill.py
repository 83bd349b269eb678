"""Queues larger than memory: what is spilled comes back complete and in order, and read
chunks are deleted."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.store import SpillFifo


def test_a_spilled_queue_is_consumed_completely_and_in_order(tmp_path: Path) -> None:
    fifo = SpillFifo(tmp_path, chunk_size=10_000)
    expected = 0
    for i in range(50_000):
        fifo.push(b"%d" % i)
        if i % 3 == 0:  # a consumer slower than the publisher, then draining at the end
            assert fifo.pop() == b"%d" % expected
            expected += 1
    while fifo:
        assert fifo.pop() == b"%d" % expected
        expected += 1
    assert expected == 50_000
    with pytest.raises(IndexError):
        fifo.pop()
    fifo.close()
    assert list(tmp_path.iterdir()) == []


def test_chunks_are_deleted_once_read(tmp_path: Path) -> None:
    fifo = SpillFifo(tmp_path, chunk_size=1000)
    for i in range(10_000):
        fifo.push(b"%08d" % i)
    (spill_dir,) = tmp_path.iterdir()
    full = len(list(spill_dir.iterdir()))
    for _ in range(9_000):
        fifo.pop()
    assert len(list(spill_dir.iterdir())) <= full // 10 + 1
    fifo.close()
