"""The delivery log: what a restart may trust of it (clean stop, the same boot, another
boot, a damaged file) and what its rewrites keep."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.store import deliveries
from broker.store.deliveries import Deliveries, DeliveryLog, read_deliveries


def written(data_dir: Path, *, close: bool) -> None:
    log = DeliveryLog(data_dir, Deliveries(), [1, 2])
    log.mark(1, 7)
    log.delivered(2, [3, 4])
    log.delivered(2, [3])
    if close:
        log.close()


def test_a_clean_stop_is_trusted_even_after_a_reboot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written(tmp_path, close=True)
    monkeypatch.setattr(deliveries, "boot_id", lambda: b"another boot....")
    state = read_deliveries(tmp_path)
    assert (state.trusted, state.marks, state.counts) == (True, {1: 7}, {2: {3: 2, 4: 1}})


def test_a_killed_broker_is_trusted_in_the_same_boot_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written(tmp_path, close=False)
    assert read_deliveries(tmp_path).trusted
    monkeypatch.setattr(deliveries, "boot_id", lambda: b"another boot....")
    assert not read_deliveries(tmp_path).trusted


def test_a_damaged_or_missing_log_is_not_trusted(tmp_path: Path) -> None:
    assert not read_deliveries(tmp_path).trusted
    written(tmp_path, close=True)
    path = tmp_path / deliveries.FILE_NAME
    data = bytearray(path.read_bytes())
    data[deliveries.HEADER.size + 10] ^= 0xFF
    path.write_bytes(bytes(data))
    assert not read_deliveries(tmp_path).trusted


def test_an_untrusted_log_counts_every_recovered_message_as_delivered() -> None:
    state = Deliveries(marks={1: 2}, trusted=False)
    state.distrust({1: {5: 0, 9: 0}, 2: {}})
    assert [state.may_have_delivered(1, m) for m in (5, 9)] == [True, True]
    assert not state.may_have_delivered(1, 10)


def test_a_rewrite_keeps_marks_and_the_counts_of_messages_still_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deliveries, "REWRITE_AFTER", 200)
    log = DeliveryLog(tmp_path, Deliveries(), [1, 2])
    log.delivered(2, [3, 4])
    log.forget(2, 4)
    for msg_id in range(1, 40):
        log.mark(1, msg_id)
    assert (tmp_path / deliveries.FILE_NAME).stat().st_size < 200
    log.close()
    state = read_deliveries(tmp_path)
    assert (state.marks, state.counts) == ({1: 39}, {2: {3: 1}})
