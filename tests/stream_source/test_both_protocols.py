"""The source's stream reading over the stream protocol against the same over AMQP 0-9-1,
without Spark: where each stream begins and ends as the driver learns it, and the rows of
every range as the executors read them, every column of every row. Messages published over
0-9-1 with every basic property and headers of every field type, some without any."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pyarrow as pa
import pytest

from amqp_spark.client import connect
from amqp_spark.client.stream import connect as stream_connect
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.chunk_ranges import (
    over_stream_protocol,
    read_chunk_range_once,
)
from amqp_spark.source.stream_queues.protocol_ends import StreamProtocolEnds
from amqp_spark.source.stream_queues.ranges import StreamTails, plan_ranges, read_range_once
from tests.spark.test_source_round_trip import PROPERTIES
from tests.spark.test_source_stream_columns import STREAM_HEADERS

pytestmark = pytest.mark.rabbitmq

#: Published in confirmed runs of these sizes, so that the stream has chunks of several
#: sizes and the ranges begin and end inside chunks.
RUNS = (1, 700, 3, 1200, 96)


@pytest.fixture
def stream(rabbitmq_url: str, rabbitmq_stream_url: str) -> Iterator[str]:
    name = f"both-{uuid.uuid4().hex[:8]}"
    with connect(rabbitmq_url) as conn:
        ch = conn.channel()
        ch.queue_declare(name, durable=True, arguments={"x-queue-type": "stream"})
        ch.confirm_select()
        headers = {name: value for name, (value, _) in STREAM_HEADERS.items()}
        n = 0
        for run in RUNS:
            for _ in range(run):
                plain = n % 5 == 0
                properties = (
                    {} if plain else {**PROPERTIES, "message_id": f"id-{n}", "headers": headers}
                )
                ch.basic_publish("", name, f"body-{n}".encode(), properties)
                n += 1
            ch.wait_for_confirms(timeout=30)
    yield name
    with stream_connect(rabbitmq_stream_url) as client:
        client.delete_stream(name)


def options(rabbitmq_url: str, rabbitmq_stream_url: str, stream: str) -> SourceOptions:
    return SourceOptions.parse(
        {
            "uri": rabbitmq_url,
            "streamUri": rabbitmq_stream_url,
            "queue": stream,
            "queueType": "stream",
            "startingOffsets": "first",
            "rowsPerPartition": "450",
        }
    )


def test_the_driver_learns_the_same_ends_both_ways(
    rabbitmq_url: str, rabbitmq_stream_url: str, stream: str
) -> None:
    opts = options(rabbitmq_url, rabbitmq_stream_url, stream)
    tails, ends = StreamTails(opts), StreamProtocolEnds(opts, rabbitmq_stream_url)
    try:
        assert ends.ends() == tails.ends() == {stream: sum(RUNS)}
        assert ends.initial() == tails.initial() == StreamOffset({stream: 0})
        ends.limit_to_current_end()
        assert ends.ends() == {stream: sum(RUNS)}
    finally:
        tails.close()
        ends.close()


def test_every_range_reads_the_same_rows_both_ways(
    rabbitmq_url: str, rabbitmq_stream_url: str, stream: str
) -> None:
    opts = options(rabbitmq_url, rabbitmq_stream_url, stream)
    end = StreamOffset({stream: sum(RUNS)})
    ranges = plan_ranges(opts, StreamOffset({stream: 3}), end)
    assert len(ranges) == 5
    over_091 = [pa.Table.from_batches(list(read_range_once(r))) for r in ranges]
    chunked = over_stream_protocol(ranges, rabbitmq_stream_url)
    over_stream = [pa.Table.from_batches(list(read_chunk_range_once(r))) for r in chunked]
    for r, ours, theirs in zip(ranges, over_stream, over_091, strict=True):
        assert ours.num_rows == r.end - r.start
        assert ours.schema == theirs.schema
        for column in theirs.column_names:
            assert ours.column(column).to_pylist() == theirs.column(column).to_pylist(), column
