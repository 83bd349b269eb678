"""Stream filtering over RabbitMQ's stream protocol, on the bundled broker and RabbitMQ 4,
without Spark (the driver's positions and the executors' range reads called directly): the
broker is sent ``filter.N`` / ``match-unfiltered`` and skips chunks, the reader drops the
messages of a chunk that passed and do not match, and a filtered range ends although the
broker sends nothing for its last chunks. The rows equal those of the AMQP 0-9-1 path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from amqp_protocol.stream.values import OffsetSpecification, OffsetType
from amqp_spark.client.stream import StreamClient, StreamEndpoint
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.reader_choice import micro_batch_reader
from amqp_spark.source.stream_queues.ranges import StreamTails, plan_ranges, read_range
from amqp_spark.source.stream_queues.stream_queue_micro_batch import (
    StreamProtocolMicroBatchReader,
)
from amqp_spark.stream_filter import FILTER_VALUE_HEADER, StreamFilter
from tests.stream_source.streams import (
    Message,
    read_over_the_stream_protocol,
    source_options,
    stream_of,
)

#: Published in this order, each group confirmed before the next (a chunk or more each):
#: (body prefix, filter value of each message; None: no header).
GROUPS: list[tuple[str, list[str | None]]] = [
    ("a", ["eu", "us"] * 10),  # chunks that pass an eu filter, with us messages to drop
    ("b", ["us"] * 12),  # chunks an eu filter skips
    ("c", [None] * 4),  # unfiltered messages
    ("d", ["eu"] * 3),
    ("e", ["us"] * 6),  # the stream ends with chunks an eu filter skips
]


def tagged(prefix: str, values: list[str | None]) -> list[Message]:
    """Persistent messages (over 0-9-1 the bundled broker gives a message published without
    a delivery mode none, RabbitMQ 4 and the stream protocol 1), tagged with ``values``."""
    return [
        (
            f"{prefix}{i}".encode(),
            {"delivery_mode": 2, "headers": {} if v is None else {FILTER_VALUE_HEADER: v}},
        )
        for i, v in enumerate(values)
    ]


@pytest.fixture
def tagged_stream(stream_urls: tuple[str, str]) -> Iterator[str]:
    with stream_of(stream_urls[0], *(tagged(p, values) for p, values in GROUPS)) as queue:
        yield queue


def expected_bodies(wanted: StreamFilter) -> list[bytes]:
    return [
        f"{prefix}{i}".encode()
        for prefix, values in GROUPS
        for i, value in enumerate(values)
        if wanted.keeps_headers(None if value is None else {FILTER_VALUE_HEADER: value})
    ]


def rows_over_amqp_0_9_1(options: SourceOptions) -> list[dict[str, Any]]:
    tails = StreamTails(options)
    try:
        start, end = tails.initial(), StreamOffset(tails.ends())
        ranges = plan_ranges(options, start, end, tails)
    finally:
        tails.close()
    return rows_of(pa.Table.from_batches([b for part in ranges for b in read_range(part)]))


def rows_of(table: pa.Table) -> list[dict[str, Any]]:
    """Every column of every row but the delivery tag (a 0-9-1 channel's), in offset order."""
    rows = table.drop_columns(["delivery_tag"]).to_pylist()
    return sorted(rows, key=lambda row: row["offset"])


@pytest.mark.parametrize(
    "more",
    [
        {"filterValues": "eu"},
        {"filterValues": "eu", "matchUnfiltered": "true"},
        {"filterValues": "us,eu", "rowsPerPartition": "7"},
    ],
    ids=["eu", "eu-and-unfiltered", "both-in-small-ranges"],
)
def test_a_filtered_read_gives_the_rows_of_amqp_0_9_1(
    stream_urls: tuple[str, str], tagged_stream: str, more: dict[str, str]
) -> None:
    options = source_options(*stream_urls, tagged_stream, **more)
    assert options.stream_filter is not None

    over_protocol = rows_of(read_over_the_stream_protocol(options))

    assert [row["body"] for row in over_protocol] == expected_bodies(options.stream_filter)
    assert over_protocol == rows_over_amqp_0_9_1(options)


def chunks_sent(stream_uri: str, queue: str, properties: dict[str, str]) -> int:
    """How many chunks a subscription from the stream's start is sent (credit for all)."""
    with StreamClient(StreamEndpoint.parse(stream_uri)) as client:
        client.subscribe(1, queue, OffsetSpecification(OffsetType.FIRST), 1000, properties)
        client.stream_stats(queue)  # answered once the broker passed over the whole stream
        count = 0
        while client.next_delivery(0) is not None:
            count += 1
        return count


def test_the_broker_skips_the_chunks_a_subscription_filter_cannot_match(
    stream_urls: tuple[str, str], tagged_stream: str
) -> None:
    _, stream_uri = stream_urls
    everything = chunks_sent(stream_uri, tagged_stream, {})
    eu = chunks_sent(stream_uri, tagged_stream, StreamFilter(("eu",)).subscribe_properties())

    assert 2 <= eu < everything


def test_stream_protocol_reads_filtered_queries(stream_urls: tuple[str, str]) -> None:
    """``streamProtocol`` 'stream' takes ``filterValues`` (it used to refuse them)."""
    options = source_options(*stream_urls, "q", filterValues="eu", streamProtocol="stream")
    assert isinstance(micro_batch_reader(options), StreamProtocolMicroBatchReader)
