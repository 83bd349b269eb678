"""Broker-wide accounting of message bytes held in queues, against a high watermark."""

from __future__ import annotations

from collections.abc import Callable


class MemoryGauge:
    """Counts body bytes of messages the broker holds (ready and unacknowledged).

    ``on_change(blocked)`` is called when the total crosses ``high`` upwards (True) or falls
    back under ``low`` (False); the server turns that into connection.blocked/unblocked and
    stops reading publishers' sockets.
    """

    def __init__(self, high: int, low_ratio: float = 0.8) -> None:
        self.high = high
        self.low = int(high * low_ratio)
        self.used = 0
        self.blocked = False
        self.on_change: Callable[[bool], None] | None = None

    def add(self, n: int) -> None:
        self.used += n
        if not self.blocked and self.used > self.high:
            self._set(True)

    def sub(self, n: int) -> None:
        self.used -= n
        if self.blocked and self.used < self.low:
            self._set(False)

    def _set(self, blocked: bool) -> None:
        self.blocked = blocked
        if self.on_change is not None:
            self.on_change(blocked)
