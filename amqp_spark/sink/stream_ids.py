"""Producer names and publishing ids of the stream-protocol writer: exactly once into a stream.

RabbitMQ's publisher deduplication: a publisher declared with a *producer name* (the
protocol's publisher reference) sends a publishing id with every message, and the stream
keeps, per producer name, the highest id it stored; a message whose id is not above it is
dropped (and still confirmed). The ids only have to increase per producer name; gaps are
fine. Measured on RabbitMQ 4 (docs/measurements/stream-dedup.md): dedup holds across
connections, two connections with one name at once interleave without duplicates, one name
is tracked per stream independently, and QueryPublisherSequence answers 0 for a name the
stream never saw.

The ids are derived from what a retried task, a retried batch and a restarted query see
again, and from nothing else:

* the producer name is ``amqp-spark:<query>:<partition>``: ``<query>`` is the streaming
  query's ``id`` (Spark's local property ``sql.streaming.queryId``, which the checkpoint
  keeps across restarts; the run id changes at every start and is not used), or for
  ``df.write`` a UUID fixed when the write is planned; ``<partition>`` is the Spark partition.
  A super stream's partitions are streams of their own, each tracking the name on its own.
* the publishing id of row ``r`` (counted from 0 in the partition) of micro-batch ``b`` is
  ``(b + 1) * 2**32 + r``: within a batch the rows increase, and every id of batch ``b + 1``
  is above every id of batch ``b`` whatever the row counts, without knowing them. Batch 0's
  ids start at 2**32, so a stream's answer 0 ("never seen") is below all of them.

A task that fails after writing rows 0..k, retried, sends rows 0..n again: the broker drops
0..k and stores the rest. A query restarted after a batch was written and before it was
committed replays the batch under the same query id and batch id, hence the same names and
ids. This needs the replayed partition to hold the same rows in the same order (see
docs/sink.md for when it does not).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Low bits of a publishing id: the row within the partition.
ROW_BITS = 32
#: Rows one task may write in one batch (a row index must fit in ROW_BITS).
MAX_ROWS = 1 << ROW_BITS
#: Largest batch id: ``batch + 1`` must fit in the high 32 bits of the unsigned 64-bit id.
MAX_BATCH = (1 << (64 - ROW_BITS)) - 2
#: Producer names longer than this are refused by RabbitMQ 4 (measured: 255 is accepted).
MAX_NAME_BYTES = 255
NAME_PREFIX = "amqp-spark"


class IdRangeError(ValueError):
    """A batch id or a row count outside what the publishing ids can express."""


def producer_name(query: str, partition: int) -> str:
    """The producer name of ``partition`` of the query (or batch write) ``query``."""
    name = f"{NAME_PREFIX}:{query}:{partition}"
    if len(name.encode()) > MAX_NAME_BYTES:
        raise IdRangeError(
            f"amqp sink: producer name {name[:60]!r}... is {len(name.encode())} bytes, more "
            f"than the {MAX_NAME_BYTES} a stream accepts"
        )
    return name


@dataclass(frozen=True)
class PublishingIds:
    """The ids one task writes under: its producer name and its batch's range of ids."""

    producer: str
    batch: int

    def __post_init__(self) -> None:
        if not 0 <= self.batch <= MAX_BATCH:
            raise IdRangeError(
                f"amqp sink: batch id {self.batch} is outside 0..{MAX_BATCH}, the batch ids "
                "the stream writer's publishing ids can hold"
            )

    @property
    def first(self) -> int:
        """The id of the batch's row 0; the next batch's ids all lie above ``first + MAX_ROWS``."""
        return (self.batch + 1) << ROW_BITS

    def for_rows(self, start: int, count: int) -> range:
        """The ids of rows ``start`` .. ``start + count - 1`` of the partition."""
        if start + count > MAX_ROWS:
            raise IdRangeError(
                f"amqp sink: {self.producer} writes more than {MAX_ROWS} rows in batch "
                f"{self.batch}, more than its publishing ids can number; use more partitions"
            )
        return range(self.first + start, self.first + start + count)

    def rows_in_stream(self, sequence: int) -> int:
        """How many of this batch's rows (a prefix: one attempt writes in order, and the
        stream keeps the highest id) the stream holds, given its QueryPublisherSequence
        answer for the producer name; they will be dropped when sent again. All of them
        (``MAX_ROWS``) when ``sequence`` is of a later batch: see ``is_behind``."""
        return max(0, min(sequence - self.first + 1, MAX_ROWS))

    def is_behind(self, sequence: int) -> bool:
        """Whether the stream already holds a later batch of this producer name: the query
        replays a batch from before its last write (a checkpoint restored from a copy, say),
        and every row of this batch is dropped as written."""
        return sequence >= self.first + MAX_ROWS
