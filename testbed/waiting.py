"""Waiting for something another thread, process or node does: poll a condition, bounded."""

from __future__ import annotations

import time
from collections.abc import Callable


def holds_within(condition: Callable[[], object], timeout: float = 5.0) -> bool:
    """Whether ``condition()`` holds within ``timeout`` seconds: polled a hundred times over
    the timeout, at most every 0.2 s (a condition that asks Spark is not free), and once more
    at the end."""
    step = min(0.2, timeout / 100)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return bool(condition())


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    assert holds_within(condition, timeout), f"timed out after {timeout} s waiting for {what}"
