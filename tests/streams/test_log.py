"""The stream log on its own: offsets, segments, retention, recovery, seeking."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from broker.streams.log import (
    FORMAT_VERSION,
    LogError,
    SegmentedLog,
    UnsupportedFormat,
)

RECORD = b"r" * 100


def fill(log: SegmentedLog, chunks: int, per_chunk: int = 10, timestamp: int | None = None) -> None:
    for _ in range(chunks):
        log.append([RECORD] * per_chunk, timestamp)


def offsets(log: SegmentedLog, start: int = 0) -> list[int]:
    return [r.offset for r in log.read(start, max_records=10**9, max_bytes=1 << 40)]


def test_offsets_are_dense_and_increasing_across_segments(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path, max_segment_bytes=100) as log:
        firsts = [log.append([b"a%d" % i for i in range(n)]) for n in (1, 5, 3, 20, 7)]
        assert firsts == [0, 1, 6, 9, 29]
        assert log.segment_count > 1
        assert offsets(log) == list(range(36))
        assert [r.payload for r in log.read(6, 3)] == [b"a0", b"a1", b"a2"]
        assert (log.first_offset, log.last_offset, log.next_offset) == (0, 35, 36)
        assert log.last_chunk_offset == 29


def test_empty_log_has_no_last_offset(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path) as log:
        assert (log.first_offset, log.last_offset, log.next_offset) == (0, None, 0)
        assert log.read(0) == [] and log.last_chunk_offset is None


def test_read_limits_records_and_bytes(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path) as log:
        fill(log, 3)
        assert len(log.read(5, max_records=7)) == 7
        assert len(log.read(0, max_bytes=250)) == 2
        assert len(log.read(0, max_bytes=1)) == 1  # the first record always comes


def test_reopen_keeps_the_log(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path, max_segment_bytes=5000) as log:
        fill(log, 30)
        segments = log.segment_count
    with SegmentedLog(tmp_path, max_segment_bytes=5000) as log:
        assert log.segment_count == segments
        assert offsets(log) == list(range(300))
        assert log.append([b"more"]) == 300


def test_appends_after_reopen_go_after_the_existing_chunks(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path) as log:
        log.append([b"a", b"b"])
    with SegmentedLog(tmp_path) as log:
        log.append([b"c"])
    with SegmentedLog(tmp_path) as log:
        assert [r.payload for r in log.read(0, max_records=10)] == [b"a", b"b", b"c"]


def test_retention_by_bytes_drops_whole_old_segments(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path, max_segment_bytes=5000, max_bytes=12_000) as log:
        fill(log, 60)
        kept = offsets(log)
        assert kept[-1] == 599 and kept == list(range(kept[0], 600))
        assert kept[0] > 0 and log.first_offset == kept[0]
        assert log.size_bytes <= 12_000 + 5000  # at most one segment over the limit
        # Whole segments only: the first kept offset starts a segment file.
        assert (tmp_path / f"{kept[0]:020d}.segment").exists()
        assert log.read(0, 1)[0].offset == kept[0]


def test_retention_by_age_drops_segments_older_than_max_age(tmp_path: Path) -> None:
    now = int(time.time() * 1000)
    with SegmentedLog(tmp_path, max_segment_bytes=3000, max_age_ms=60_000) as log:
        fill(log, 10, timestamp=now - 3_600_000)
        fill(log, 10, timestamp=now)
        # Chunks of 10 records take 1068 bytes: 3 chunks a segment. The segment of offsets
        # 90..119 mixes old and new chunks, so it stays whole. Rolling applies retention.
        log.apply_retention(now)
        assert log.first_offset == 90
        assert offsets(log) == list(range(90, 200))


def test_active_segment_is_never_dropped(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path, max_bytes=1, max_age_ms=1) as log:
        fill(log, 3)
        assert log.apply_retention() == 0
        assert offsets(log) == list(range(30))


def test_offset_for_timestamp_seeks_to_the_first_chunk_at_or_after_it(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path, max_segment_bytes=2000) as log:
        for t in range(10):
            fill(log, 2, per_chunk=5, timestamp=1_000_000 + t * 1000)
        assert log.offset_for_timestamp(0) == 0
        assert log.offset_for_timestamp(1_003_000) == 30
        assert log.offset_for_timestamp(1_003_001) == 40
        assert log.offset_for_timestamp(2_000_000) == log.next_offset == 100


def test_timestamps_never_go_backwards(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path) as log:
        log.append([b"a"], 5000)
        log.append([b"b"], 4000)
        assert [r.timestamp for r in log.read(0)] == [5000, 5000]


def test_torn_tail_is_truncated_to_the_last_good_chunk(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with SegmentedLog(tmp_path) as log:
        fill(log, 5)
    segment = tmp_path / f"{0:020d}.segment"
    with open(segment, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x32partial chunk")
    with caplog.at_level(logging.WARNING), SegmentedLog(tmp_path) as log:
        assert offsets(log) == list(range(50))
        assert log.append([b"next"]) == 50
    assert "dropped" in caplog.text and str(segment) in caplog.text


def test_corrupt_byte_in_the_last_chunk_drops_that_chunk(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path) as log:
        fill(log, 5)
    segment = tmp_path / f"{0:020d}.segment"
    data = bytearray(segment.read_bytes())
    data[-10] ^= 0xFF
    segment.write_bytes(bytes(data))
    with SegmentedLog(tmp_path) as log:
        assert offsets(log) == list(range(40))


def test_missing_index_is_rebuilt(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path, max_segment_bytes=3000) as log:
        fill(log, 20)
    for index in tmp_path.glob("*.index"):
        index.unlink()
    with SegmentedLog(tmp_path, max_segment_bytes=3000) as log:
        assert offsets(log) == list(range(200))
        assert log.read(123, 1)[0].offset == 123


def test_corruption_inside_a_sealed_segment_is_an_error_naming_the_file(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path, max_segment_bytes=3000) as log:
        fill(log, 20)
    first = tmp_path / f"{0:020d}.segment"
    data = bytearray(first.read_bytes())
    data[-10] ^= 0xFF
    first.write_bytes(bytes(data))
    with pytest.raises(LogError, match=str(first)):
        SegmentedLog(tmp_path, max_segment_bytes=3000)


def test_a_newer_format_version_is_refused_with_the_path(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path) as log:
        fill(log, 1)
    segment = tmp_path / f"{0:020d}.segment"
    data = bytearray(segment.read_bytes())
    data[4:8] = (FORMAT_VERSION + 1).to_bytes(4, "big")
    segment.write_bytes(bytes(data))
    with pytest.raises(UnsupportedFormat, match=f"{segment}.*version {FORMAT_VERSION + 1}"):
        SegmentedLog(tmp_path)


_WRITER = """
import sys
from broker.streams.log import SegmentedLog
log = SegmentedLog(sys.argv[1], max_segment_bytes=200_000)
n = 0
while True:
    log.append([b"%d" % (n + i) for i in range(50)])
    n += 50
    log.sync()
    print(n, flush=True)
"""


def test_kill_9_keeps_every_synced_record(tmp_path: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(tmp_path)],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).parents[2],
    )
    assert writer.stdout is not None
    synced = 0
    deadline = time.monotonic() + 30
    while synced < 20_000 and time.monotonic() < deadline:
        synced = int(writer.stdout.readline())
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=10)
    with SegmentedLog(tmp_path, max_segment_bytes=200_000) as log:
        records = log.read(0, max_records=10**9, max_bytes=1 << 40)
    assert len(records) >= synced >= 20_000
    assert [r.offset for r in records] == list(range(len(records)))
    assert all(r.payload == b"%d" % r.offset for r in records)


def test_seek_into_a_million_record_log_reads_one_chunk(tmp_path: Path) -> None:
    with SegmentedLog(tmp_path, max_segment_bytes=10_000_000) as log:
        batch = [RECORD] * 100
        for _ in range(10_000):
            log.append(batch)
    with SegmentedLog(tmp_path, max_segment_bytes=10_000_000) as log:
        began = time.perf_counter()
        record = log.read(654_321, max_records=1)[0]
        elapsed = time.perf_counter() - began
    assert record.offset == 654_321
    assert elapsed < 0.05, f"seek took {elapsed * 1000:.1f} ms"
