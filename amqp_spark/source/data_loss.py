"""``failOnDataLoss``: what the source does when a stream queue's retention (``x-max-age``,
``x-max-length-bytes``) removed offsets a query had not read yet, as Spark's Kafka source
does: fail (the default) or log the same facts and go on from the first available offset.

Checked twice: when a batch is planned (the runner asks where each stream now begins) and
when an executor reads a range (retention may strike between the two). Either way the
message names the queue, the first missing and the first available offset, and the option.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from amqp_spark.source.offsets import StreamOffset

log = logging.getLogger("amqp_spark.source")


class DataLossError(RuntimeError):
    """Offsets a query still had to read are gone from a stream queue."""


def lost(queue: str, first_missing: int, first_available: int, fail: bool) -> None:
    """Raise (``fail``) or log that ``queue`` no longer holds ``[first_missing,
    first_available)``."""
    facts = (
        f"amqp source: stream queue {queue!r} no longer holds offsets {first_missing} to "
        f"{first_available - 1}, which the query had not read yet: retention (x-max-age, "
        f"x-max-length-bytes) removed them; the first available offset is {first_available}"
    )
    if fail:
        raise DataLossError(
            f"{facts}. With the option failOnDataLoss 'false' the query logs this and goes on "
            f"from offset {first_available} (the {first_available - first_missing} lost "
            "messages are never read); or keep the stream's messages longer."
        )
    log.warning("%s; failOnDataLoss is false: going on from offset %d", facts, first_available)


def readable_start(
    start: StreamOffset,
    end: StreamOffset,
    first_available: Callable[[str], int | None],
    fail: bool,
) -> StreamOffset:
    """``start`` with each queue whose batch ``[start, end)`` begins before the first offset
    its stream still holds moved up to that offset (or ``DataLossError``)."""
    positions = dict(start.positions)
    for queue, begin in start.positions.items():
        stop = end.positions.get(queue, begin)
        if begin >= stop:
            continue
        first = first_available(queue)
        if first is not None and first > begin:
            lost(queue, begin, first, fail)
            positions[queue] = min(first, stop)
    return StreamOffset(positions)
