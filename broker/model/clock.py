"""What the model needs from time: a monotonic clock and timers, provided by the server's
event loop (so the model itself never touches I/O or threads)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def time(self) -> float:
        """Monotonic seconds."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle: ...
