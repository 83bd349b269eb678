"""A stream range read that outlives its connection.

A stream queue is replicated across a cluster's nodes and keeps its messages, so a task
whose node dies need not fail: it opens the range again on another node (the ``addresses``
rotation goes on to the next one) from the offset after the last row it yielded. Rows
already yielded are Spark's; the ones read since, not yet yielded, are read again. The
rows of the range are therefore exactly those of a read that was never interrupted: a
replayed batch still returns the same rows.

Local Spark runs a task once (``spark.task.maxFailures`` is 1 there), so without this the
loss of one node would fail the query.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator

import pyarrow as pa

from amqp_spark.source.partitions import StreamRangePartition

log = logging.getLogger("amqp_spark.source")

#: Reads the rows of a range from its ``start``, in offset order.
RangeReader = Callable[[StreamRangePartition], Iterator[pa.RecordBatch]]


def resuming(part: StreamRangePartition, read: RangeReader) -> Iterator[pa.RecordBatch]:
    """The record batches ``read(part)`` yields, read on from the offset after the last row
    yielded each time the connection is lost. Gives up (raising the loss) after
    ``max_reconnect_attempts`` + 1 losses in a row with no row yielded between them; each
    reopening has its own bounded attempts (``open_with_retry``)."""
    from amqp_spark.client import ConnectionClosed

    start, losses = part.start, 0
    while True:
        try:
            for batch in read(dataclasses.replace(part, start=start)):
                yield batch
                start, losses = batch.column("offset")[-1].as_py() + 1, 0
            return
        except ConnectionClosed as e:
            losses += 1
            if losses > part.max_reconnect_attempts + 1:
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
