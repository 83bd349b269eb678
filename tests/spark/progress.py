"""Waiting on running queries and reading their progress reports."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any


def as_dict(offset: str | dict[str, Any]) -> dict[str, Any]:
    """An offset of a progress report (JSON text or already a dict)."""
    return json.loads(offset) if isinstance(offset, str) else offset


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert condition(), f"timed out after {timeout} s waiting for {what}"
