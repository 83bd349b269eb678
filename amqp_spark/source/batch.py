"""The batch reader: ``spark.read.format("amqp")``.

* Stream queues: ranges per queue from ``startingOffsets`` (``first`` unless given: a batch
  read reads what is there) to ``endingOffsets``, read by executors like a streaming
  batch, over the protocol ``streamProtocol`` chooses: reading twice returns the same rows.
* Classic queues: each queue is drained by one task, up to the number of messages the queue
  held at planning (and at most ``maxMessagesPerTrigger``). What was read is then either
  requeued (``ackBatchReads=false``, the default: the read is a non-destructive peek, the
  messages come back with ``redelivered=true``) or acked (``ackBatchReads=true``: the read
  consumes them). The ack is sent after the task has handed over its last row; a task that
  fails before that acks nothing (its connection closes and the broker requeues).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from amqp_spark.source.arrow import to_record_batch
from amqp_spark.source.connecting import consume_on_new_channel, open_with_retry, using_queue
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.partitions import (
    QueueDrainPartition,
    StreamProtocolRangePartition,
    StreamRangePartition,
)
from amqp_spark.source.reader_choice import over_stream_protocol
from amqp_spark.source.stream_queues.protocol_ranges import (
    ProtocolPositions,
    plan_protocol_ranges,
    read_protocol_range,
)
from amqp_spark.source.stream_queues.ranges import (
    ROWS_PER_RECORD_BATCH,
    StreamTails,
    plan_ranges,
    read_range,
)
from amqp_spark.source.stream_queues.starting import First
from amqp_spark.source.stream_queues.super_stream_micro_batch import with_partitions

if TYPE_CHECKING:
    from amqp_spark.client import Channel, Connection


class AMQPBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        if "startingOffsets" not in options.given:
            options = dataclasses.replace(options, starting_offsets=First())
        self.options = options

    def partitions(self) -> list[InputPartition]:
        if self.options.is_stream:
            return list(self._stream_ranges())
        return self._queue_drains()

    def _stream_ranges(self) -> list[InputPartition]:
        """Ranges over RabbitMQ's stream protocol where ``streamProtocol`` chooses it (as
        for streaming reads, ``reader_choice``), else over AMQP 0-9-1."""
        self.options = with_partitions(self.options)  # superStream: its partition streams
        if over_stream_protocol(self.options):
            positions = ProtocolPositions(self.options)
            try:
                start, end = positions.initial(), self._end(positions.ends(force=True))
                committed = positions.committed() if self.options.stream_filter else None
            finally:
                positions.close()
            return list(plan_protocol_ranges(self.options, start, end, committed))
        tails = StreamTails(self.options)
        try:
            start, end = tails.initial(), self._end(tails.ends())
        finally:
            tails.close()
        return list(plan_ranges(self.options, start, end, tails))

    def _end(self, ends: dict[str, int]) -> StreamOffset:
        """Where the read ends: ``endingOffsets`` within where the streams end now."""
        wanted = self.options.ending_offsets
        return StreamOffset(
            {
                q: min(wanted.get(q, e), e) if isinstance(wanted, dict) else e
                for q, e in ends.items()
            }
        )

    def _queue_drains(self) -> list[InputPartition]:
        opts = self.options

        def ask_depths(conn: Connection) -> dict[str, int]:
            ch = conn.channel()
            depths = {}
            for queue in opts.queues:
                with using_queue(queue, opts.queue_type):
                    depths[queue] = int(ch.queue_declare(queue, passive=True).message_count)
            return depths

        conn, depths = open_with_retry(
            opts.uri, opts.max_reconnect_attempts, "batch planner", ask_depths
        )
        conn.close()
        cap = opts.max_messages_per_trigger
        return [
            QueueDrainPartition(
                uri=opts.uri,
                queue=queue,
                count=depth if cap is None else min(depth, cap),
                ack=opts.ack_batch_reads,
                prefetch=opts.consumer_prefetch,
                poll_timeout=opts.poll_timeout,
                max_reconnect_attempts=opts.max_reconnect_attempts,
            )
            for queue, depth in depths.items()
            if depth
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, StreamProtocolRangePartition):
            yield from read_protocol_range(partition)
        elif isinstance(partition, StreamRangePartition):
            yield from read_range(partition)
        elif isinstance(partition, QueueDrainPartition):
            yield from drain_queue(partition)


def drain_queue(part: QueueDrainPartition) -> Iterator[pa.RecordBatch]:
    """Up to ``count`` messages of a classic queue; stops early when the queue stays quiet
    for ``pollTimeoutMs`` (another consumer took some). Then acks or requeues them all."""

    def consume(conn: Connection) -> Channel:
        return consume_on_new_channel(conn, part.queue, "classic", part.prefetch)

    conn, ch = open_with_retry(part.uri, part.max_reconnect_attempts, "batch queue reader", consume)
    try:
        pending, taken, last_tag = [], 0, 0
        while taken < part.count:
            d = ch.next_delivery(timeout=part.poll_timeout)
            if d is None:
                break
            batch = [d, *ch.drain_deliveries(max_count=part.count - taken - 1)]
            pending.extend(batch)
            taken += len(batch)
            last_tag = batch[-1].delivery_tag
            if len(pending) >= ROWS_PER_RECORD_BATCH:
                yield to_record_batch(pending, part.queue, with_offsets=False)
                pending = []
        if pending:
            yield to_record_batch(pending, part.queue, with_offsets=False)
        if last_tag:
            if part.ack:
                ch.basic_ack(last_tag, multiple=True)
            else:
                ch.basic_nack(last_tag, multiple=True, requeue=True)
    finally:
        conn.close()
