"""What the in-process stream-protocol source tests share: a stream queue made and filled
over AMQP 0-9-1, the source's options for it, and a read of it the way a query does (the
driver's positions from ``startingOffsets`` to the stream's end, the ranges read)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from amqp_spark.client import connect
from amqp_spark.source.arrow import source_arrow_schema
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.protocol_ranges import (
    ProtocolPositions,
    plan_protocol_ranges,
    read_protocol_range,
)

#: A message to publish: its body and basic properties.
Message = tuple[bytes, Mapping[str, Any]]


@contextlib.contextmanager
def stream_of(url: str, *groups: Iterable[Message]) -> Iterator[str]:
    """A new stream queue holding ``groups`` of messages, each group confirmed before the
    next is published (so the broker writes it in chunks of its own); deleted afterwards."""
    queue = f"s-{uuid.uuid4().hex[:8]}"
    with connect(url) as conn, conn.channel() as ch:
        ch.queue_declare(queue, durable=True, arguments={"x-queue-type": "stream"})
        ch.confirm_select()
        for group in groups:
            for body, properties in group:
                ch.basic_publish("", queue, body, dict(properties))
            ch.wait_for_confirms(timeout=30)
    try:
        yield queue
    finally:
        with connect(url) as conn, conn.channel() as ch:
            ch.queue_delete(queue)


def source_options(url: str, stream_uri: str, queue: str, **more: str) -> SourceOptions:
    """The source's options reading ``queue`` from its first offset."""
    given = {
        "uri": url,
        "streamUri": stream_uri,
        "queue": queue,
        "queueType": "stream",
        "startingOffsets": "first",
        "pollTimeoutMs": "300",
        **more,
    }
    return SourceOptions.parse(given)


def read_over_the_stream_protocol(options: SourceOptions) -> pa.Table:
    """Everything from ``startingOffsets`` to where the streams end now, as a query's
    batch reads it over the stream protocol."""
    positions = ProtocolPositions(options)
    try:
        start, end = positions.initial(), StreamOffset(positions.ends(force=True))
        ranges = plan_protocol_ranges(options, start, end, positions.committed())
    finally:
        positions.close()
    batches = [batch for part in ranges for batch in read_protocol_range(part)]
    return pa.Table.from_batches(batches, schema=source_arrow_schema())
