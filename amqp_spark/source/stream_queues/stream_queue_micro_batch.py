"""The micro-batch readers of stream queues: exact offset ranges, read by the executors.

The runner holds where each stream queue ends: over AMQP 0-9-1
:class:`~amqp_spark.source.stream_queues.ranges.StreamTails` (a tail consumer per stream),
over RabbitMQ's stream protocol
:class:`~amqp_spark.source.stream_queues.protocol_ranges.ProtocolPositions` (stream stats and
chunk headers). A batch is a range of offsets per queue that any executor reads again the
same way, so nothing is acked at Spark's commit: a stream queue keeps its messages.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, Protocol, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from amqp_spark.source.limits import Limits
from amqp_spark.source.micro_batch import MicroBatchReader
from amqp_spark.source.offsets import StreamOffset
from amqp_spark.source.partitions import StreamProtocolRangePartition, StreamRangePartition
from amqp_spark.source.run_end import runner_call
from amqp_spark.source.stream_queues.protocol_ranges import (
    ProtocolPositions,
    plan_protocol_ranges,
    read_protocol_range,
)
from amqp_spark.source.stream_queues.ranges import StreamTails, plan_ranges, read_range
from amqp_spark.spark_api import ReadLimit

log = logging.getLogger("amqp_spark.source")


class StreamPositions(Protocol):
    """What the runner knows of where stream queues begin and end."""

    def initial(self) -> StreamOffset: ...
    def limit_to_current_end(self) -> None: ...
    def latest(self, start: StreamOffset, limits: Limits) -> StreamOffset: ...
    def report(self) -> dict[str, int]: ...
    def close(self) -> None: ...


P = TypeVar("P", bound=StreamPositions)


class _StreamRangesReader(MicroBatchReader[P]):
    """What the readers of stream queues share: offsets from the runner's positions, ranges
    read by the executors, nothing to do at commit."""

    def _initial(self) -> dict[str, Any]:
        return self._runner_state().initial().to_dict()

    @runner_call
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

    @runner_call
    def reportLatestOffset(self) -> dict[str, Any] | None:
        """What lastProgress shows as the source's latestOffset: where each queue ends as
        far as the source knows."""
        if self._state is None:
            return None
        return {"kind": "stream", "queues": self._state.report()}

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """A range, over the protocol its partition names (the executor's copy of the reader
        is made by another process than the runner's, so the partition decides)."""
        if isinstance(partition, StreamProtocolRangePartition):
            yield from read_protocol_range(partition)
        elif isinstance(partition, StreamRangePartition):
            yield from read_range(partition)
        else:
            raise TypeError(f"amqp source: not a stream range: {partition!r}")

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: a stream keeps its messages, and ranges replay exactly."""


class StreamQueueMicroBatchReader(_StreamRangesReader[StreamTails]):
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


class StreamProtocolMicroBatchReader(_StreamRangesReader[ProtocolPositions]):
    """``readStream`` of queues with ``queueType`` 'stream', over RabbitMQ's stream
    protocol: no tail consumer, executors read chunks."""

    def _new_state(self) -> ProtocolPositions:
        return ProtocolPositions(self.options)

    def _partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        first, last = StreamOffset.from_dict(start), StreamOffset.from_dict(end)
        committed = None
        if self.options.stream_filter is not None:  # filtered reads wait for it on replicas
            committed = self._runner_state().committed()
        ranges: list[InputPartition] = list(
            plan_protocol_ranges(self.options, first, last, committed)
        )
        log.info(
            "amqp source: stream batch %s -> %s in %d range(s) (stream protocol)",
            start,
            end,
            len(ranges),
        )
        return ranges
