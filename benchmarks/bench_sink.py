"""Sink throughput: ``df.write.format("amqp")`` vs the raw client publishing the same messages.

1 million 100-byte rows (100 000 with ``--quick``), persistent, with publisher confirms, to
one queue through the default exchange of a real RabbitMQ. Ours: a local[2] Spark job, so
two tasks publish on two connections, timed around ``save()`` (planning and the Spark job
included). Reference: our client in this process on one connection, ``basic_publish_batch``
of 1000 messages per write, ``max_in_flight`` as the sink's default, the same properties
(delivery_mode 2, a message id per message), then ``wait_for_confirms``. The two alternate
twice; the best of each is kept. The queue is purged before every run.

RabbitMQ comes from ``AMQP_SPARK_RABBITMQ_URL`` or a private node (testbed/rabbitmq.py).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from amqp_protocol import SPEC_0_9_1
from amqp_spark.client import connect
from amqp_spark.datasource import AMQPDataSource
from amqp_spark.sink.settings import SinkSettings
from benchmarks.common import Row, row
from benchmarks.login import login_options
from testbed.rabbitmq import rabbitmq
from testbed.spark import local_session

BODY = bytes(range(100))
BATCH = 1000
ROUNDS = 2
BasicProperties = SPEC_0_9_1.properties("basic")


def _spark_write(spark: Any, url: str, queue: str, rows: int) -> float:
    return write_rate(spark, rows, {"routingKey": queue, **login_options(uri=url)})


def write_rate(spark: Any, rows: int, options: dict[str, str]) -> float:
    """rows/s of ``df.write.format("amqp")`` with ``options`` of ``rows`` rows of ``BODY`` in
    two partitions, timed around ``save()`` (planning and the Spark job included)."""
    from pyspark.sql import functions as F

    df = spark.range(rows, numPartitions=2).select(F.lit(BODY).alias("body"))
    start = time.perf_counter()
    df.write.format("amqp").options(**options).mode("append").save()
    return rows / (time.perf_counter() - start)


def _raw_publish(url: str, queue: str, rows: int) -> float:
    max_in_flight = SinkSettings.parse({"uri": url}).max_in_flight
    with connect(url) as conn, conn.channel() as ch:
        ch.confirm_select()
        ch.max_in_flight = max_in_flight
        start = time.perf_counter()
        for first in range(0, rows, BATCH):
            ch.basic_publish_batch(
                "",
                [
                    (queue, BODY, BasicProperties(delivery_mode=2, message_id=f"raw:0:0:{n}"))
                    for n in range(first, min(first + BATCH, rows))
                ],
            )
        ch.wait_for_confirms(timeout=600)
        return rows / (time.perf_counter() - start)


def _purged(url: str, queue: str) -> None:
    with connect(url) as conn, conn.channel() as ch:
        ch.queue_purge(queue)


def run(quick: bool) -> list[Row]:
    rows = 100_000 if quick else 1_000_000
    with rabbitmq() as url, tempfile.TemporaryDirectory(prefix="bench-sink-") as scratch:
        spark = local_session(Path(scratch))
        spark.dataSource.register(AMQPDataSource)
        with connect(url) as conn, conn.channel() as ch:
            queue = ch.queue_declare("bench-sink").queue
        try:
            _spark_write(spark, url, queue, 1000)  # warm-up: Python workers start
            ours = reference = 0.0
            for _ in range(ROUNDS):
                _purged(url, queue)
                ours = max(ours, _spark_write(spark, url, queue, rows))
                _purged(url, queue)
                reference = max(reference, _raw_publish(url, queue, rows))
        finally:
            with connect(url) as conn, conn.channel() as ch:
                ch.queue_delete(queue)
            spark.stop()
    figure = f"sink: write {rows:,} x 100 B rows with confirms (RabbitMQ)"
    return [row(figure, "rows/s", ours, reference, "raw client, basic_publish_batch")]
