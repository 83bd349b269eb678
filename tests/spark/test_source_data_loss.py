"""``failOnDataLoss`` on stream queues: offsets a stopped query had not read yet were removed
by retention (small segments and ``x-max-length-bytes``, so the broker drops whole old
segments at once); the query fails naming what is lost, or with ``false`` goes on from the
first available offset."""

from __future__ import annotations

import logging

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame

from amqp_spark.source.arrow import STREAM_OFFSET_HEADER, stream_offset_of
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.data_loss import DataLossError, lost
from amqp_spark.source.stream_queues.ranges import (
    StreamTails,
    first_offset,
    plan_ranges,
    read_range,
)
from testbed.waiting import wait_until
from tests.spark.conftest import Broker, Queries
from tests.spark.inputs import stream_options
from tests.support import fixtures

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BODY = 1000  #: bytes per message
RETENTION = {
    "x-queue-type": "stream",
    "x-max-length-bytes": 20_000,
    "x-stream-max-segment-size-bytes": 4_000,
}


def numbered(first: int, count: int) -> list[bytes]:
    return [f"{i:06d}".encode().ljust(BODY, b".") for i in range(first, first + count)]


def first_available(broker: Broker, queue: str) -> int:
    """The first offset ``queue`` holds, as the connector sees it (on RabbitMQ the one
    before the first message, once retention removed the first segment)."""
    offset = first_offset(first_message(broker, queue), broker.conn.server_properties)
    assert offset is not None
    return offset


def first_message(broker: Broker, queue: str) -> int:
    ch = broker.conn.channel()
    try:
        ch.basic_qos(prefetch_count=1)
        ch.basic_consume(queue, arguments={STREAM_OFFSET_HEADER: "first"})
        delivery = ch.next_delivery(timeout=10)
        assert delivery is not None, f"stream {queue} delivered nothing from 'first'"
        offset = stream_offset_of(delivery)
        assert offset is not None
        return offset
    finally:
        ch.close()


def truncated_after_a_first_run(broker: Broker, queries: Queries) -> tuple[str, str, int]:
    """A stream whose first 10 messages a query read, then 60 more, enough for retention to
    remove messages the query never read: (queue, checkpoint, the first offset the query
    had not read). Offsets are compared with the stream's, not counted: RabbitMQ 4 gives
    an offset to a tracking chunk at the start of each segment, so they skip."""
    queue = broker.new_queue(arguments=RETENTION, durable=True)
    broker.publish(queue, numbered(0, 10))
    checkpoint = queries.checkpoint()
    rows, _ = queries.collect_available_now(
        stream_options(broker, queue, startingOffsets="first"), checkpoint
    )
    assert sorted(r.body for r in rows) == numbered(0, 10)
    unread = max(r.offset for r in rows) + 1
    for first in range(10, 70, 10):  # in several publishes: chunks, then segments, roll
        broker.publish(queue, numbered(first, 10))
    wait_until(lambda: first_available(broker, queue) > unread, 30, f"retention to remove {unread}")
    return queue, checkpoint, unread


def test_lost_offsets_fail_the_query_naming_queue_offsets_and_option(
    broker: Broker, queries: Queries
) -> None:
    queue, checkpoint, unread = truncated_after_a_first_run(broker, queries)
    read: list[int] = []

    def sink(df: DataFrame, batch_id: int) -> None:
        read.extend(r.offset for r in df.collect())

    query = queries.start(stream_options(broker, queue), checkpoint, sink)
    with pytest.raises(StreamingQueryException) as failure:
        query.awaitTermination(120)

    first = first_available(broker, queue)
    message = str(failure.value)
    assert f"stream queue {queue!r} no longer holds offsets {unread} to {first - 1}," in message
    assert f"the first available offset is {first}" in message
    assert "failOnDataLoss 'false'" in message
    assert read == []


def test_with_fail_on_data_loss_false_the_query_goes_on_from_the_first_available_offset(
    broker: Broker, queries: Queries
) -> None:
    queue, checkpoint, _ = truncated_after_a_first_run(broker, queries)

    rows, _ = queries.collect_available_now(
        stream_options(broker, queue, failOnDataLoss="false"), checkpoint
    )

    in_order = sorted(rows, key=lambda r: r.offset)
    assert in_order[0].offset == first_message(broker, queue)
    kept_from = int(in_order[0].body[:6])
    assert kept_from > 10
    assert [r.body for r in in_order] == numbered(kept_from, 70 - kept_from)


@pytest.mark.parametrize(
    "broker_url", fixtures.broker_params("rabbitmq", "rabbitmq3"), indirect=True
)
def test_a_next_offset_at_rabbitmqs_tracking_chunk_lost_nothing_when_retention_stops_there(
    broker: Broker,
) -> None:
    """RabbitMQ opens every segment but a stream's first with a tracking chunk of one offset:
    a query that read the last message of a segment has that chunk's offset as its next one.
    When retention then removes everything before it, the first message is one offset
    later, yet nothing the query had to read is gone (this was reported as a loss). One
    offset earlier is a real loss. In-process: the runner plans, an executor reads."""
    queue = broker.new_queue(arguments=RETENTION, durable=True)
    watch = broker.conn.channel()  # sees each message's offset before retention removes it
    watch.basic_qos(prefetch_count=100)
    watch.basic_consume(queue, arguments={STREAM_OFFSET_HEADER: "first"})
    written: list[int | None] = []
    first = 0
    while first == 0:  # one message a chunk, until retention removed the first segment
        assert len(written) < 100, "retention removed nothing after 100 KB"
        broker.publish(queue, numbered(len(written), 1))
        delivery = watch.next_delivery(timeout=10)
        assert delivery is not None
        written.append(stream_offset_of(delivery))
        first = first_message(broker, queue)
    assert first - 2 in written and first - 1 not in written, (first, written)
    options = SourceOptions.parse(
        {"uri": broker.url, "queue": queue, "queueType": "stream", "pollTimeoutMs": "500"}
    )
    tails = StreamTails(options)
    try:
        end = StreamOffset(tails.ends())

        def read_from(offset: int) -> list[bytes]:
            parts = plan_ranges(options, StreamOffset({queue: offset}), end, tails)
            return [
                body
                for part in parts
                for batch in read_range(part)
                for body in batch.column("body").to_pylist()
            ]

        kept = written.index(first)
        assert read_from(first - 1) == numbered(kept, len(written) - kept)
        with pytest.raises(DataLossError) as lost_one:
            read_from(first - 2)
    finally:
        tails.close()
    assert f"offsets {first - 2} to {first - 2}," in str(lost_one.value)
    assert f"the first available offset is {first - 1}." in str(lost_one.value)


def test_lost_logs_the_same_facts_when_told_not_to_fail(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="amqp_spark.source"):
        lost("orders", 10, 42, fail=False)

    assert caplog.messages == [
        "amqp source: stream queue 'orders' no longer holds offsets 10 to 41, which the query "
        "had not read yet: retention (x-max-age, x-max-length-bytes) removed them; the first "
        "available offset is 42; failOnDataLoss is false: going on from offset 42"
    ]
