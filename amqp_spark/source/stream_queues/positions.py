"""What the driver's views of stream queues share, whatever the protocol that tells them where
streams end: where a query without a checkpoint starts, the end of the next batch within the
limits, and whether a checkpoint's offset is of what the query reads."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping

from amqp_spark.source.limits import Limits
from amqp_spark.source.offsets import OffsetError, StreamOffset
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.stream_queues.starting import Exactly, First, Last, Next, QueueStart

#: ``first`` or a timestamp -> the first offset a reader there gets (None: nothing there).
Probe = Callable[[str, "str | datetime.datetime"], "int | None"]


def resolve(queue: str, start: QueueStart, end: int, probe: Probe) -> int:
    """The offset ``start`` names in ``queue``, whose next offset is ``end``; ``first`` and
    timestamps are asked of the broker (``probe``)."""
    if isinstance(start, Exactly):
        return min(start.offset, end)
    if isinstance(start, Next):
        return end
    if isinstance(start, Last):
        return max(end - 1, 0)
    found = probe(queue, "first" if isinstance(start, First) else start.timestamp)
    return end if found is None else min(found, end)


def initial(options: SourceOptions, ends: Mapping[str, int], probe: Probe) -> StreamOffset:
    """Where a query without a checkpoint starts, per ``startingOffsets``."""
    return StreamOffset.of(
        {q: resolve(q, options.start_of(q), ends[q], probe) for q in ends}, options.super_stream
    )


def batch_end(
    options: SourceOptions, start: StreamOffset, ends: Mapping[str, int], room: int | None
) -> StreamOffset:
    """The end of the next batch from ``start``: each queue up to its end, ``room`` rows at
    most in all (None: no bound), the queues in order."""
    positions = {}
    for queue in options.queues:
        begin = start.positions.get(queue, ends[queue])
        take = max(ends[queue] - begin, 0)
        if room is not None:
            take = min(take, room)
            room -= take
        positions[queue] = begin + take
    return StreamOffset.of(positions, options.super_stream)


def room(limits: Limits, records: int, size: int) -> int | None:
    """The rows a batch may take (None: no bound): ``maxMessagesPerTrigger``, and
    ``maxBytesPerTrigger`` over the average size of the ``records`` messages seen (``size``
    bytes in all; at least one row)."""
    rows = limits.max_rows
    if limits.max_bytes is not None and records:
        by_bytes = max(1, limits.max_bytes * records // max(size, 1))
        rows = by_bytes if rows is None else min(rows, by_bytes)
    return rows


def check_reads(options: SourceOptions, start: StreamOffset) -> None:
    """A checkpoint's offset is of what this query reads: the same super stream (or none)
    and, for a super stream, the same partitions (a super stream's partitions are fixed once
    made; a checkpoint naming others is of another stream). Checked before the broker is
    asked anything."""
    wanted = options.super_stream
    if start.super_stream != wanted:
        held = "stream queues" if start.super_stream is None else repr(start.super_stream)
        reads = "stream queues" if wanted is None else f"super stream {wanted!r}"
        raise OffsetError(
            f"the checkpoint holds offsets of {held} but this query reads {reads} "
            f"(offset {start.to_dict()!r}); use a new checkpointLocation"
        )
    if wanted is not None and set(start.positions) != set(options.queues):
        raise OffsetError(
            f"the checkpoint holds offsets of partitions {sorted(start.positions)} but "
            f"super stream {wanted!r} now has {list(options.queues)}; use a new "
            "checkpointLocation"
        )
