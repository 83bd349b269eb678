"""Filtered stream ranges read exactly on a real broker, in-process (the runner's tail plans,
an executor's read follows, no Spark): a read ends at a match the driver saw, reading past
the range's end to reach one, or reads by offset when none is known; never when deliveries
go quiet, so a broker slow to deliver (a proxy holding back what it sends) loses no row."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from amqp_spark.source.arrow import STREAM_OFFSET_HEADER, stream_offset_of
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.partitions import StreamRangePartition
from amqp_spark.source.stream_queues.ranges import StreamTails, plan_ranges, read_range
from amqp_spark.stream_filter import FILTER_VALUE_HEADER
from tests.spark.conftest import Broker
from tests.spark.recording_proxy import RecordingProxy

#: Each read from the broker waits this long in the proxy: longer than pollTimeoutMs (0.1 s),
#: within the x10 silence a read tolerates before failing.
SLOW = 0.5


@pytest.fixture
def slow_proxy(broker: Broker) -> Iterator[RecordingProxy]:
    with RecordingProxy(broker.url) as proxy:
        proxy.delay_to_client = SLOW
        yield proxy


def publish(broker: Broker, queue: str, prefix: str, regions: list[str]) -> None:
    """Messages ``<prefix><i>`` tagged with ``regions[i]``, confirmed together: the broker
    writes them after what came before, in a chunk of their own or more."""
    for i, region in enumerate(regions):
        broker.ch.basic_publish(
            "",
            queue,
            f"{prefix}{i}".encode(),
            properties={"headers": {FILTER_VALUE_HEADER: region}},
        )
    broker.ch.wait_for_confirms(timeout=60)


def offsets_by_body(broker: Broker, queue: str, count: int) -> dict[bytes, int]:
    """The offset of each of the ``count`` messages of ``queue`` (RabbitMQ 4's skip some)."""
    ch = broker.conn.channel()
    try:
        ch.basic_qos(prefetch_count=count)
        ch.basic_consume(queue, arguments={STREAM_OFFSET_HEADER: "first"})
        found = {}
        for _ in range(count):
            d = ch.next_delivery(timeout=10)
            assert d is not None, f"{queue}: fewer than {count} messages"
            offset = stream_offset_of(d)
            assert offset is not None
            found[d.body] = offset
        return found
    finally:
        ch.close()


def plan(broker: Broker, queue: str, end: int | None = None) -> list[StreamRangePartition]:
    """The partitions of a batch from the stream's first offset to ``end`` (else where it
    ends), filtered by eu, planned by a tail that attached after everything was written."""
    options = SourceOptions.parse(
        {
            "uri": broker.url,
            "queue": queue,
            "queueType": "stream",
            "filterValues": "eu",
            "startingOffsets": "first",
            "pollTimeoutMs": "100",
        }
    )
    tails = StreamTails(options)
    try:
        start = tails.initial()
        stop = StreamOffset({queue: tails.ends()[queue] if end is None else end})
        return plan_ranges(options, start, stop, tails)
    finally:
        tails.close()


def bodies_read(parts: list[StreamRangePartition], proxy: RecordingProxy) -> list[bytes]:
    rows = []
    for part in parts:
        for batch in read_range(dataclasses.replace(part, uri=proxy.url)):
            rows += batch.column("body").to_pylist()
    return rows


def test_a_range_with_no_known_match_is_read_by_offset_and_loses_nothing_on_a_slow_broker(
    broker: Broker, stream_queue: str, slow_proxy: RecordingProxy
) -> None:
    """The tail attached at the last chunk, which holds no match (the broker may have cut the
    last publish into several chunks: the last is one of them): no match is known, so the
    range is read unfiltered up to its last offset. (Before, the read ended after
    pollTimeoutMs of quiet: here, before the slow broker delivered anything.)"""
    publish(broker, stream_queue, "a", ["eu", "us"] * 15)
    publish(broker, stream_queue, "b", ["us"] * 5)

    parts = plan(broker, stream_queue)

    assert parts and not any(p.filter_on_broker for p in parts), "a match is known?"
    assert bodies_read(parts, slow_proxy) == [f"a{i}".encode() for i in range(0, 30, 2)]


def test_a_range_reads_past_its_end_to_a_known_match_and_keeps_only_its_own_rows(
    broker: Broker, stream_queue: str, slow_proxy: RecordingProxy
) -> None:
    """The batch ends inside a stretch without a match; the tail knows only the matches
    after it: the filtered read goes on to the first of those and drops what is past the
    end."""
    publish(broker, stream_queue, "a", ["eu", "us"] * 10)
    publish(broker, stream_queue, "b", ["us"] * 5)
    publish(broker, stream_queue, "c", ["eu"])  # the last chunk: the tail sees it
    offsets = offsets_by_body(broker, stream_queue, 26)
    end = offsets[b"b2"]

    parts = plan(broker, stream_queue, end)

    assert [(p.end, p.stop_at, p.filter_on_broker) for p in parts] == [(end, offsets[b"c0"], True)]
    assert bodies_read(parts, slow_proxy) == [f"a{i}".encode() for i in range(0, 20, 2)]


def test_a_range_ends_at_its_last_match_the_tail_saw_on_a_slow_broker(
    broker: Broker, stream_queue: str, slow_proxy: RecordingProxy
) -> None:
    publish(broker, stream_queue, "a", ["eu", "us"] * 10)
    publish(broker, stream_queue, "b", ["eu"])  # the last chunk: the tail sees it
    offsets = offsets_by_body(broker, stream_queue, 21)

    parts = plan(broker, stream_queue)

    assert [(p.stop_at, p.filter_on_broker) for p in parts] == [(offsets[b"b0"], True)]
    assert bodies_read(parts, slow_proxy) == [f"a{i}".encode() for i in range(0, 20, 2)] + [b"b0"]
