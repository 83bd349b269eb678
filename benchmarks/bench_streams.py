"""Stream storage figures: log append (with a sync per batch, as a group commit does) and
reading from the first offset. The broker-vs-RabbitMQ stream publish/consume figures need
stream queues wired into the bundled broker (see broker/streams/README.md)."""

from __future__ import annotations

import tempfile
import time

from benchmarks.common import Row, row
from broker.streams.log import SegmentedLog

BATCH = 100  # records per append: one group commit of publishes
PAYLOAD = b"x" * 100


def _append_rate(log: SegmentedLog, records: int) -> float:
    batch = [PAYLOAD] * BATCH
    began = time.perf_counter()
    for _ in range(records // BATCH):
        log.append(batch)
        log.sync()
    return records / (time.perf_counter() - began)


def _read_rate(log: SegmentedLog) -> float:
    offset, count = log.first_offset, 0
    began = time.perf_counter()
    while True:
        records = log.read(offset, max_records=1000)
        if not records:
            break
        count += len(records)
        offset = records[-1].offset + 1
    return count / (time.perf_counter() - began)


def run(quick: bool) -> list[Row]:
    records = 100_000 if quick else 1_000_000
    with tempfile.TemporaryDirectory() as d, SegmentedLog(d, max_segment_bytes=50_000_000) as log:
        append = _append_rate(log, records)
        read = _read_rate(log)
        seek_began = time.perf_counter()
        log.read(records * 2 // 3, max_records=1)
        seek_ms = (time.perf_counter() - seek_began) * 1000
    return [
        row(f"stream log append+fsync, {BATCH}-record chunks of 100 B", "records/s", append),
        row("stream log read from first", "records/s", read),
        row(f"stream log seek to offset {records * 2 // 3}", "ms", seek_ms),
    ]
