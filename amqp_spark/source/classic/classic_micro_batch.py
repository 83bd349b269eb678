"""The micro-batch reader of classic (and quorum) queues: at-least-once, acked at Spark's
commit.

The runner holds :class:`~amqp_spark.source.classic.driver_consumers.ClassicConsumers`: the
deliveries of each queue, unacked, until Spark has committed the batch they are in. A batch's
partitions carry its deliveries to the executors as Arrow IPC bytes: each row's own
columns and the distinct kinds of delivery, joined on the executor (``arrow``).

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

A Spark without admission control (PySpark 4.0, 4.1; see ``micro_batch``) runs AvailableNow
queries that way too, and does not say which trigger runs: there every batch may be the
run's last, so the option is needed for every stream, and the end of the run (SIGTERM, or
``stop()``, which these call) acks the last batch iff it was committed. The run's first
batch waits for what the queues hold, as a once run's does. Where the option is given with
any trigger of any Spark, the end of the run acks the last batch so, rather than leaving it
to the broker to deliver again to the next run.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from amqp_spark.source.arrow import (
    classic_rows,
    deserialize,
    joined_record_batch,
    kind_columns,
    serialize,
)
from amqp_spark.source.classic.checkpoint import latest_batch_committed_at
from amqp_spark.source.classic.driver_consumers import ClassicConsumers
from amqp_spark.source.limits import NO_ROW_LIMIT
from amqp_spark.source.micro_batch import MicroBatchReader
from amqp_spark.source.offsets import ClassicOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.partitions import HeldRowsPartition, split_rows
from amqp_spark.source.run_end import runner_call
from amqp_spark.spark_api import PYSPARK_VERSION, ReadAllAvailable, ReadLimit

log = logging.getLogger("amqp_spark.source")

ONCE_NEEDS_CHECKPOINT = (
    "amqp source: trigger(once=True) on classic queues needs the source option "
    "'checkpointLocation' set to the query's checkpoint directory (the path given to "
    "writeStream.option('checkpointLocation', ...)): Spark calls nothing on the source after "
    "the only batch of a once run, so the source acks that batch when the run ends, once it "
    "finds it committed there. Without it the messages would be requeued and read again by "
    "every run. Or use trigger(availableNow=True): it reads the same backlog and acks it."
)

NO_ADMISSION_CONTROL_NEEDS_CHECKPOINT = (
    "amqp source: on PySpark {version}, a stream of classic or quorum queues needs the "
    "source option 'checkpointLocation' set to the query's checkpoint directory (the path "
    "given to writeStream.option('checkpointLocation', ...)): PySpark before 4.2 does not "
    "tell the source which trigger runs, and ends an AvailableNow or once run without "
    "calling the source after its only batch, so the source acks the last batch of a run "
    "when the run ends, once it finds it committed there. Without it those messages would "
    "be requeued and read again by the next run. PySpark 4.2 and later need it for "
    "trigger(once=True) only."
)


class ClassicMicroBatchReader(MicroBatchReader[ClassicConsumers]):
    """``readStream`` of queues with ``queueType`` 'classic' or 'quorum', or of ``exchange``."""

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        #: The query's checkpoint and the end of a batch that may be the run's last with no
        #: call to the source after it: acked at the end of the run iff Spark committed it.
        self._ack_at_end: tuple[Path, dict[str, Any]] | None = None

    def _new_state(self) -> ClassicConsumers:
        return ClassicConsumers(self.options)

    def _initial(self) -> dict[str, Any]:
        return self._runner_state().start_offset().to_dict()

    @runner_call
    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True
        self._runner_state().limit_to_current_depth()

    def _latest(
        self, start: dict[str, Any], limit: ReadLimit | None, opening: bool
    ) -> dict[str, Any]:
        consumers = self._runner_state()
        begin = ClassicOffset.from_dict(start)
        once = isinstance(limit, ReadAllAvailable)  # only trigger(once=True) passes this
        # Batches after which the run may end with no call to the source need the query's
        # checkpoint: once runs', and every batch where Spark passes no limit (see the module
        # docstring). Given, it serves every run: the last batch before a stop is acked too.
        if once or limit is None:
            checkpoint: Path | None = self._checkpoint_for_last_batch(once)
        else:
            checkpoint = self._query_checkpoint
        consumers.ack_through(begin)  # every batch up to `start` is in Spark's commit log
        limits = self.options.limits.for_batch(limit)
        whole_run = once or opening  # the batch may be all the run reads
        if whole_run and limits.max_rows is None:
            limits = replace(limits, max_rows=NO_ROW_LIMIT)  # all the windows hold
        end = consumers.latest(begin, limits, wait=self._available_now or whole_run)
        rows = sum(tag - begin.tag(q, end.connection) for q, tag in end.tags.items())
        if not self._admits(limit, rows, opening):
            return begin.to_dict()
        if checkpoint is not None and rows:
            self._ack_at_end = (checkpoint, end.to_dict())
        return end.to_dict()

    @functools.cached_property
    def _query_checkpoint(self) -> Path | None:
        """The ``checkpointLocation`` option, checked once (``latestOffset`` must be cheap)."""
        return self.options.query_checkpoint()

    def _checkpoint_for_last_batch(self, once: bool) -> Path:
        """The query's checkpoint, where the end of the run finds whether its last batch
        was committed (see the module docstring)."""
        checkpoint = self._query_checkpoint
        if checkpoint is None:
            raise RuntimeError(
                ONCE_NEEDS_CHECKPOINT
                if once
                else NO_ADMISSION_CONTROL_NEEDS_CHECKPOINT.format(version=PYSPARK_VERSION)
            )
        return checkpoint

    @runner_call
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

    def _partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        consumers = self._runner_state()
        segments = consumers.batch(ClassicOffset.from_dict(start), ClassicOffset.from_dict(end))
        counts: dict[str, int] = {}
        partitions: list[InputPartition] = []
        for queue, deliveries in split_rows(segments, self.options.rows_per_partition):
            counts[queue] = counts.get(queue, 0) + len(deliveries)
            kinds = serialize(kind_columns(deliveries.distinct))
            partitions.append(HeldRowsPartition(queue, serialize(classic_rows(deliveries)), kinds))
        log.info("amqp source: batch of %d message(s) per queue %s", sum(counts.values()), counts)
        return partitions

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, HeldRowsPartition):
            raise TypeError(f"amqp source: not a batch of classic-queue deliveries: {partition!r}")
        (kinds,) = deserialize(partition.kinds)
        for rows in deserialize(partition.rows):
            yield joined_record_batch(rows, kinds, partition.queue)

    @runner_call
    def commit(self, end: dict[str, Any]) -> None:
        if self._state is not None:
            self._state.ack_through(ClassicOffset.from_dict(end))

    @runner_call
    def stop(self) -> None:
        """Close the connection; first ack the run's last batch if it may have had no call
        after it and Spark committed it (see the module docstring)."""
        if self._state is not None and self._ack_at_end is not None:
            last, self._ack_at_end = self._ack_at_end, None  # stop() may come twice
            self._ack_last_batch(self._state, *last)
        super().stop()

    @staticmethod
    def _ack_last_batch(consumers: ClassicConsumers, checkpoint: Path, end: dict[str, Any]) -> None:
        try:
            committed = latest_batch_committed_at(checkpoint, end)
        except OSError as e:  # unreadable: left unacked, the broker requeues (at-least-once)
            log.warning("amqp source: run end: cannot read the checkpoint %s: %s", checkpoint, e)
            return
        if committed:
            consumers.ack_through(ClassicOffset.from_dict(end))
        log.info(
            "amqp source: run ends; its last batch %s",
            "was committed: acked" if committed else "was not committed: left to the broker",
        )
