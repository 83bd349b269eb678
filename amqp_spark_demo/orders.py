"""The main job: a Spark stream through the embedded broker, end to end.

    python -m amqp_spark_demo [--messages N] [--per-trigger N]

The bundled broker starts in-process; N orders are published to the queue ``orders`` with
publisher confirms; a Spark structured stream reads the queue (``format("amqp")``), computes
a total per order, and writes the result to the exchange ``orders.enriched`` (``format("amqp")``
again), which routes it to the queue ``orders.enriched.audit``. The job then checks what
arrived, prints a summary and stops everything.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from dataclasses import dataclass

from amqp_spark.client import connect
from amqp_spark_demo.local_spark import local_session
from broker import Broker

SOURCE_QUEUE = "orders"
SINK_EXCHANGE = "orders.enriched"
AUDIT_QUEUE = "orders.enriched.audit"


@dataclass
class Summary:
    published: int
    written: int
    left_in_source: int
    batches: int
    seconds: float

    def render(self) -> str:
        rate = self.written / self.seconds if self.seconds else 0.0
        ok = self.written == self.published and self.left_in_source == 0
        return "\n".join(
            [
                "",
                "amqp-spark demo",
                f"  published to queue '{SOURCE_QUEUE}':        {self.published:>10,}",
                f"  read by Spark and written to '{SINK_EXCHANGE}': {self.written:>6,}",
                f"  left unacknowledged in '{SOURCE_QUEUE}':     {self.left_in_source:>10,}",
                f"  micro-batches:                          {self.batches:>10,}",
                f"  stream time:                            {self.seconds:>10.1f} s",
                f"  throughput incl. Spark start-up:        {rate:>10,.0f} rows/s",
                "  result: "
                + ("every message went through exactly once" if ok else "MISMATCH: see above"),
                "",
            ]
        )


def publish_orders(url: str, count: int) -> None:
    with connect(url) as conn, conn.channel() as ch:
        ch.queue_declare(SOURCE_QUEUE, durable=True)
        ch.exchange_declare(SINK_EXCHANGE, "fanout", durable=True)
        ch.queue_declare(AUDIT_QUEUE, durable=True)
        ch.queue_bind(AUDIT_QUEUE, SINK_EXCHANGE)
        ch.confirm_select()
        for i in range(count):
            order = {
                "order_id": i,
                "sku": f"SKU-{i % 97:03d}",
                "quantity": 1 + i % 5,
                "unit_price": 2.5,
            }
            ch.basic_publish(
                "",
                SOURCE_QUEUE,
                json.dumps(order).encode(),
                {
                    "content_type": "application/json",
                    "message_id": f"order-{i}",
                    "delivery_mode": 2,
                },
            )
        ch.wait_for_confirms(timeout=60)


def queue_depth(url: str, queue: str) -> int:
    with connect(url) as conn, conn.channel() as ch:
        return ch.queue_declare(queue, passive=True).message_count


def run_stream(url: str, per_trigger: int) -> int:
    """Run the Spark query with Trigger.AvailableNow; returns the number of micro-batches."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    # format("amqp") resolves through the installed pyspark_amqp module; a Databricks
    # notebook calls spark.dataSource.register(AMQPDataSource) instead (see notebooks/).
    spark = local_session("amqp-spark-demo")
    order = T.StructType.fromJson(
        {
            "type": "struct",
            "fields": [
                {"name": "order_id", "type": "long", "nullable": True, "metadata": {}},
                {"name": "sku", "type": "string", "nullable": True, "metadata": {}},
                {"name": "quantity", "type": "integer", "nullable": True, "metadata": {}},
                {"name": "unit_price", "type": "double", "nullable": True, "metadata": {}},
            ],
        }
    )
    try:
        orders = (
            spark.readStream.format("amqp")
            .option("uri", url)
            .option("queue", SOURCE_QUEUE)
            .option("maxMessagesPerTrigger", per_trigger)
            .load()
        )
        enriched = (
            orders.withColumn("order", F.from_json(F.col("body").cast("string"), order))
            .withColumn("total", F.col("order.quantity") * F.col("order.unit_price"))
            .select(
                F.to_json(F.struct("order.order_id", "order.sku", "total")).alias("body"),
                F.col("order.sku").alias("routing_key"),
                F.col("message_id"),
                F.lit("application/json").alias("content_type"),
            )
        )
        with tempfile.TemporaryDirectory(prefix="amqp-spark-demo-") as checkpoint:
            query = (
                enriched.writeStream.format("amqp")
                .option("uri", url)
                .option("exchange", SINK_EXCHANGE)
                .option("checkpointLocation", checkpoint)
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination(timeout=600)
            batches = len(query.recentProgress)
            query.stop()
        return batches
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--messages", type=int, default=20_000, help="orders to publish (default 20000)"
    )
    parser.add_argument(
        "--per-trigger", type=int, default=5_000, help="maxMessagesPerTrigger (default 5000)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )

    with Broker() as broker:
        print(f"embedded broker listening on {broker.url.split('@')[-1]}")
        publish_orders(broker.url, args.messages)
        print(
            f"published {args.messages:,} orders; starting the Spark stream (the JVM takes ~10 s)"
        )
        started = time.perf_counter()
        batches = run_stream(broker.url, args.per_trigger)
        seconds = time.perf_counter() - started
        summary = Summary(
            published=args.messages,
            written=queue_depth(broker.url, AUDIT_QUEUE),
            left_in_source=queue_depth(broker.url, SOURCE_QUEUE),
            batches=batches,
            seconds=seconds,
        )
    print(summary.render())
    return 0 if summary.written == summary.published and summary.left_in_source == 0 else 1
