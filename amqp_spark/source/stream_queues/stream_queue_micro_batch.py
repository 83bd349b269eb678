"""The micro-batch readers of stream queues: exact offset ranges, read by the executors.

The runner holds a :class:`~amqp_spark.source.stream_queues.ends.StreamEnds` (where each
stream queue ends); a batch is a range of offsets per queue that any executor reads again the
same way, so nothing is acked at Spark's commit: a stream queue keeps its messages. This
module's reader learns the ends and reads the ranges over AMQP 0-9-1
(:class:`~amqp_spark.source.stream_queues.ranges.StreamTails`); ``stream_protocol_micro_batch``
holds the stream protocol's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from amqp_spark.source.micro_batch import MicroBatchReader
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.partitions import StreamRangePartition
from amqp_spark.source.stream_queues.ends import StreamEnds
from amqp_spark.source.stream_queues.ranges import StreamTails, plan_ranges, read_range
from amqp_spark.spark_api import ReadLimit

log = logging.getLogger("amqp_spark.source")


Ends = TypeVar("Ends", bound=StreamEnds)


class StreamRangesMicroBatchReader(MicroBatchReader[Ends]):
    """What the stream readers of either protocol share: offsets from their ``Ends``."""

    def _initial(self) -> dict[str, Any]:
        return self._runner_state().initial().to_dict()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True
        self._runner_state().limit_to_current_end()

    def _latest(
        self, start: dict[str, Any], limit: ReadLimit | None, opening: bool
    ) -> dict[str, Any]:
        limits = self.options.limits.for_batch(limit)
        begin = StreamOffset.from_dict(start)
        end = self._runner_state().latest(begin, limits)
        rows = sum(end[q] - begin.positions.get(q, end[q]) for q in end.positions)
        return (end if self._admits(limit, rows, opening) else begin).to_dict()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """What lastProgress shows as the source's latestOffset: where each queue ends as
        far as the source knows."""
        if self._state is None:
            return None
        return {"kind": "stream", "queues": self._state.report()}

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: a stream keeps its messages, and ranges replay exactly."""


class StreamQueueMicroBatchReader(StreamRangesMicroBatchReader[StreamTails]):
    """``readStream`` of queues with ``queueType`` 'stream', over AMQP 0-9-1."""

    def _new_state(self) -> StreamTails:
        return StreamTails(self.options)

    def _partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        """The batch's ranges. Whether retention removed some of them is found by the
        executors that read them (see :mod:`~amqp_spark.source.stream_queues.data_loss`), not
        here."""
        tails = self._runner_state()  # a batch replanned after a restart comes first
        first, last = StreamOffset.from_dict(start), StreamOffset.from_dict(end)
        ranges: list[InputPartition] = list(plan_ranges(self.options, first, last, tails))
        log.info("amqp source: stream batch %s -> %s in %d range(s)", start, end, len(ranges))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, StreamRangePartition):
            raise TypeError(f"amqp source: not a stream range: {partition!r}")
        yield from read_range(partition)
