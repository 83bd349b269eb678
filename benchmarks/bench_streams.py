"""Stream figures.

* storage: log append (with a sync per batch, as a group commit does), reading from the
  first offset, seeking into the middle.
* through the broker, bundled (``python -m broker --data-dir`` under the temp dir, so every
  flushed chunk is fdatasync'd before its confirms) vs RabbitMQ, with bench_broker's pipelined
  client: stream publish with confirms, and consuming the stream from ``first``.
* stream publish vs classic-queue publish (both with confirms) on the bundled broker.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from pathlib import Path

import pika

from benchmarks.bench_broker import Client, M
from benchmarks.common import Row, row
from broker.streams.log import SegmentedLog
from testbed.broker_process import BrokerProcess
from testbed.rabbitmq import RabbitMQUnavailable, rabbitmq

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


def _log_rows(quick: bool) -> list[Row]:
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


def _publish_rate(
    host: str, port: int, queue: str, arguments: dict[str, str], messages: int
) -> float:
    """msgs/s of publishes to a new durable queue, all confirmed (a new channel: confirm
    sequence numbers start at 1)."""
    client = Client(host, port)
    try:
        client.call(
            M("queue.declare")(queue=queue, durable=True, arguments=arguments), "queue.declare-ok"
        )
        client.call(M("confirm.select")(), "confirm.select-ok")
        began = time.perf_counter()
        client.publish([queue], messages, confirm=True)
        return messages / (time.perf_counter() - began)
    finally:
        client.close()


def _consume_first_rate(client: Client, queue: str, messages: int) -> float:
    """msgs/s reading ``messages`` from offset ``first``, acking (credit) as they come."""
    began = time.perf_counter()
    client.consume([queue], messages, {"x-stream-offset": "first"})
    return messages / (time.perf_counter() - began)


def measure(host: str, port: int, messages: int) -> dict[str, float]:
    stream, classic = f"bench-stream-{time.time_ns()}", f"bench-classic-{time.time_ns()}"
    results = {
        "stream publish": _publish_rate(host, port, stream, {"x-queue-type": "stream"}, messages),
        "classic publish": _publish_rate(host, port, classic, {}, messages),
    }
    client = Client(host, port)
    try:
        results["stream consume"] = _consume_first_rate(client, stream, messages)
    finally:
        client.close()
    client = Client(host, port)
    try:
        for queue in (stream, classic):
            client.call(M("queue.delete")(queue=queue), "queue.delete-ok")
    finally:
        client.close()
    return results


def _broker_rows(quick: bool) -> list[Row]:
    messages = 20_000 if quick else 200_000
    with (
        tempfile.TemporaryDirectory() as d,
        BrokerProcess(Path(d) / "data", "--log-level", "WARNING") as broker,
    ):
        ours = measure("127.0.0.1", broker.port, messages)
    theirs: dict[str, float] = {}
    with contextlib.suppress(RabbitMQUnavailable), rabbitmq() as url:
        params = pika.URLParameters(url)
        theirs = measure(params.host, params.port, messages)
    name = "RabbitMQ" if theirs else ""
    return [
        row(
            "broker: stream publish with confirms (chunks fdatasync'd)",
            "msgs/s",
            ours["stream publish"],
            theirs.get("stream publish"),
            name,
        ),
        row(
            "broker: stream consume from first",
            "msgs/s",
            ours["stream consume"],
            theirs.get("stream consume"),
            name,
        ),
        row(
            "bundled broker: stream publish vs classic-queue publish, both with confirms",
            "msgs/s",
            ours["stream publish"],
            ours["classic publish"],
            "bundled classic queue",
        ),
    ]


def run(quick: bool) -> list[Row]:
    return _log_rows(quick) + _broker_rows(quick)


if __name__ == "__main__":
    for r in run("--quick" in sys.argv):
        ratio = f"{r['ours'] / r['reference']:.2f}" if r["reference"] else "-"
        print(f"{r['figure']:<75} {r['ours']:>12.1f} {r['reference'] or 0:>12.1f}  ratio {ratio}")
