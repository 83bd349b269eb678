"""Spark's floor for a Python source plus the consumption itself, nothing else: about what
the ``amqp`` source would read if all it does beyond consuming cost nothing.

``format("python-source-consuming-floor")`` is ``python-source-floor`` (same rows made from
nothing on the executors, none shipped through the driver's JVM, no Arrow built from
messages) whose reader also consumes a queue the way the source does: through our client's
columns (``deliver_as_columns``), the source's default window for the broker (131,070
unacknowledged messages on the bundled one, 40,000 on RabbitMQ) as consumers of at most
65,535 each, batches of half the window, ``latestOffset`` waiting until the batch's
deliveries have arrived and ``commit`` acking them with ``multiple`` (the run's last batch,
which Spark commits only when a next run plans its first, is requeued when the runner
ends). So the broker sends, and the runner receives and decodes, one message per row, paced
by Spark as the source is paced. What the ``amqp`` source reads below this is its own cost
(columns to Arrow, rows in the partitions, bookkeeping); what this reads below the trivial
source is the broker's and the wire's. It is a bound to compare with, not a proven ceiling:
its executors make their rows, and its wait is the source's only in outline, so the source
can read above it (on RabbitMQ 4 with ``prefetch`` 40000, docs/measurements/classic-source.md).
"""

from __future__ import annotations

import time
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.types import StructType

from amqp_spark.client import Channel, Connection, connect
from amqp_spark.source.classic.driver_consumers import DRAIN_SLICE
from amqp_spark.source.classic.window import window_messages_for
from amqp_spark.source.options import CONSUMER_PREFETCH_MAX
from amqp_spark.spark_api import ReadLimit
from benchmarks.python_source_floor import FloorReader, PythonSourceFloor

#: How long a batch's deliveries may take before the run is called stalled.
STALL_SECONDS = 30.0


class _ConsumingReader(FloorReader):
    """Connects on the first ``latestOffset``, in the runner: the reader is pickled for the
    executors when it is made, and a connection cannot be."""

    def __init__(self, rows: int, uri: str, queue: str):
        super().__init__(rows, rows_per_batch=0)
        self._uri, self._queue = uri, queue
        self._conn: Connection | None = None
        self._ch: Channel
        self._received = 0  #: deliveries so far; on a fresh channel the last one's tag

    def _consume(self) -> Channel:
        conn = self._conn = connect(self._uri)
        window = window_messages_for(conn.server_properties)
        self.rows_per_batch = window // 2
        ch = conn.channel()
        ch.deliver_as_columns()
        left = window
        while left > 0:
            ch.basic_qos(prefetch_count=min(left, CONSUMER_PREFETCH_MAX))
            ch.basic_consume(self._queue)
            left -= CONSUMER_PREFETCH_MAX
        return ch

    def latestOffset(
        self, start: dict[str, int] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, int]:
        if self._conn is None:
            self._ch = self._consume()
        end = super().latestOffset(start, limit)
        deadline = time.monotonic() + STALL_SECONDS
        while self._received < end["n"]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"stalled after {self._received} of {end['n']} deliveries")
            wanted = end["n"] - self._received
            drained = self._ch.drain_columns(wanted)
            runs = drained or self._ch.next_columns(timeout=1.0, max_count=wanted)
            self._received += sum(len(run) for run in runs)
            if drained:  # streaming in: let the I/O thread decode undisturbed, as the source does
                time.sleep(DRAIN_SLICE)
        return end

    def commit(self, end: dict[str, int]) -> None:
        if end["n"]:
            self._ch.basic_ack(end["n"], multiple=True)


class ConsumingFloor(PythonSourceFloor):
    """``format("python-source-consuming-floor")`` with the options ``rows``, ``uri`` and
    ``queue``."""

    @classmethod
    def name(cls) -> str:
        return "python-source-consuming-floor"

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options: dict[str, Any] = dict(self.options)
        return _ConsumingReader(int(options["rows"]), options["uri"], options["queue"])
