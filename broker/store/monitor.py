"""Memory high-watermark and disk free-space limit: when to block publishers.

The broker polls ``check()`` (say once a second) and sends ``connection.blocked`` to
publishing connections when it starts returning a reason, ``connection.unblocked`` when it
returns None again. Both limits have hysteresis so that the state does not flap around a
threshold. Defaults follow RabbitMQ: 40 % of physical memory, 50 MB of free disk.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

DEFAULT_MEMORY_FRACTION = 0.4
DEFAULT_DISK_FREE_LIMIT = 50 * 1000 * 1000
#: Unblock only once usage is this fraction back on the safe side of the limit.
HYSTERESIS = 0.1


def physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def process_rss() -> int:
    """The resident set size of this process, in bytes (Linux: /proc/self/statm)."""
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def disk_free(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


class ResourceMonitor:
    def __init__(
        self,
        memory_limit: int | None = None,
        disk_path: Path | None = None,
        disk_free_limit: int = DEFAULT_DISK_FREE_LIMIT,
        *,
        rss: Callable[[], int] = process_rss,
        free: Callable[[Path], int] = disk_free,
    ) -> None:
        """``disk_path`` None (the in-memory mode) checks memory only."""
        self.memory_limit = (
            memory_limit
            if memory_limit is not None
            else int(physical_memory() * DEFAULT_MEMORY_FRACTION)
        )
        self.disk_path = disk_path
        self.disk_free_limit = disk_free_limit
        self._rss = rss
        self._free = free
        self._memory_alarm = False
        self._disk_alarm = False

    def check(self) -> str | None:
        """Why publishers must be blocked now, or None if they need not be."""
        used = self._rss()
        if self._memory_alarm:
            self._memory_alarm = used >= self.memory_limit * (1 - HYSTERESIS)
        else:
            self._memory_alarm = used >= self.memory_limit
        free = self._free(self.disk_path) if self.disk_path is not None else None
        if free is not None:
            if self._disk_alarm:
                self._disk_alarm = free < self.disk_free_limit * (1 + HYSTERESIS)
            else:
                self._disk_alarm = free < self.disk_free_limit
        reasons = []
        if self._memory_alarm:
            reasons.append(f"memory high watermark: {used} of {self.memory_limit} bytes used")
        if self._disk_alarm:
            reasons.append(
                f"low disk space on {self.disk_path}: {free} bytes free, "
                f"limit {self.disk_free_limit}"
            )
        return "; ".join(reasons) or None
