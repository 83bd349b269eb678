"""The driver's stream ends over the stream protocol when the stream's newest chunk is a
tracking chunk (a ``StoreOffset`` writes one; readers are never sent it): the end is that of
the newest message, and the ranges up to it read, on both brokers. Without Spark: the
driver's positions and the executors' range reads called directly."""

from __future__ import annotations

import struct
import uuid

import pyarrow as pa

from amqp_spark.client import connect
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.protocol_ranges import (
    ProtocolPositions,
    plan_protocol_ranges,
    read_protocol_range,
)
from testbed.raw_stream_client import OK, RawClient, string

MESSAGES = 30
#: StoreOffset and QueryOffset (PROTOCOL.adoc).
STORE_OFFSET, QUERY_OFFSET = 0x0A, 0x0B


def stream_with_a_stored_offset_last(url: str, stream_uri: str) -> str:
    """A stream of ``MESSAGES`` messages, then a consumer's stored offset (RabbitMQ writes it
    as a tracking chunk after them)."""
    queue = f"track-{uuid.uuid4().hex[:8]}"
    with connect(url) as conn, conn.channel() as ch:
        ch.queue_declare(queue, durable=True, arguments={"x-queue-type": "stream"})
        ch.confirm_select()
        for i in range(MESSAGES):
            ch.basic_publish("", queue, f"body-{i}".encode())
        ch.wait_for_confirms(timeout=30)
    with RawClient(stream_uri) as raw:
        assert raw.handshake() == OK
        raw.send(STORE_OFFSET, string("a reader") + string(queue) + struct.pack(">Q", 7))
        # StoreOffset has no response: a QueryOffset after it on the connection sees it.
        code, body = raw.request(QUERY_OFFSET, string("a reader") + string(queue))
        assert (code, body.take(">Q")) == (OK, 7)
    return queue


def test_a_stream_whose_newest_chunk_tracks_an_offset_ends_at_its_newest_message(
    stream_urls: tuple[str, str],
) -> None:
    url, stream_uri = stream_urls
    queue = stream_with_a_stored_offset_last(url, stream_uri)
    options = SourceOptions.parse(
        {
            "uri": url,
            "streamUri": stream_uri,
            "streamProtocol": "stream",
            "queue": queue,
            "queueType": "stream",
            "startingOffsets": "first",
            "pollTimeoutMs": "300",
            "rowsPerPartition": "20",
        }
    )
    positions = ProtocolPositions(options)
    try:
        start, end = positions.initial(), StreamOffset(positions.ends(force=True))
    finally:
        positions.close()
    assert end.positions == {queue: MESSAGES}
    ranges = plan_protocol_ranges(options, start, end)
    rows = pa.concat_tables(pa.Table.from_batches(list(read_protocol_range(r))) for r in ranges)
    assert rows.column("body").to_pylist() == [f"body-{i}".encode() for i in range(MESSAGES)]
    assert rows.column("offset").to_pylist() == list(range(MESSAGES))
