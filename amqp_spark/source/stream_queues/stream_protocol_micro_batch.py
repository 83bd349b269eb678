"""The micro-batch readers of stream queues and super streams over the stream protocol.

They plan as the 0-9-1 readers do (offset ranges per stream, the same options and
offsets: a checkpoint written by one is read by the other) but learn the streams' ends
from :class:`~amqp_spark.source.stream_queues.protocol_ends.StreamProtocolEnds` and have
the executors read their ranges chunk by chunk
(:mod:`~amqp_spark.source.stream_queues.chunk_ranges`). A super stream's partitions come
from the ``Partitions`` command.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.chunk_ranges import (
    StreamProtocolRange,
    over_stream_protocol,
    read_chunk_range,
)
from amqp_spark.source.stream_queues.protocol_ends import StreamProtocolEnds
from amqp_spark.source.stream_queues.ranges import plan_ranges
from amqp_spark.source.stream_queues.stream_queue_micro_batch import StreamRangesMicroBatchReader

log = logging.getLogger("amqp_spark.source")


def with_protocol_partitions(options: SourceOptions, stream_uri: str) -> SourceOptions:
    """``options`` reading the partition streams of its ``superStream``, as the broker's
    ``Partitions`` answer lists them."""
    from amqp_spark.client.stream import connect

    name = options.super_stream
    if name is None:
        return options
    with connect(stream_uri, retries=options.max_reconnect_attempts) as client:
        partitions = tuple(client.partitions(name))
    log.info("amqp source: super stream %r has partitions %s", name, ", ".join(partitions))
    options.check_partitions_named(partitions)
    return dataclasses.replace(options, queues=partitions)


class StreamProtocolMicroBatchReader(StreamRangesMicroBatchReader[StreamProtocolEnds]):
    """``readStream`` of stream queues (or, with ``superStream``, of a super stream's
    partitions) over the stream protocol at ``stream_uri``."""

    def __init__(self, options: SourceOptions, stream_uri: str) -> None:
        super().__init__(options)
        self.stream_uri = stream_uri

    def _new_state(self) -> StreamProtocolEnds:
        self.options = with_protocol_partitions(self.options, self.stream_uri)
        return StreamProtocolEnds(self.options, self.stream_uri)

    def _partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        self._runner_state()  # a batch replanned after a restart comes first
        first, last = StreamOffset.from_dict(start), StreamOffset.from_dict(end)
        ranges = over_stream_protocol(plan_ranges(self.options, first, last), self.stream_uri)
        log.info(
            "amqp source: stream batch %s -> %s in %d range(s) over the stream protocol",
            start,
            end,
            len(ranges),
        )
        return list(ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, StreamProtocolRange):
            raise TypeError(f"amqp source: not a stream-protocol range: {partition!r}")
        yield from read_chunk_range(partition)
