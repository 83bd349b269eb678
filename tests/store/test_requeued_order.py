"""The delivery log's record of quorum messages requeued to the back (version 2): recovery
puts them back behind the messages published before the requeue, a rewrite keeps their
places, version 1 files (without such records) still load, and the journal does not give
again an id the log names."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from broker.store import deliveries
from broker.store.deliveries import Deliveries, DeliveryLog, read_deliveries
from broker.store.store import Store


def _queue(*msg_ids: int) -> dict[int, int]:
    """A recovered queue: msg id -> record location (unused here), in id order."""
    return {msg_id: 0 for msg_id in msg_ids}


def test_requeued_messages_come_back_behind_those_published_before_the_requeue(
    tmp_path: Path,
) -> None:
    log = DeliveryLog(tmp_path, Deliveries(), [1])
    log.requeued(1, 5, [1])  # behind 2..5, ahead of 6
    log.requeued(1, 6, [2])
    log.requeued(1, 6, [1])  # requeued again: behind 2 now
    log.close()
    state = read_deliveries(tmp_path)
    queues = {1: _queue(1, 2, 3, 4, 5, 6, 7)}
    state.order(queues)
    assert list(queues[1]) == [3, 4, 5, 6, 2, 1, 7]


def test_a_rewrite_keeps_the_places_of_requeued_messages_still_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deliveries, "REWRITE_AFTER", 300)
    log = DeliveryLog(tmp_path, Deliveries(), [1])
    log.requeued(1, 4, [2, 1])
    log.requeued(1, 9, [3])
    log.requeued(1, 9, [4])
    log.forget(1, 4)
    for msg_id in range(1, 40):
        log.mark(1, msg_id)
    assert (tmp_path / deliveries.FILE_NAME).stat().st_size < 300
    log.close()
    queues = {1: _queue(1, 2, 3, 5, 10)}
    read_deliveries(tmp_path).order(queues)
    assert list(queues[1]) == [2, 1, 5, 3, 10]


def test_recovery_forgets_the_counts_and_places_of_messages_no_longer_queued() -> None:
    state = Deliveries(counts={1: {1: 2, 2: 1}}, requeued={1: {1: 3}, 2: {7: 7}})
    state.order({1: _queue(2, 3), 2: _queue()})
    assert (state.counts, state.requeued) == ({1: {2: 1}}, {})


def test_a_version_1_log_still_loads(tmp_path: Path) -> None:
    def record(payload: bytes) -> bytes:
        return deliveries.RECORD_HEADER.pack(len(payload), deliveries.zlib.crc32(payload)) + payload

    header = deliveries.HEADER.pack(deliveries.MAGIC, 1, bytes(16))
    data = header + record(struct.pack("<BIQ", 1, 1, 7)) + record(struct.pack("<BIQ", 2, 2, 3))
    (tmp_path / deliveries.FILE_NAME).write_bytes(data + record(bytes((3,))))
    state = read_deliveries(tmp_path)
    assert (state.trusted, state.marks, state.counts, state.requeued) == (
        True,
        {1: 7},
        {2: {3: 1}},
        {},
    )


def test_a_log_of_a_newer_version_is_not_trusted(tmp_path: Path) -> None:
    header = deliveries.HEADER.pack(deliveries.MAGIC, deliveries.VERSION + 1, bytes(16))
    (tmp_path / deliveries.FILE_NAME).write_bytes(header)
    assert not read_deliveries(tmp_path).trusted


def test_the_journal_does_not_give_again_an_id_the_delivery_log_names(tmp_path: Path) -> None:
    """All segments with messages gone, the journal alone would start over at id 1."""
    Store.open(tmp_path).close()
    log = DeliveryLog(tmp_path, Deliveries(), [1])
    log.requeued(1, 41, [40])
    log.close()
    store = Store.open(tmp_path)
    try:
        assert store.recovered.next_msg_id == 42
    finally:
        store.close()
