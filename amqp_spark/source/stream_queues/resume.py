"""A stream range read that outlives its connection.

A stream queue is replicated across a cluster's nodes and keeps its messages, so a task
whose node dies need not fail: it opens the range again on another node (the ``addresses``
rotation goes on to the next one) from the offset after the last row it yielded. Rows
already yielded are Spark's; the ones read since, not yet yielded, are read again. The
rows of the range are therefore exactly those of a read that was never interrupted: a
replayed batch still returns the same rows.

Local Spark runs a task once (``spark.task.maxFailures`` is 1 there), so without this the
loss of one node would fail the query. The same holds over RabbitMQ's stream protocol
(``protocol_ranges``), whose losses ``client.stream.nodes.is_transient`` tells.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pyarrow as pa

from amqp_spark.source.partitions import StreamProtocolRangePartition, StreamRangePartition

log = logging.getLogger("amqp_spark.source")

P = TypeVar("P", StreamRangePartition, StreamProtocolRangePartition)


def lost_over_amqp(error: Exception) -> bool:
    """An AMQP 0-9-1 range read's connection was lost."""
    from amqp_spark.client import ConnectionClosed

    return isinstance(error, ConnectionClosed)


def resuming(
    part: P,
    read: Callable[[P], Iterator[pa.RecordBatch]],
    is_loss: Callable[[Exception], bool] = lost_over_amqp,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[pa.RecordBatch]:
    """The record batches ``read(part)`` yields, read on from the offset after the last row
    yielded each time the connection is lost (``is_loss``). Gives up (raising the loss)
    after ``max_reconnect_attempts`` + 1 losses in a row with no row yielded between them;
    each reopening has its own bounded attempts (``open_with_retry``, ``open_stream``), and
    from the second loss in a row on it waits first, the pause doubling as between
    connection attempts (``client.backoff``): a stream whose leader died is refused on the
    other nodes until one is elected (``STREAM_NOT_AVAILABLE``, seconds, measured on
    RabbitMQ 4)."""
    from amqp_spark.client import backoff

    start, losses = part.start, 0
    while True:
        if pause := backoff.after_losses(losses):
            sleep(pause)
        try:
            for batch in read(dataclasses.replace(part, start=start)):
                yield batch
                start, losses = batch.column("offset")[-1].as_py() + 1, 0
            return
        except Exception as e:
            losses += 1
            if not is_loss(e) or losses > part.max_reconnect_attempts + 1:
                raise
            log.warning(
                "amqp source: lost the connection reading stream queue %r (%s); reading on "
                "from offset %d of [%d, %d)",
                part.queue,
                e,
                start,
                part.start,
                part.end,
            )
