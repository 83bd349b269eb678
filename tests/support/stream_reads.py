"""Reading stream ranges in the failover tests: the rows a read yields, with a node dying
after its first record batch; the driver's view of one stream over the stream protocol."""

from __future__ import annotations

from collections.abc import Callable

from amqp_spark.source.options import SourceOptions
from amqp_spark.source.partitions import StreamProtocolRangePartition
from amqp_spark.source.stream_queues.protocol_ranges import ProtocolPositions, read_protocol_range


def rows_dying_after_first_batch(
    stream_uri: str, stream: str, count: int, die: Callable[[], None]
) -> list[tuple[int, bytes]]:
    """The (offset, body) rows of a stream-protocol read of offsets ``[0, count)`` of
    ``stream`` (up to 5 reconnections); ``die`` is called once, after the first record batch
    (the node the read is on dies mid-read)."""
    part = StreamProtocolRangePartition(
        stream_uri=stream_uri,
        queue=stream,
        start=0,
        end=count,
        poll_timeout=2.0,
        max_reconnect_attempts=5,
    )
    rows: list[tuple[int, bytes]] = []
    for batch in read_protocol_range(part):
        offsets, bodies = batch.column("offset").to_pylist(), batch.column("body").to_pylist()
        if not rows:
            die()
        rows += zip(offsets, bodies, strict=True)
    return rows


def protocol_positions(url: str, stream: str, stream_uri: str) -> ProtocolPositions:
    """The driver's view of where ``stream`` ends, over the stream protocol at ``stream_uri``."""
    options = SourceOptions.parse(
        {
            "uri": url,
            "queue": stream,
            "queueType": "stream",
            "streamProtocol": "stream",
            "streamUri": stream_uri,
        }
    )
    return ProtocolPositions(options)
