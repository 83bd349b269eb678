"""What RabbitMQ 4.3 refuses, the source never sends (seen on the wire through a recording
proxy): no global ``basic.qos`` (prefetch shared by a channel's consumers) and no transient
non-exclusive queue (``queue.declare`` neither durable nor exclusive). Covers the runner's
connections of classic, exchange and stream reads and an executor reading a stream range."""

from __future__ import annotations

import time
from typing import Any

from pyspark.sql.streaming.datasource import ReadMaxRows

from amqp_spark.source.micro_batch import MicroBatchReader
from tests.spark.conftest import Broker, ReaderFactory
from tests.spark.inputs import bodies
from tests.spark.recording_proxy import QUEUE_DECLARE, RecordingProxy, SentMethod

BASIC_QOS = (60, 10)


def qos_is_global(method: SentMethod) -> bool:
    """basic.qos: prefetch-size (long), prefetch-count (short), then the global bit."""
    return bool(method.arguments[6] & 1)


def declare_flags(method: SentMethod) -> tuple[str, bool, bool, bool]:
    """queue.declare: reserved short, queue shortstr, then passive/durable/exclusive bits."""
    size = method.arguments[2]
    name = method.arguments[3 : 3 + size].decode()
    bits = method.arguments[3 + size]
    return name, bool(bits & 1), bool(bits & 2), bool(bits & 4)


def refused_by_rabbitmq_4_3(proxy: RecordingProxy) -> list[str]:
    found = []
    for methods in proxy.methods_sent():
        for m in methods:
            if (m.class_id, m.method_id) == BASIC_QOS and qos_is_global(m):
                found.append(f"global basic.qos on channel {m.channel}")
            if (m.class_id, m.method_id) == QUEUE_DECLARE:
                name, passive, durable, exclusive = declare_flags(m)
                if not (passive or durable or exclusive):
                    found.append(f"transient non-exclusive queue.declare {name!r}")
    return found


def declared(proxy: RecordingProxy) -> list[tuple[str, bool, bool, bool]]:
    return [
        declare_flags(m)
        for methods in proxy.methods_sent()
        for m in methods
        if (m.class_id, m.method_id) == QUEUE_DECLARE
    ]


def one_batch(reader: MicroBatchReader[Any], rows: int) -> list[Any]:
    """Plan a batch of ``rows`` from the start (bounded wait) and read its partitions here."""
    start = reader.initialOffset()
    deadline = time.monotonic() + 15
    end = reader.latestOffset(start, ReadMaxRows(rows))
    while end == start and time.monotonic() < deadline:
        time.sleep(0.1)
        end = reader.latestOffset(start, ReadMaxRows(rows))
    read = [batch for p in reader.partitions(start, end) for batch in reader.read(p)]
    reader.commit(end)
    return read


def test_classic_and_exchange_reads_use_neither_global_qos_nor_transient_shared_queues(
    broker: Broker, runner_reader_of: ReaderFactory
) -> None:
    queue = broker.new_queue()
    broker.publish(queue, bodies(3))
    classic, by_queue = runner_reader_of(queue=queue, prefetch="70000")  # two consumers
    by_exchange, via_exchange = runner_reader_of(exchange="amq.fanout")

    assert sum(b.num_rows for b in one_batch(classic, 3)) == 3
    by_exchange.initialOffset()
    classic.stop()
    by_exchange.stop()

    assert refused_by_rabbitmq_4_3(by_queue) == []
    assert refused_by_rabbitmq_4_3(via_exchange) == []
    made = [
        (name, durable, exclusive)
        for name, passive, durable, exclusive in declared(via_exchange)
        if not passive
    ]
    assert made == [("", False, True)], "the exchange's queue: server-named, exclusive"


def test_stream_reads_use_neither_global_qos_nor_transient_shared_queues(
    broker: Broker, runner_reader_of: ReaderFactory, stream_queue: str
) -> None:
    broker.publish(stream_queue, bodies(3))
    reader, proxy = runner_reader_of(
        queue=stream_queue, queueType="stream", startingOffsets="first"
    )

    assert sum(b.num_rows for b in one_batch(reader, 3)) == 3
    reader.stop()

    assert len(proxy.methods_sent()) >= 2, "the executor's range read went elsewhere"
    assert refused_by_rabbitmq_4_3(proxy) == []
