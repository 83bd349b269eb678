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
from datetime import datetime
from typing import Any

from amqp_spark.client import connect
from amqp_spark_demo.local_spark import local_session
from broker import Broker

SOURCE_QUEUE = "orders"
SINK_EXCHANGE = "orders.enriched"
AUDIT_QUEUE = "orders.enriched.audit"


@dataclass
class Batch:
    """One micro-batch as the query's progress reports it."""

    rows: int
    seconds: float  # batchDuration: planning, reading, writing, committing

    @classmethod
    def of(cls, progress: dict[str, Any]) -> Batch:
        return cls(int(progress["numInputRows"]), progress["batchDuration"] / 1000)


@dataclass
class StreamRun:
    """What the demo's query took: Spark's start-up (JVM, session, query start, until the
    first micro-batch began) apart from the micro-batches themselves."""

    startup_seconds: float
    batches: list[Batch]

    @property
    def steady(self) -> list[Batch]:
        """The micro-batches after the first, which also starts the Python workers; all of
        them when there is only one."""
        return self.batches[1:] or self.batches


@dataclass
class Summary:
    published: int
    written: int
    left_in_source: int
    run: StreamRun

    def render(self) -> str:
        steady = self.run.steady
        steady_rows = sum(b.rows for b in steady)
        steady_seconds = sum(b.seconds for b in steady)
        rate = steady_rows / steady_seconds if steady_seconds else 0.0
        first = self.run.batches[0] if self.run.batches else Batch(0, 0.0)
        ok = self.written == self.published and self.left_in_source == 0
        batches = (
            f"{len(steady)} micro-batch{'es' if len(steady) > 1 else ''} after it"
            if len(self.run.batches) > 1
            else "its only micro-batch, workers' start included"
        )
        lines = [
            (f"published to queue '{SOURCE_QUEUE}'", f"{self.published:,}"),
            (f"read by Spark and written to '{SINK_EXCHANGE}'", f"{self.written:,}"),
            (f"left unacknowledged in '{SOURCE_QUEUE}'", f"{self.left_in_source:,}"),
            ("micro-batches", f"{len(self.run.batches):,}"),
            ("Spark start-up (JVM, session, query start)", f"{self.run.startup_seconds:.1f} s"),
            (
                f"first micro-batch, {first.rows:,} rows (starts Python workers)",
                f"{first.seconds:.1f} s",
            ),
            (f"steady rate ({batches}, {steady_rows:,} rows)", f"{rate:,.0f} rows/s"),
        ]
        width = max(len(label) for label, _ in lines) + 1
        return "\n".join(
            ["", "amqp-spark demo"]
            + [f"  {label + ':':<{width}} {value:>12}" for label, value in lines]
            + [
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


def run_stream(url: str, per_trigger: int) -> StreamRun:
    """Run the Spark query with Trigger.AvailableNow; returns its start-up and batches."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    # format("amqp") resolves through the installed pyspark_amqp module; a Databricks
    # notebook calls spark.dataSource.register(AMQPDataSource) instead (see notebooks/).
    started = time.time()
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
            progress = [p for p in query.recentProgress if p["numInputRows"]]
            query.stop()
        first_trigger = (
            datetime.fromisoformat(progress[0]["timestamp"].replace("Z", "+00:00")).timestamp()
            if progress
            else time.time()
        )
        return StreamRun(first_trigger - started, [Batch.of(p) for p in progress])
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
        run = run_stream(broker.url, args.per_trigger)
        summary = Summary(
            published=args.messages,
            written=queue_depth(broker.url, AUDIT_QUEUE),
            left_in_source=queue_depth(broker.url, SOURCE_QUEUE),
            run=run,
        )
    print(summary.render())
    return 0 if summary.written == summary.published and summary.left_in_source == 0 else 1
