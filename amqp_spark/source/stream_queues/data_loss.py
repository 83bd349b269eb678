"""``failOnDataLoss``: what the source does when a stream queue's retention (``x-max-age``,
``x-max-length-bytes``) removed offsets a query had not read yet, as Spark's Kafka source
does: fail (the default) or log the same facts and go on from the first available offset.

Checked where a range is read, in the executor: a consumer asked for an offset retention
removed starts at the first one the stream still holds, so the read's first delivery comes
past the range's start, and only then does the reader ask where the stream begins (a probe
consumer). Planning asks nothing: a probe per batch and stream cost 4 round trips (about
3 ms on RabbitMQ 4 on loopback) and could not see what retention removes between planning
and reading anyway. The message names the queue, the first missing and the first available
offset, and the option.
"""

from __future__ import annotations

import logging

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
            f"from offset {first_available} (what offsets {first_missing} to "
            f"{first_available - 1} held is never read); or keep the stream's messages longer."
        )
    log.warning("%s; failOnDataLoss is false: going on from offset %d", facts, first_available)
