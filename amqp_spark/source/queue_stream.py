"""What the two kinds of streaming reader share: the runner process's end, and the limits.

``streamReader()`` returns a :class:`~amqp_spark.source.classic_stream.ClassicQueueStream`
or a :class:`~amqp_spark.source.stream_queue_stream.StreamQueueStream` (see
``stream_reader``). Each owns its runner-side state: one object lives in the query run's
long-lived source runner process (every method but ``read``); ``read`` runs on executors on
a fresh copy that holds nothing but the options, so that state is made lazily, in the runner
(a reader holding a socket cannot be pickled).
"""

from __future__ import annotations

import contextlib
import os
import signal
from types import FrameType
from typing import Generic, Protocol, TypeVar

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import ReadLimit, ReadMinRows, SupportsTriggerAvailableNow

from amqp_spark.source.min_rows import MinRowsGate
from amqp_spark.source.options import SourceOptions


class RunnerState(Protocol):
    """What a stream holds in the runner: connections, closed when the run ends."""

    def close(self) -> None: ...


State = TypeVar("State", bound=RunnerState)


class QueueStream(DataSourceStreamReader, SupportsTriggerAvailableNow, Generic[State]):
    """A streaming read of AMQP queues; a subclass owns the runner-side ``State`` of one
    kind of queue."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._state: State | None = None  #: made in the runner, by ``_runner_state``
        self._sigterm_installed = False
        self._available_now = False  #: an AvailableNow run (prepareForTriggerAvailableNow)
        self._min_rows: MinRowsGate | None = None  #: minMessagesPerTrigger, in the runner

    def _new_state(self) -> State:
        raise NotImplementedError

    def _runner_state(self) -> State:
        """The state, made on first use (in the runner), when the end of the run is hooked."""
        if not self._sigterm_installed:
            self._install_sigterm_handler()
        if self._state is None:
            self._state = self._new_state()
        return self._state

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

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.min_messages_per_trigger is not None:
            return ReadMinRows(self.options.min_messages_per_trigger)
        return self.options.limits.default_read_limit()

    def _admits(self, limit: ReadLimit, rows: int) -> bool:
        """Whether a batch of ``rows`` starts now: always, but under ``ReadMinRows``
        (``minMessagesPerTrigger`` with ``maxTriggerDelay``, see ``min_rows``) outside
        AvailableNow runs."""
        if not isinstance(limit, ReadMinRows) or self._available_now:
            return True
        if self._min_rows is None:
            self._min_rows = MinRowsGate(limit.min_rows, self.options.max_trigger_delay)
        return self._min_rows.admits(rows, limit.min_rows)

    def stop(self) -> None:
        """Close the connections (also at SIGTERM: Spark does not call ``stop``)."""
        if self._state is not None:
            self._state.close()
