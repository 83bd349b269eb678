"""The source's connections die mid-query (cut by a proxy between Spark and the broker, as a
network failure or a broker restart would): the query reconnects within its bounded retries
and goes on. Classic queues lose nothing (what the dead connection held unacked comes back
redelivered); stream queues lose and repeat nothing. Both brokers."""

from __future__ import annotations

import time

import pytest

from amqp_spark.source.partitions import StreamRangePartition
from testbed.waiting import wait_until
from tests.spark.broker_state import ready_once_unconsumed
from tests.spark.conftest import Broker, Queries, ReaderFactory
from tests.spark.inputs import bodies
from tests.spark.recording_proxy import RecordingProxy

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def read_across_a_cut(
    broker: Broker, queries: Queries, options: dict[str, str], queue: str
) -> list[tuple[int | None, bytes, bool]]:
    """(offset, body, redelivered) of every row a processing-time query read while 20
    messages were published before and 20 after its connections were cut."""
    broker.publish(queue, bodies(20, "before"))
    got: list[tuple[int | None, bytes, bool]] = []
    with RecordingProxy(broker.url) as proxy:
        query = queries.start(
            {**options, "uri": proxy.url, "queue": queue, "maxMessagesPerTrigger": "5"},
            queries.checkpoint(),
            lambda df, _: got.extend((r.offset, r.body, r.redelivered) for r in df.collect()),
            trigger={"processingTime": "500 milliseconds"},
        )
        wait_until(lambda: len(got) >= 5, 90, "the first batch")

        opened = len(proxy.methods_sent())
        proxy.cut()
        broker.publish(queue, bodies(20, "after"))
        everything = set(bodies(20, "before") + bodies(20, "after"))
        wait_until(lambda: everything <= {body for _, body, _ in got}, 120, "every message")
        time.sleep(2)  # idle triggers: the last batch is committed, then acked
        assert query.isActive, query.exception()
        assert len(proxy.methods_sent()) > opened, "no connection was made after the cut"
        query.stop()
    return got


def test_classic_queue_loses_nothing_when_the_connection_dies(
    broker: Broker, queries: Queries
) -> None:
    queue = broker.new_queue()

    got = read_across_a_cut(broker, queries, {}, queue)

    first_reads = [body for _, body, redelivered in got if not redelivered]
    assert len(first_reads) == len(set(first_reads)), "a message was delivered new twice"
    assert ready_once_unconsumed(broker, queue) == 0


def test_stream_queue_loses_and_repeats_nothing_when_the_connection_dies(
    broker: Broker, queries: Queries, stream_queue: str
) -> None:
    options = {"queueType": "stream", "startingOffsets": "first"}

    got = read_across_a_cut(broker, queries, options, stream_queue)

    assert sorted(got) == [
        (i, body, False) for i, body in enumerate(bodies(20, "before") + bodies(20, "after"))
    ]


def test_stream_start_is_found_when_the_driver_connection_was_cut_just_before(
    broker: Broker, runner_reader_of: ReaderFactory, stream_queue: str
) -> None:
    """startingOffsets 'first' asks the stream where it begins on the driver's connection
    (Spark calls initialOffset twice on a fresh start); when that connection died a moment
    before, the probe is the first to find out, and the reader reconnects instead of failing
    (as a CI run on RabbitMQ 4 once did when planning probed too)."""
    broker.publish(stream_queue, bodies(20, "before"))
    reader, proxy = runner_reader_of(
        queue=stream_queue, queueType="stream", startingOffsets="first"
    )
    start = reader.initialOffset()
    opened = len(proxy.methods_sent())

    proxy.cut()

    assert reader.initialOffset() == start
    assert len(proxy.methods_sent()) > opened, "no connection was made after the cut"


def test_stream_batch_is_planned_without_a_round_trip(
    broker: Broker, runner_reader_of: ReaderFactory, stream_queue: str
) -> None:
    """Planning a batch of a stream queue sends the broker nothing: where it ends the tail
    knows, and whether retention removed some of it the executors' reads find out."""
    broker.publish(stream_queue, bodies(20, "before"))
    reader, proxy = runner_reader_of(
        queue=stream_queue, queueType="stream", startingOffsets="first"
    )
    start = reader.initialOffset()
    time.sleep(0.2)  # the tail's acks reach the proxy
    sent = proxy.methods_sent()

    parts = reader.partitions(start, {"kind": "stream", "queues": {stream_queue: 20}})

    ranges = [(p.start, p.end) if isinstance(p, StreamRangePartition) else p for p in parts]
    assert ranges == [(0, 20)]
    assert proxy.methods_sent() == sent
