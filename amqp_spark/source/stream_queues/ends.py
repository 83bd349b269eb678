"""The driver's view of where each stream queue begins and ends, whatever the protocol that
learns it: what a query starts from (``startingOffsets``), where its next batch ends (the
limits, AvailableNow's target), and whether a checkpoint's offsets are of what it reads.

Two kinds learn the ends: :class:`~amqp_spark.source.stream_queues.ranges.StreamTails`
(AMQP 0-9-1, a tail consumer per stream) and
:class:`~amqp_spark.source.stream_queues.protocol_ends.StreamProtocolEnds` (the stream
protocol: ``StreamStats`` and the last chunk's header).
"""

from __future__ import annotations

import datetime
import threading
from abc import ABC, abstractmethod

from amqp_spark.source.limits import Limits
from amqp_spark.source.offsets import OffsetError, StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.starting import Exactly, First, Last, Next, QueueStart


class StreamEnds(ABC):
    """Where each of the options' stream queues ends; thread-safe."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._lock = threading.RLock()
        self._target: dict[str, int] | None = None  #: AvailableNow: never read past this

    @abstractmethod
    def _current_ends(self) -> dict[str, int]:
        """Per queue, the next offset to be written as far as known now (0 for a stream
        never seen to hold a message); called under the lock."""

    @abstractmethod
    def _settled_ends(self) -> dict[str, int]:
        """``_current_ends`` once everything written before the call is known."""

    @abstractmethod
    def _first_at(self, queue: str, spec: str | datetime.datetime) -> int | None:
        """The offset a read from ``spec`` ('first' or a timestamp) starts at (None: the
        stream holds nothing there)."""

    @abstractmethod
    def _sizes_seen(self) -> tuple[int, int]:
        """Messages and body bytes seen, for an average message size (maxBytesPerTrigger)."""

    @abstractmethod
    def report(self) -> dict[str, int]:
        """Per queue, the end as far as known, without asking the broker."""

    @abstractmethod
    def close(self) -> None: ...

    def ends(self) -> dict[str, int]:
        """Per queue, the next offset to be written, within AvailableNow's target."""
        with self._lock:
            ends = self._current_ends()
            if self._target is not None:
                ends = {q: min(ends[q], self._target[q]) for q in ends}
            return ends

    def limit_to_current_end(self) -> None:
        """AvailableNow: never read past where the streams end now."""
        with self._lock:
            self._target = None
            self._target = self._settled_ends()

    def initial(self) -> StreamOffset:
        """Where a query without a checkpoint starts, per ``startingOffsets``."""
        ends = self.ends()
        return StreamOffset.of(
            {q: self._resolve(q, self._options.start_of(q), ends[q]) for q in ends},
            self._options.super_stream,
        )

    def _resolve(self, queue: str, start: QueueStart, end: int) -> int:
        if isinstance(start, Exactly):
            return min(start.offset, end)
        if isinstance(start, Next):
            return end
        if isinstance(start, Last):
            return max(end - 1, 0)
        found = self._first_at(queue, "first" if isinstance(start, First) else start.timestamp)
        return end if found is None else min(found, end)

    def latest(self, start: StreamOffset, limits: Limits) -> StreamOffset:
        """The end of the next batch: the streams' ends, within the limits (bytes are
        estimated from the average message size seen)."""
        self._check_reads(start)
        ends = self.ends()
        room = limits.max_rows
        count, size = self._sizes_seen()
        if limits.max_bytes is not None and count:
            by_bytes = max(1, limits.max_bytes * count // max(size, 1))
            room = by_bytes if room is None else min(room, by_bytes)
        positions = {}
        for queue in self._options.queues:
            begin = start.positions.get(queue, ends[queue])
            take = max(ends[queue] - begin, 0)
            if room is not None:
                take = min(take, room)
                room -= take
            positions[queue] = begin + take
        return StreamOffset.of(positions, self._options.super_stream)

    def _check_reads(self, start: StreamOffset) -> None:
        """A checkpoint's offset is of what this query reads: the same super stream (or
        none) and, for a super stream, the same partitions (a super stream's partitions
        are fixed once made; a checkpoint naming others is of another stream)."""
        wanted = self._options.super_stream
        if start.super_stream != wanted:
            held = "stream queues" if start.super_stream is None else repr(start.super_stream)
            reads = "stream queues" if wanted is None else f"super stream {wanted!r}"
            raise OffsetError(
                f"the checkpoint holds offsets of {held} but this query reads {reads} "
                f"(offset {start.to_dict()!r}); use a new checkpointLocation"
            )
        if wanted is not None and set(start.positions) != set(self._options.queues):
            raise OffsetError(
                f"the checkpoint holds offsets of partitions {sorted(start.positions)} but "
                f"super stream {wanted!r} now has {list(self._options.queues)}; use a new "
                "checkpointLocation"
            )
