"""``minMessagesPerTrigger`` with ``maxTriggerDelay``, as Spark's Kafka source defines
``minOffsetsPerTrigger`` and ``maxTriggerDelay``: a micro-batch waits until that many
messages are there or until that long has passed since the last batch, whichever comes
first.

Spark with admission control (4.2+) hands the minimum to ``latestOffset`` as
``ReadMinRows`` (``getDefaultReadLimit`` returns it); older Spark hands nothing, and the
source takes the option itself. The delay has no ``ReadLimit`` in PySpark 4.3, so the source
keeps the time of its last batch itself. A batch that must wait is one whose end is its
start: Spark then plans none and asks again at the next trigger. AvailableNow and once runs
read everything there is (a minimum would end an AvailableNow run early, since it ends when
``latestOffset`` returns its start). Without admission control the source cannot tell those
runs apart, so a run's first batch is never held back (see ``queue_stream``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from amqp_spark.options import Parser, Refused

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d)\s*", re.IGNORECASE)


def _seconds(value: str) -> float:
    """A duration such as ``500ms``, ``30s``, ``15m``, ``1h`` (Kafka's ``maxTriggerDelay``
    form), in seconds."""
    match = _DURATION.fullmatch(value)
    if match is None:
        raise Refused()
    return float(match.group(1)) * _UNITS[match.group(2).lower()]


DURATION = Parser("a duration such as '500ms', '30s', '15m' or '1h'", _seconds)


class MinRowsGate:
    """Says whether a batch of ``rows`` may start now; remembers when the last one did."""

    def __init__(
        self, min_rows: int, max_delay: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.min_rows = min_rows
        self.max_delay = max_delay
        self._clock = clock
        self._last_batch = clock()  #: Kafka's too: a new run waits from its start

    def admits(self, rows: int, min_rows: int | None = None) -> bool:
        """Whether a batch of ``rows`` (> 0) starts now: it has ``min_rows`` (this
        trigger's ``ReadMinRows``, else the option) or the delay since the last batch ran
        out."""
        if rows <= 0:
            return False
        now = self._clock()
        wanted = self.min_rows if min_rows is None else min_rows
        if rows >= wanted or now - self._last_batch >= self.max_delay:
            self._last_batch = now
            return True
        return False
