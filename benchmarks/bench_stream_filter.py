"""Stream filtering: reading 1% of a stream by filter against reading all of it.

A stream of ``messages`` 100-byte messages (1M; 100k with --quick) is published with
confirms in batches of 1,000, every 100th batch tagged ``x-stream-filter-value: hot`` and
the rest ``cold`` (hot messages come together, as when a producer tags its own output: were
every 100th message hot, every chunk would hold one and be delivered whole). Then one
consumer reads it from ``first`` with ``x-stream-filter: hot`` until the last hot message,
and another reads all of it; both with the connector's client, prefetch 2,000, checking
each delivery's filter value as the source does. The figure is the time of each read;
"reference" is the read of everything on the same broker, so the ratio is the share of the
full read's time a filtered read costs. The same two reads are then made by the connector,
as Spark batch reads (``filterValues=hot`` against no filter, rows counted). Run for the
bundled broker (on a data directory) and RabbitMQ 4 when one can be had.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from amqp_protocol import SPEC_0_9_1
from amqp_spark.client import connect
from amqp_spark.datasource import AMQPDataSource
from amqp_spark.source.arrow import stream_offset_of
from amqp_spark.stream_filter import FILTER_VALUE_HEADER, StreamFilter
from benchmarks.common import Row, row
from testbed.broker_process import BrokerProcess
from testbed.rabbitmq import RabbitMQUnavailable, rabbitmq
from testbed.spark import local_session

Properties = SPEC_0_9_1.properties("basic")
EVERY = 100  #: one message in EVERY is hot: 1%
BATCH = 1_000
PAYLOAD = b"x" * 100


def is_hot(batch_start: int) -> bool:
    return batch_start // BATCH % EVERY == EVERY - 1


def fill(url: str, queue: str, messages: int) -> None:
    conn = connect(url)
    try:
        ch = conn.channel()
        ch.queue_declare(queue, durable=True, arguments={"x-queue-type": "stream"})
        ch.confirm_select()
        hot = Properties(headers={FILTER_VALUE_HEADER: "hot"})
        cold = Properties(headers={FILTER_VALUE_HEADER: "cold"})
        for start in range(0, messages, BATCH):
            properties = hot if is_hot(start) else cold
            ch.basic_publish_batch(
                "", [(queue, PAYLOAD, properties)] * (min(start + BATCH, messages) - start)
            )
        ch.wait_for_confirms(timeout=600)
    finally:
        conn.close()


def read_seconds(url: str, queue: str, last: int, wanted: StreamFilter | None) -> tuple[float, int]:
    """Seconds to read from ``first`` up to offset ``last``, and the rows kept."""
    conn = connect(url)
    try:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=2_000)
        arguments: dict[str, object] = {"x-stream-offset": "first"}
        if wanted is not None:
            arguments.update(wanted.consume_arguments())
        began = time.perf_counter()
        ch.basic_consume(queue, arguments=arguments)
        kept, offset = 0, -1
        while offset < last:
            d = ch.next_delivery(timeout=60)
            if d is None:
                raise TimeoutError(f"{url}: no delivery for 60 s at offset {offset + 1}")
            offset = stream_offset_of(d) or 0
            kept += wanted is None or wanted.keeps(d.properties)
            if d.delivery_tag % 1_000 == 0:
                ch.basic_ack(d.delivery_tag, multiple=True)
        return time.perf_counter() - began, kept
    finally:
        conn.close()


def spark_seconds(spark: Any, url: str, queue: str, filter_values: str | None) -> tuple[float, int]:
    """Seconds of a Spark batch read of the whole stream, and its row count."""
    reader = spark.read.format("amqp").option("uri", url).option("queue", queue)
    reader = reader.option("queueType", "stream")
    if filter_values is not None:
        reader = reader.option("filterValues", filter_values)
    began = time.perf_counter()
    rows = reader.load().count()
    return time.perf_counter() - began, rows


def measure(spark: Any, url: str, messages: int) -> dict[str, tuple[float, float]]:
    queue = f"bench-filter-{time.time_ns()}"
    fill(url, queue, messages)
    try:
        hot = [i for i in range(messages) if is_hot(i - i % BATCH)]  # offsets: dense from 0
        filtered, kept = read_seconds(url, queue, hot[-1], StreamFilter(("hot",)))
        assert kept == len(hot), (kept, len(hot))
        everything, _ = read_seconds(url, queue, messages - 1, None)
        spark_seconds(spark, url, queue, "hot")  # warm-up: Python workers, JIT (untimed)
        spark_filtered, rows = spark_seconds(spark, url, queue, "hot")
        assert rows == len(hot), (rows, len(hot))
        spark_everything, rows = spark_seconds(spark, url, queue, None)
        assert rows == messages, (rows, messages)
        return {"client": (filtered, everything), "Spark": (spark_filtered, spark_everything)}
    finally:
        conn = connect(url)
        conn.channel().queue_delete(queue)
        conn.close()


def _rows(broker: str, messages: int, times: dict[str, tuple[float, float]]) -> list[Row]:
    return [
        row(f"{broker}, {how}: read 1% of {messages:,} by filter vs all", "s", *t, "read all")
        for how, t in times.items()
    ]


def run(quick: bool) -> list[Row]:
    messages = 100_000 if quick else 1_000_000
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-filter-") as scratch:
        spark = local_session(Path(scratch))
        spark.dataSource.register(AMQPDataSource)
        try:
            with BrokerProcess(Path(scratch) / "data", "--log-level", "WARNING") as broker:
                rows += _rows("bundled broker", messages, measure(spark, broker.url, messages))
            with contextlib.suppress(RabbitMQUnavailable), rabbitmq() as url:
                rows += _rows("RabbitMQ 4", messages, measure(spark, url, messages))
        finally:
            spark.stop()
    return rows


if __name__ == "__main__":
    for r in run("--quick" in sys.argv):
        print(f"{r['figure']:<60} {r['ours']:>8.2f} s {r['reference'] or 0:>8.2f} s")
