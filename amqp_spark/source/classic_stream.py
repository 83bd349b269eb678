"""The streaming reader of classic (and quorum) queues: at-least-once, acked at Spark's commit.

The runner holds :class:`~amqp_spark.source.classic.ClassicConsumers`: the deliveries of
each queue, unacked, until Spark has committed the batch they are in. A batch's partitions
carry its deliveries to the executors as Arrow IPC bytes.

Acks and Spark's deferred commit: Spark calls ``commit(end of batch N)`` only when it plans
batch N+1, so with an idle stream, or at the end of an AvailableNow or once run, a committed
batch would stay unacked until the next run. But Spark calls ``latestOffset(start)`` only
once every batch up to ``start`` is done and written to the commit log (a batch that failed
is replanned through ``partitions`` without it), also once more after the last batch of an
AvailableNow run. So ``latestOffset`` acks up to ``start`` first: acks go out within a
trigger interval of Spark's commit, idle or not.

``trigger(once=True)`` is the exception: Spark calls nothing on the source after planning the
only batch, and the next run's deferred ``commit`` names a connection that is gone. But Spark
ends the run with SIGTERM to the runner only after writing the batch to the commit log
(measured: ``commits/<N>`` is written before the signal). So with the ``checkpointLocation``
option, the SIGTERM handler looks the batch up in the query's checkpoint and acks it iff it
was committed, before closing the connection; a failed run acks nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit

from amqp_spark.source.arrow import deserialize, serialize, to_record_batch
from amqp_spark.source.checkpoint import latest_batch_committed_at
from amqp_spark.source.classic import ClassicConsumers
from amqp_spark.source.limits import NO_ROW_LIMIT, Limits
from amqp_spark.source.offsets import ClassicOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.partitions import ArrowPartition, split_rows
from amqp_spark.source.queue_stream import QueueStream

log = logging.getLogger("amqp_spark.source")

ONCE_NEEDS_CHECKPOINT = (
    "amqp source: trigger(once=True) on classic queues needs the source option "
    "'checkpointLocation' set to the query's checkpoint directory (the path given to "
    "writeStream.option('checkpointLocation', ...)): Spark calls nothing on the source after "
    "the only batch of a once run, so the source acks that batch when the run ends, once it "
    "finds it committed there. Without it the messages would be requeued and read again by "
    "every run. Or use trigger(availableNow=True): it reads the same backlog and acks it."
)


class ClassicQueueStream(QueueStream[ClassicConsumers]):
    """``readStream`` of queues with ``queueType`` 'classic' or 'quorum', or of ``exchange``."""

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        #: A once run: the query's checkpoint and the end of its batch.
        self._once: tuple[Path, dict[str, Any]] | None = None

    def _new_state(self) -> ClassicConsumers:
        return ClassicConsumers(self.options)

    def initialOffset(self) -> dict[str, Any]:
        return self._runner_state().start_offset().to_dict()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True
        self._runner_state().limit_to_current_depth()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        consumers = self._runner_state()
        begin = ClassicOffset.from_dict(start)
        if isinstance(limit, ReadAllAvailable):  # only trigger(once=True) passes this
            return self._plan_once(consumers, begin)
        consumers.ack_through(begin)  # every batch up to `start` is in Spark's commit log
        limits = self.options.limits.for_batch(limit)
        end = consumers.latest(begin, limits, wait=self._available_now)
        rows = sum(tag - begin.tag(q, end.connection) for q, tag in end.tags.items())
        return (end if self._admits(limit, rows) else begin).to_dict()

    def _plan_once(self, consumers: ClassicConsumers, begin: ClassicOffset) -> dict[str, Any]:
        """The only batch of a once run: everything that arrives (up to the window the
        driver may hold), remembered so that ``stop`` can ack it once Spark committed it."""
        checkpoint = self.options.query_checkpoint()
        if checkpoint is None:
            raise RuntimeError(ONCE_NEEDS_CHECKPOINT)
        consumers.ack_through(begin)  # a no-op unless the batch before is of this connection
        everything = Limits(max_rows=NO_ROW_LIMIT)  # all the windows hold
        end = consumers.latest(begin, everything, wait=True).to_dict()
        self._once = (checkpoint, end)
        return end

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """What lastProgress shows as the source's latestOffset: per queue the messages ready
        on the broker and those received but not yet acked, and the redelivered messages
        received in this run (see ``delivery_limit``)."""
        if self._state is None:
            return None
        state = self._state
        return {
            "kind": "classic",
            "messagesWaiting": state.waiting(),
            "redelivered": state.redelivered(),
        }

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        consumers = self._runner_state()
        segments = consumers.batch(ClassicOffset.from_dict(start), ClassicOffset.from_dict(end))
        counts: dict[str, int] = {}
        partitions: list[InputPartition] = []
        for queue, deliveries in split_rows(segments, self.options.rows_per_partition):
            counts[queue] = counts.get(queue, 0) + len(deliveries)
            batch = to_record_batch(deliveries, queue, with_offsets=False)
            partitions.append(ArrowPartition(serialize(batch)))
        log.info("amqp source: batch of %d message(s) per queue %s", sum(counts.values()), counts)
        return partitions

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, ArrowPartition):
            raise TypeError(f"amqp source: not a batch of classic-queue deliveries: {partition!r}")
        yield from deserialize(partition.ipc)

    def commit(self, end: dict[str, Any]) -> None:
        if self._state is not None:
            self._state.ack_through(ClassicOffset.from_dict(end))

    def stop(self) -> None:
        """Close the connection; a once run first acks its batch if Spark committed it (see
        the module docstring)."""
        if self._state is not None and self._once is not None:
            self._ack_once_batch(self._state, *self._once)
        super().stop()

    @staticmethod
    def _ack_once_batch(consumers: ClassicConsumers, checkpoint: Path, end: dict[str, Any]) -> None:
        try:
            committed = latest_batch_committed_at(checkpoint, end)
        except OSError as e:  # unreadable: left unacked, the broker requeues (at-least-once)
            log.warning("amqp source: once run: cannot read the checkpoint %s: %s", checkpoint, e)
            return
        if committed:
            consumers.ack_through(ClassicOffset.from_dict(end))
        log.info(
            "amqp source: once run ends; its batch %s",
            "was committed: acked" if committed else "was not committed: left to the broker",
        )
