"""How much one micro-batch may take: Spark's admission control and the source's options.

Spark with admission control (4.2+) passes ``latestOffset`` one ``ReadLimit`` per batch
(``ReadAllAvailable``, ``ReadMaxRows``, ``ReadMaxBytes``, ...; custom limit classes are
refused); older Spark passes none. The source turns it, with the ``maxMessagesPerTrigger``
and ``maxBytesPerTrigger`` options, into :class:`Limits`, which the classic-queue consumers
and the stream tails apply.
"""

from __future__ import annotations

from dataclasses import dataclass

from amqp_spark.spark_api import ReadAllAvailable, ReadLimit, ReadMaxBytes, ReadMaxRows

#: The row limit standing for "none" (a Java long): see ``default_read_limit``.
NO_ROW_LIMIT = 2**63 - 1


@dataclass(frozen=True)
class Limits:
    """How much one batch may take; None = unbounded."""

    max_rows: int | None = None
    max_bytes: int | None = None

    def default_read_limit(self) -> ReadLimit:
        """What ``getDefaultReadLimit`` answers for these option limits. Never
        ReadAllAvailable: Spark passes that to ``latestOffset`` for ``trigger(once=True)``
        only, which is how the source tells once runs apart."""
        if self.max_bytes is not None and self.max_rows is None:
            return ReadMaxBytes(self.max_bytes)
        return ReadMaxRows(self.max_rows or NO_ROW_LIMIT)

    def for_batch(self, limit: ReadLimit | None) -> Limits:
        """Spark's limit for this batch combined with these option limits (Spark passes one
        limit only; the other option still applies). ReadAllAvailable (once runs) lifts
        both; no limit (Spark without admission control) leaves the options'."""
        if limit is None:
            return self
        if isinstance(limit, ReadAllAvailable):
            return Limits()
        rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        if rows is not None and rows >= NO_ROW_LIMIT:
            rows = None
        size = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None
        return Limits(
            max_rows=rows if rows is not None else self.max_rows,
            max_bytes=size if size is not None else self.max_bytes,
        )
