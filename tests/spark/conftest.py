"""Fixtures of the ``amqp`` source tests: queues on the broker under test, publishing and
looking at queues through the project's client, and running streaming queries."""

from __future__ import annotations

import signal
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
from amqp_spark.datasource import register
from amqp_spark.source.micro_batch import MicroBatchReader
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.reader_choice import micro_batch_reader
from tests.spark.recording_proxy import RecordingProxy
from tests.support import fixtures


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

    def new_stream_queue(self) -> str:
        return self.new_queue(arguments={"x-queue-type": "stream"}, durable=True)

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


def confirming_channel(url: str) -> tuple[Connection, Channel]:
    """A connection to ``url`` and a channel of it in confirm mode."""
    conn = connect(url)
    ch = conn.channel()
    ch.confirm_select()
    return conn, ch


@pytest.fixture(params=fixtures.broker_params("bundled", "rabbitmq", "rabbitmq3"))
def broker_url(request: pytest.FixtureRequest) -> str:
    """The connector's tests run against RabbitMQ 3.10 as well as 4 and the bundled broker
    (many users still run 3.x): ``test_x[bundled]``, ``[rabbitmq]``, ``[rabbitmq3]``."""
    return fixtures.broker_url_of(request)


@pytest.fixture
def broker(broker_url: str) -> Iterator[Broker]:
    conn, ch = confirming_channel(broker_url)
    b = Broker(broker_url, conn, ch)
    yield b
    for queue in b.declared:
        ch.queue_delete(queue)
    conn.close()


@pytest.fixture
def stream_queue(broker: Broker) -> str:
    """A durable stream queue (``x-queue-type: stream``). Every broker of ``broker_url``
    has them: a refused declare fails the test (a skip would hide it in CI)."""
    return broker.new_stream_queue()


class RestartableBroker:
    """A bundled broker of this test alone, on a fixed port and data directory, that can be
    restarted under a running query; ``broker`` is the test's view of it (its connection is
    replaced at each restart)."""

    def __init__(self, data_dir: Path) -> None:
        from testbed.ports import free_port

        self._port, self._data_dir = free_port(), str(data_dir)
        self._server = self._start()
        self.broker = Broker(self._server.url, *confirming_channel(self._server.url))

    def _start(self) -> Any:
        from broker import Broker as BundledBroker

        return BundledBroker(port=self._port, data_dir=self._data_dir).start()

    def restart(self) -> None:
        self.broker.conn.close()
        self._server.stop()
        self._server = self._start()
        self.broker.conn, self.broker.ch = confirming_channel(self._server.url)

    def stop(self) -> None:
        self.broker.conn.close()
        self._server.stop()


@pytest.fixture
def restartable_broker(tmp_path: Path) -> Iterator[RestartableBroker]:
    restartable = RestartableBroker(tmp_path / "broker-data")
    yield restartable
    restartable.stop()


#: Builds a runner-side stream reader from source options (``uri`` is given by the fixture).
ReaderFactory = Callable[..., tuple[MicroBatchReader, RecordingProxy]]


@pytest.fixture
def runner_reader_of(broker: Broker) -> Iterator[ReaderFactory]:
    """Builds the runner-side reader as Spark's source runner does, in this process, connected
    through a recording proxy (heartbeats off: they are the only frames the client sends
    unasked). The reader chains its SIGTERM handler to the one it finds: a no-op here, so a
    test may send SIGTERM to this process as Spark does to the runner."""
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    made: list[tuple[MicroBatchReader, RecordingProxy]] = []

    def make(**options: str) -> tuple[MicroBatchReader, RecordingProxy]:
        proxy = RecordingProxy(broker.url)
        uri = proxy.url + ("&" if "?" in proxy.url else "?") + "heartbeat=0"
        reader = micro_batch_reader(SourceOptions.parse({"uri": uri, **options}))
        made.append((reader, proxy))
        return reader, proxy

    yield make
    for reader, proxy in made:
        reader.stop()
        proxy.close()
    signal.signal(signal.SIGTERM, previous)


@pytest.fixture
def amqp_spark(spark: SparkSession) -> SparkSession:
    """The session with ``amqp`` registered explicitly (as in a Databricks notebook)."""
    register(spark)
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
