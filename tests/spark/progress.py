"""Waiting on running queries and reading their progress reports."""

from __future__ import annotations

import json
from typing import Any


def as_dict(offset: str | dict[str, Any]) -> dict[str, Any]:
    """An offset of a progress report (JSON text or already a dict)."""
    return json.loads(offset) if isinstance(offset, str) else offset
