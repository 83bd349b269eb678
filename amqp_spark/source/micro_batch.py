"""What the micro-batch readers of each kind of queue share: the runner process's end, and
the limits.

``streamReader()`` returns a
:class:`~amqp_spark.source.classic.classic_micro_batch.ClassicMicroBatchReader` or a
:class:`~amqp_spark.source.stream_queues.stream_queue_micro_batch.StreamQueueMicroBatchReader`
(see ``reader_choice``). Each owns its runner-side state: one object lives in the query run's
long-lived source runner process (every method but ``read``); ``read`` runs on executors on
a fresh copy that holds nothing but the options, so that state is made lazily, in the runner
(a reader holding a socket cannot be pickled).

Spark's calls differ with what its API offers (``amqp_spark.spark_api``; measured per
version in docs/pyspark-versions.md). With admission control (4.2+) ``latestOffset(start,
limit)`` says where the batch starts and how much it may take, and an AvailableNow run is
announced by ``prepareForTriggerAvailableNow``. Without it (4.0, 4.1) Spark calls
``latestOffset()`` with no arguments, first before ``initialOffset`` on a fresh start, and
runs AvailableNow and once queries as one batch planned by that first call, after which it
calls nothing on the source. So, there:

* the start is the end of the last batch this run returned or was asked to plan (a
  restarted run is first asked to plan the batches of its checkpoint, measured), else the
  initial offset, which stays the same for the whole run;
* the options' limits (``maxMessagesPerTrigger``, ``maxBytesPerTrigger``) are the batch's
  limits, and ``minMessagesPerTrigger`` holds batches back, but never the run's first
  batch ("opening"): it may be the only batch of an AvailableNow or once run.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from amqp_spark.source.min_rows import MinRowsGate
from amqp_spark.source.options import SourceOptions
from amqp_spark.source.run_end import RunEnd, runner_call
from amqp_spark.spark_api import ReadLimit, ReadMinRows, SupportsTriggerAvailableNow


class RunnerState(Protocol):
    """What a stream holds in the runner: connections, closed when the run ends."""

    def close(self) -> None: ...


State = TypeVar("State", bound=RunnerState)


class MicroBatchReader(DataSourceStreamReader, SupportsTriggerAvailableNow, Generic[State]):
    """A streaming read of AMQP queues; a subclass owns the runner-side ``State`` of one
    kind of queue, and plans through ``_initial``, ``_latest`` and ``_partitions`` (the
    Spark methods here keep what a Spark without admission control does not say)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._state: State | None = None  #: made in the runner, by ``_runner_state``
        self._run_end = RunEnd()  #: SIGTERM's end of the run, hooked in the runner
        self._available_now = False  #: an AvailableNow run (prepareForTriggerAvailableNow)
        self._min_rows: MinRowsGate | None = None  #: minMessagesPerTrigger, in the runner
        self._initial_offset: dict[str, Any] | None = None
        #: The end of the last batch returned by ``latestOffset`` or planned: where the next
        #: one starts when Spark does not say (no admission control).
        self._last_end: dict[str, Any] | None = None
        self._opened = False  #: ``latestOffset`` was called in this run

    def _new_state(self) -> State:
        raise NotImplementedError

    def _initial(self) -> dict[str, Any]:
        """Where a query without a checkpoint starts."""
        raise NotImplementedError

    def _latest(
        self, start: dict[str, Any], limit: ReadLimit | None, opening: bool
    ) -> dict[str, Any]:
        """The end of the batch after ``start``; ``limit`` is Spark's (None: Spark has no
        admission control); ``opening``: the run's first batch under such a Spark."""
        raise NotImplementedError

    def _partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        raise NotImplementedError

    @runner_call
    def initialOffset(self) -> dict[str, Any]:
        """Where a query without a checkpoint starts; without admission control, where the
        run's first ``latestOffset`` (which Spark calls first) started, so that the first
        batch is the one that call planned."""
        if self._initial_offset is not None:
            return self._initial_offset
        return self._initial()

    @runner_call
    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: ReadLimit | None = None
    ) -> dict[str, Any]:
        """Spark with admission control passes ``start`` and ``limit``; older Spark neither
        (see the module docstring)."""
        opening = start is None and not self._opened
        self._opened = True
        if start is None:
            if self._last_end is None:  # a fresh start: initialOffset comes next
                self._initial_offset = self._last_end = self._initial()
            start = self._last_end
        end = self._latest(start, limit, opening)
        self._last_end = end
        return end

    @runner_call
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        self._last_end = end
        return self._partitions(start, end)

    def _runner_state(self) -> State:
        """The state, made on first use (in the runner), when the end of the run is hooked."""
        if not self._run_end.installed:  # Spark ends the run by SIGTERM, not by stop()
            self._run_end.install(self.stop)
        if self._state is None:
            self._state = self._new_state()
        return self._state

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.min_messages_per_trigger is not None:
            return ReadMinRows(self.options.min_messages_per_trigger)
        return self.options.limits.default_read_limit()

    def _admits(self, limit: ReadLimit | None, rows: int, opening: bool) -> bool:
        """Whether a batch of ``rows`` starts now: always, but under ``ReadMinRows``, or
        ``minMessagesPerTrigger`` where Spark passes no limit (with ``maxTriggerDelay``, see
        ``min_rows``), outside AvailableNow runs and opening batches."""
        if isinstance(limit, ReadMinRows):
            min_rows: int | None = limit.min_rows
        else:
            min_rows = self.options.min_messages_per_trigger if limit is None else None
        if min_rows is None or self._available_now or opening:
            return True
        if self._min_rows is None:
            self._min_rows = MinRowsGate(min_rows, self.options.max_trigger_delay)
        return self._min_rows.admits(rows, min_rows)

    @runner_call
    def stop(self) -> None:
        """Close the connections (also at SIGTERM, see ``run_end``: Spark does not always
        call ``stop``)."""
        if self._state is not None:
            self._state.close()
