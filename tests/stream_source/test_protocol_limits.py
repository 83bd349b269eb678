"""``maxBytesPerTrigger`` over RabbitMQ's stream protocol, on the bundled broker and
RabbitMQ 4, without Spark: the driver turns bytes into rows from the sizes in the chunk
headers it reads, so batches of equal messages hold as many rows as over AMQP 0-9-1, and the
batches read every message once."""

from __future__ import annotations

from amqp_spark.source.limits import Limits
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.stream_queues.protocol_ranges import (
    ProtocolPositions,
    plan_protocol_ranges,
    read_protocol_range,
)
from amqp_spark.source.stream_queues.ranges import StreamTails
from tests.stream_source.streams import source_options, stream_of

BODY_SIZE = 1000
MESSAGES = 20
BODIES = [f"{i:05d}".encode().ljust(BODY_SIZE, b".") for i in range(MESSAGES)]
#: Three bodies and some room: what the stored message adds to its body is far less.
LIMIT = Limits(max_bytes=3 * BODY_SIZE + 500)


def test_max_bytes_bound_batches_as_over_amqp_0_9_1_and_every_message_is_read_once(
    stream_urls: tuple[str, str],
) -> None:
    with stream_of(stream_urls[0], [(body, {}) for body in BODIES]) as queue:
        options = source_options(*stream_urls, queue)
        tails = StreamTails(options)
        try:
            over_amqp = tails.latest(tails.initial(), LIMIT).positions[queue]
        finally:
            tails.close()
        positions = ProtocolPositions(options)
        bodies, sizes = [], []
        try:
            start, stop = positions.initial(), positions.ends(force=True)[queue]
            while start.positions[queue] < stop:
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
    assert bodies == BODIES
