"""How often, and how far apart, connecting is tried again.

One attempt tries every address of the list once (see ``addresses``: a node that refuses
costs nothing, the next is tried at once); only between attempts is there a pause, doubling
from ``FIRST`` to at most ``MOST`` seconds. So ``maxReconnectAttempts`` counts passes over
the whole list, whatever its length.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

#: Seconds before the first attempt again, and the longest pause.
FIRST, MOST = 0.5, 8.0


def pauses(count: int) -> list[float]:
    """The pauses before each of ``count`` attempts after the first."""
    return [min(FIRST * 2**i, MOST) for i in range(count)]


def attempts(retries: int, sleep: Callable[[float], None] = time.sleep) -> Iterator[int]:
    """The attempt numbers 0 to ``retries``, pausing (``sleep``) before each but the first.
    The caller breaks out of the loop at the first attempt that succeeds."""
    yield 0
    for number, pause in enumerate(pauses(retries), start=1):
        sleep(pause)
        yield number


def after_losses(losses: int) -> float:
    """The pause before opening again after ``losses`` connections lost in a row (each
    opened, then lost before it did anything): none after the first, a node that died is
    left at once; then as between attempts, the broker being unwell for a while."""
    return 0.0 if losses <= 1 else pauses(losses - 1)[-1]
