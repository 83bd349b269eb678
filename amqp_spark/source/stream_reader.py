"""The streaming reader Spark drives: ``spark.readStream.format("amqp")``.

One object lives in the query run's long-lived source runner process (every method but
``read``); ``read`` runs on executors on a fresh copy that holds nothing but the options.

Acks of classic queues and Spark's deferred commit: Spark calls ``commit(end of batch N)``
only when it plans batch N+1, so with an idle stream, or at the end of an AvailableNow or
once run, a committed batch would stay unacked until the next run. But Spark calls
``latestOffset(start)`` only once every batch up to ``start`` is done and written to the
commit log (a batch that failed is replanned through ``partitions`` without it), also once
more after the last batch of an AvailableNow run. So ``latestOffset`` acks up to ``start``
first: acks go out within a trigger interval of Spark's commit, idle or not.

``trigger(once=True)`` is the exception: Spark calls nothing on the source after planning the
only batch, and the next run's deferred ``commit`` names a connection that is gone. But Spark
ends the run with SIGTERM to the runner only after writing the batch to the commit log
(measured: ``commits/<N>`` is written before the signal). So with the ``checkpointLocation``
option, the SIGTERM handler looks the batch up in the query's checkpoint and acks it iff it
was committed, before closing the connection; a failed run acks nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from amqp_spark.offsets import ClassicOffset, StreamOffset, latest_batch_committed_at
from amqp_spark.source.arrow import deserialize, serialize, to_record_batch
from amqp_spark.source.classic import ClassicConsumers, Limits
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.partitions import ArrowPartition, StreamRangePartition, split_rows
from amqp_spark.source.streams import StreamTails, plan_ranges, read_range

log = logging.getLogger("amqp_spark.source")

ONCE_NEEDS_CHECKPOINT = (
    "amqp source: trigger(once=True) on classic queues needs the source option "
    "'checkpointLocation' set to the query's checkpoint directory (the path given to "
    "writeStream.option('checkpointLocation', ...)): Spark calls nothing on the source after "
    "the only batch of a once run, so the source acks that batch when the run ends, once it "
    "finds it committed there. Without it the messages would be requeued and read again by "
    "every run. Or use trigger(availableNow=True): it reads the same backlog and acks it."
)
#: The row limit standing for "none" (a Java long): see ``getDefaultReadLimit``.
NO_ROW_LIMIT = 2**63 - 1


class AMQPStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        # Opened lazily in the runner: a reader holding a socket cannot be pickled.
        self._classic: ClassicConsumers | None = None
        self._streams: StreamTails | None = None
        self._available_now = False
        self._sigterm_installed = False
        #: A once run on classic queues: the query's checkpoint and the end of its batch.
        self._once: tuple[Path, dict[str, Any]] | None = None

    # -- runner-side state --------------------------------------------------------------------

    def _state(self) -> ClassicConsumers | StreamTails:
        if not self._sigterm_installed:
            self._install_sigterm_handler()
        if self.options.is_stream:
            if self._streams is None:
                self._streams = StreamTails(self.options)
            return self._streams
        if self._classic is None:
            self._classic = ClassicConsumers(self.options)
        return self._classic

    def _install_sigterm_handler(self) -> None:
        """Spark ends a query run by SIGTERM to this process, not by ``stop()``: close the
        connection cleanly then, and let the previous handler (or the default) finish.

        Spark may send SIGTERM twice (measured: a second one a few milliseconds later). The
        second must not run ``stop()`` inside the first: it would wait for the client's send
        lock that the interrupted ``stop()`` holds, forever. The first one ends the process.
        """
        self._sigterm_installed = True
        previous = signal.getsignal(signal.SIGTERM)
        handling = False

        def on_sigterm(signum: int, frame: FrameType | None) -> None:
            nonlocal handling
            if handling:
                return
            handling = True
            self.stop()
            if callable(previous):
                previous(signum, frame)
            else:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)

        # Outside the main thread there is nothing to hook (stop() still closes).
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGTERM, on_sigterm)

    @staticmethod
    def _rows(limit: ReadMaxRows) -> int | None:
        return None if limit.max_rows >= NO_ROW_LIMIT else limit.max_rows

    def _limits(self, limit: ReadLimit) -> Limits:
        """Spark's limit for this batch combined with the options (Spark passes one limit
        only; the other option still applies). ReadAllAvailable (once runs) lifts both."""
        if isinstance(limit, ReadAllAvailable):
            return Limits()
        rows = self._rows(limit) if isinstance(limit, ReadMaxRows) else None
        size = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None
        return Limits(
            max_rows=rows if rows is not None else self.options.max_messages_per_trigger,
            max_bytes=size if size is not None else self.options.max_bytes_per_trigger,
        )

    # -- Spark's streaming source API ---------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:
        state = self._state()
        if isinstance(state, StreamTails):
            return state.initial().to_dict()
        return state.start_offset().to_dict()

    def getDefaultReadLimit(self) -> ReadLimit:
        """Never ReadAllAvailable: Spark passes that to ``latestOffset`` for
        ``trigger(once=True)`` only, which is how the source tells once runs apart."""
        if self.options.max_bytes_per_trigger is not None and (
            self.options.max_messages_per_trigger is None
        ):
            return ReadMaxBytes(self.options.max_bytes_per_trigger)
        return ReadMaxRows(self.options.max_messages_per_trigger or NO_ROW_LIMIT)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True
        state = self._state()
        if isinstance(state, StreamTails):
            state.limit_to_current_end()
        else:
            state.limit_to_current_depth()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        state = self._state()
        if isinstance(state, StreamTails):
            return state.latest(StreamOffset.from_dict(start), self._limits(limit)).to_dict()
        begin = ClassicOffset.from_dict(start)
        if isinstance(limit, ReadAllAvailable):  # only trigger(once=True) passes this
            return self._plan_once(state, begin)
        state.ack_through(begin)  # every batch up to `start` is in Spark's commit log
        return state.latest(begin, self._limits(limit), wait=self._available_now).to_dict()

    def _plan_once(self, state: ClassicConsumers, begin: ClassicOffset) -> dict[str, Any]:
        """The only batch of a once run: everything that arrives (up to the window the
        driver may hold), remembered so that ``stop`` can ack it once Spark committed it."""
        checkpoint = self.options.query_checkpoint()
        if checkpoint is None:
            raise RuntimeError(ONCE_NEEDS_CHECKPOINT)
        state.ack_through(begin)  # a no-op unless the batch before is of this connection
        everything = Limits(max_rows=state.window * max(len(self.options.queues), 1))
        end = state.latest(begin, everything, wait=True).to_dict()
        self._once = (checkpoint, end)
        return end

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """What lastProgress shows as the source's latestOffset: where each queue ends as
        far as the source knows, or (classic) per queue the messages ready on the broker and
        those received but not yet acked."""
        if self._streams is not None:
            return {"kind": "stream", "queues": self._streams.report()}
        if self._classic is not None:
            return {"kind": "classic", "messagesWaiting": self._classic.waiting()}
        return None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        state = self._state()
        if isinstance(state, StreamTails):
            ranges: list[InputPartition] = list(
                plan_ranges(
                    self.options, StreamOffset.from_dict(start), StreamOffset.from_dict(end)
                )
            )
            log.info("amqp source: stream batch %s -> %s in %d range(s)", start, end, len(ranges))
            return ranges
        segments = state.batch(ClassicOffset.from_dict(start), ClassicOffset.from_dict(end))
        counts: dict[str, int] = {}
        partitions: list[InputPartition] = []
        for queue, deliveries in split_rows(segments, self.options.rows_per_partition):
            counts[queue] = counts.get(queue, 0) + len(deliveries)
            batch = to_record_batch(deliveries, queue, with_offsets=False)
            partitions.append(ArrowPartition(serialize(batch)))
        log.info("amqp source: batch of %d message(s) per queue %s", sum(counts.values()), counts)
        return partitions

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, StreamRangePartition):
            yield from read_range(partition)
        elif isinstance(partition, ArrowPartition):
            yield from deserialize(partition.ipc)

    def commit(self, end: dict[str, Any]) -> None:
        if self._classic is not None:
            self._classic.ack_through(ClassicOffset.from_dict(end))

    def stop(self) -> None:
        """Close the connections; a once run on classic queues first acks its batch if Spark
        committed it (see the module docstring)."""
        if self._classic is not None and self._once is not None:
            self._ack_once_batch(self._classic, *self._once)
        for state in (self._classic, self._streams):
            if state is not None:
                state.close()

    @staticmethod
    def _ack_once_batch(state: ClassicConsumers, checkpoint: Path, end: dict[str, Any]) -> None:
        try:
            committed = latest_batch_committed_at(checkpoint, end)
        except OSError as e:  # unreadable: left unacked, the broker requeues (at-least-once)
            log.warning("amqp source: once run: cannot read the checkpoint %s: %s", checkpoint, e)
            return
        if committed:
            state.ack_through(ClassicOffset.from_dict(end))
        log.info(
            "amqp source: once run ends; its batch %s",
            "was committed: acked" if committed else "was not committed: left to the broker",
        )
