"""``maxBytesPerTrigger`` over RabbitMQ's stream protocol, on the bundled broker and
RabbitMQ 4, without Spark: the driver turns bytes into rows from the sizes in the chunk
headers it reads, so batches of equal messages hold as many rows as over AMQP 0-9-1, and the
batches read every message once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from amqp_spark.client import connect
from amqp_spark.source.limits import Limits
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.protocol_ranges import (
    ProtocolPositions,
    plan_protocol_ranges,
    read_protocol_range,
)
from amqp_spark.source.stream_queues.ranges import StreamTails

BODY_SIZE = 1000
MESSAGES = 20
#: Three bodies and some room: what the stored message adds to its body is far less.
LIMIT = Limits(max_bytes=3 * BODY_SIZE + 500)


@pytest.fixture
def stream_of_equal_messages(stream_urls: tuple[str, str]) -> Iterator[str]:
    url, _ = stream_urls
    queue = f"sl-{uuid.uuid4().hex[:8]}"
    with connect(url) as conn, conn.channel() as ch:
        ch.queue_declare(queue, durable=True, arguments={"x-queue-type": "stream"})
        ch.confirm_select()
        for i in range(MESSAGES):
            ch.basic_publish("", queue, f"{i:05d}".encode().ljust(BODY_SIZE, b"."))
        ch.wait_for_confirms(timeout=30)
    yield queue
    with connect(url) as conn, conn.channel() as ch:
        ch.queue_delete(queue)


def options_of(stream_urls: tuple[str, str], queue: str) -> SourceOptions:
    url, stream_uri = stream_urls
    given = {
        "uri": url,
        "streamUri": stream_uri,
        "queue": queue,
        "queueType": "stream",
        "startingOffsets": "first",
        "pollTimeoutMs": "300",
    }
    return SourceOptions.parse(given)


def test_max_bytes_bound_batches_as_over_amqp_0_9_1_and_every_message_is_read_once(
    stream_urls: tuple[str, str], stream_of_equal_messages: str
) -> None:
    queue = stream_of_equal_messages
    options = options_of(stream_urls, queue)
    tails = StreamTails(options)
    try:
        over_amqp = tails.latest(tails.initial(), LIMIT).positions[queue]
    finally:
        tails.close()
    positions = ProtocolPositions(options)
    bodies, sizes = [], []
    try:
        start = positions.initial()
        while start.positions[queue] < MESSAGES:
            end = positions.latest(start, LIMIT)
            sizes.append(end.positions[queue] - start.positions[queue])
            for part in plan_protocol_ranges(options, start, end):
                for batch in read_protocol_range(part):
                    bodies += batch.column("body").to_pylist()
            start = StreamOffset(end.positions)
    finally:
        positions.close()

    assert over_amqp == 3
    assert set(sizes) == {3} or (set(sizes[:-1]) == {3} and sizes[-1] < 3)
    assert bodies == [f"{i:05d}".encode().ljust(BODY_SIZE, b".") for i in range(MESSAGES)]
