"""Damaged, foreign, newer, read-only and full data directories: recovery keeps what is
intact and logs what it cuts off, or the store refuses to open with the path and a remedy."""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from broker.store import Store, StoreError, records
from broker.store.recovery import segment_numbers, segment_path
from testbed.store_data import declare_queues, persistent, recovered_bodies
from tests.store.listeners import CollectingListener


def journal_messages(data_dir: Path, count: int, segment_size: int = 1 << 20) -> int:
    """Declare queue "q", journal ``count`` messages b"0", b"1", ... to it; its id."""
    (queue_id,) = declare_queues(data_dir, ["q"]).values()
    store = Store.open(data_dir)
    listener = CollectingListener()
    journal = store.start(listener, segment_size)
    for i in range(count):
        journal.publish([queue_id], persistent(b"%d" % i), token=i)
        if segment_size < 1 << 20:
            listener.wait_for(i + 1)
    listener.wait_for(count)
    store.close()
    return queue_id


def last_segment(data_dir: Path) -> Path:
    return segment_path(data_dir / "journal", segment_numbers(data_dir / "journal")[-1])


def test_a_torn_tail_is_cut_off_and_logged(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    queue_id = journal_messages(data_dir, 10)
    path = last_segment(data_dir)
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size - 5)  # the last record half written

    _recovers_all_but_the_last(data_dir, queue_id, caplog)
    assert str(path) in caplog.text and "dropped" in caplog.text
    assert path.stat().st_size < size - 5


def test_a_corrupt_last_record_is_dropped_and_logged(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    queue_id = journal_messages(data_dir, 10)
    path = last_segment(data_dir)
    data = bytearray(path.read_bytes())
    data[-2] ^= 0xFF
    path.write_bytes(bytes(data))

    _recovers_all_but_the_last(data_dir, queue_id, caplog)
    assert str(path) in caplog.text


def test_corruption_before_intact_records_refuses_to_open(data_dir: Path) -> None:
    journal_messages(data_dir, 10)
    path = last_segment(data_dir)
    data = bytearray(path.read_bytes())
    data[40] ^= 0xFF  # inside the first record: nine intact ones follow
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="intact record") as e:
        Store.open(data_dir)
    assert e.value.path == path and "backup" in e.value.advice


def test_a_corrupt_record_in_an_older_segment_refuses_to_open(data_dir: Path) -> None:
    journal_messages(data_dir, 20, segment_size=200)
    numbers = segment_numbers(data_dir / "journal")
    assert len(numbers) > 2
    path = segment_path(data_dir / "journal", numbers[0])
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as e:
        Store.open(data_dir)
    assert e.value.path == path


def test_a_newer_format_version_refuses_to_open(data_dir: Path) -> None:
    declare_queues(data_dir, ["q"])
    marker = data_dir / "amqp-spark-data.json"
    marker.write_text(json.dumps({"format": "amqp-spark-broker-data", "version": 99}))
    with pytest.raises(StoreError, match="version 99 is newer") as e:
        Store.open(data_dir)
    assert e.value.path == data_dir and "newer amqp-spark" in str(e.value)


def test_a_segment_from_a_newer_format_refuses_to_open(data_dir: Path) -> None:
    journal_messages(data_dir, 1)
    path = last_segment(data_dir)
    data = bytearray(path.read_bytes())
    data[8] = records.FORMAT_VERSION + 1  # the version field of the segment header
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=f"version {records.FORMAT_VERSION + 1} is newer") as e:
        Store.open(data_dir)
    assert e.value.path == path


def test_a_corrupt_topology_file_refuses_to_open(data_dir: Path) -> None:
    declare_queues(data_dir, ["q"])
    (data_dir / "topology.json").write_text('{"format": "amqp-spark-broker-topology", "ver')
    with pytest.raises(StoreError, match="corrupt topology") as e:
        Store.open(data_dir)
    assert e.value.path == data_dir / "topology.json"


def test_a_directory_of_something_else_refuses_to_open(data_dir: Path) -> None:
    data_dir.mkdir()
    (data_dir / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match="not an amqp-spark broker data directory"):
        Store.open(data_dir)


def test_a_second_broker_on_the_same_directory_is_refused(data_dir: Path) -> None:
    store = Store.open(data_dir)
    try:
        with pytest.raises(StoreError, match="another broker"):
            Store.open(data_dir)
    finally:
        store.close()


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (root can mount one here; elsewhere the test is skipped)."""
    mount_point = tmp_path / "tmpfs"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill or make read-only: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_a_read_only_directory_refuses_to_open(tmpfs: Path) -> None:
    data_dir = tmpfs / "data"
    declare_queues(data_dir, ["q"])
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    with pytest.raises(StoreError, match="Read-only file system") as e:
        Store.open(data_dir)
    assert str(data_dir) in str(e.value) and "writable" in e.value.advice


def test_a_full_disk_fails_the_unwritten_publishes_and_keeps_the_confirmed(tmpfs: Path) -> None:
    data_dir = tmpfs / "data"
    (queue_id,) = declare_queues(data_dir, ["q"]).values()
    store = Store.open(data_dir)
    listener = CollectingListener()
    journal = store.start(listener)
    body = b"x" * 4000
    with pytest.raises(StoreError, match="No space left"):
        for i in range(1000):  # 4 MB into a 1 MiB file system
            journal.publish([queue_id], persistent(body + b"%d" % i), token=i)
            listener.wait_for(i + 1)
    assert listener.error is not None and "Free disk space" in listener.error.advice
    assert str(data_dir / "journal") in str(listener.error)
    confirmed = [cast(int, token) for token in listener.committed_tokens]
    assert listener.failed_tokens and not set(listener.failed_tokens) & set(confirmed)
    store.close()

    store = Store.open(data_dir)
    try:
        recovered = recovered_bodies(store, queue_id)
        assert recovered == [body + b"%d" % i for i in confirmed]
    finally:
        store.close()


def _recovers_all_but_the_last(
    data_dir: Path, queue_id: int, caplog: pytest.LogCaptureFixture
) -> None:
    """The store opens (warnings captured) and gives back the first 9 of 10 messages."""
    with caplog.at_level(logging.WARNING, logger="broker.store"):
        store = Store.open(data_dir)
    try:
        assert recovered_bodies(store, queue_id) == [b"%d" % i for i in range(9)]
    finally:
        store.close()
