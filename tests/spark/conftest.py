"""Fixtures of the ``amqp`` source tests: queues on the broker under test, publishing and
looking at queues through the project's client, and running streaming queries."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.streaming import StreamingQuery

from amqp_spark.client import Channel, Connection, connect
from amqp_spark.datasource import AMQPDataSource


@dataclass
class Broker:
    """The broker under test, seen through one connection of the project's client."""

    url: str
    conn: Connection
    ch: Channel
    declared: list[str] = field(default_factory=list)

    def new_queue(self, arguments: dict[str, Any] | None = None, durable: bool = False) -> str:
        name = f"src-{uuid.uuid4().hex[:10]}"
        self.ch.queue_declare(name, durable=durable, arguments=arguments)
        self.declared.append(name)
        return name

    def publish(
        self,
        routing_key: str,
        bodies: list[bytes],
        exchange: str = "",
        properties: dict[str, Any] | None = None,
    ) -> None:
        """Publish with confirms, so the messages are on the broker when this returns."""
        for body in bodies:
            self.ch.basic_publish(exchange, routing_key, body, properties=properties)
        self.ch.wait_for_confirms(timeout=60)

    def ready(self, queue: str) -> int:
        return int(self.ch.queue_declare(queue, passive=True).message_count)

    def wait_ready(self, queue: str, count: int, timeout: float = 15.0) -> int:
        """The ready count once it equals ``count`` or ``timeout`` ran out (requeues after a
        connection closes take a moment)."""
        deadline = time.monotonic() + timeout
        ready = self.ready(queue)
        while ready != count and time.monotonic() < deadline:
            time.sleep(0.1)
            ready = self.ready(queue)
        return ready


@pytest.fixture
def broker(broker_url: str) -> Iterator[Broker]:
    conn = connect(broker_url)
    ch = conn.channel()
    ch.confirm_select()
    b = Broker(broker_url, conn, ch)
    yield b
    for queue in b.declared:
        ch.queue_delete(queue)
    conn.close()


@pytest.fixture
def amqp_spark(spark: SparkSession) -> SparkSession:
    """The session with ``amqp`` registered explicitly (as in a Databricks notebook)."""
    spark.dataSource.register(AMQPDataSource)
    return spark


@dataclass
class Queries:
    """Starts streaming queries that collect what they read (foreachBatch runs in this
    process) and stops them all at the end of the test."""

    spark: SparkSession
    tmp: Path
    started: list[StreamingQuery] = field(default_factory=list)

    def checkpoint(self) -> str:
        return str(self.tmp / f"ck-{uuid.uuid4().hex[:8]}")

    def start(
        self,
        options: dict[str, str],
        checkpoint: str,
        sink: Callable[[DataFrame, int], None],
        trigger: dict[str, Any] | None = None,
    ) -> StreamingQuery:
        df = self.spark.readStream.format("amqp").options(**options).load()
        writer = df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
        query = writer.trigger(**(trigger or {"availableNow": True})).start()
        self.started.append(query)
        return query

    def collect_available_now(
        self, options: dict[str, str], checkpoint: str | None = None
    ) -> tuple[list[Row], list[int]]:
        """Rows read by one AvailableNow run and the size of each batch."""
        rows: list[Row] = []
        sizes: list[int] = []

        def sink(df: DataFrame, batch_id: int) -> None:
            got = df.collect()
            rows.extend(got)
            sizes.append(len(got))

        query = self.start(options, checkpoint or self.checkpoint(), sink)
        assert query.awaitTermination(180), "AvailableNow run did not end within 180 s"
        assert query.exception() is None
        return rows, sizes


@pytest.fixture
def queries(amqp_spark: SparkSession, tmp_path: Path) -> Iterator[Queries]:
    q = Queries(amqp_spark, tmp_path)
    yield q
    for query in q.started:
        if query.isActive:
            query.stop()
