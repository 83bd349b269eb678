"""A stream's tracking state: the last publishing id written by each named publisher
(publisher deduplication) and the offsets consumers stored under a reference.

RabbitMQ keeps both in the stream itself (Osiris's tracking chunks and trailers); here they
live beside the segments, in ``tracking.json``, rewritten atomically (a temporary file
renamed over it, fsynced when the broker is durable) when the queue flushes a batch, before
the batch's confirms go: a publishing id confirmed is a publishing id remembered, across a
restart of a broker with a data directory. The file goes with the stream's directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

TRACKING_FILE = "tracking.json"


class TrackingError(Exception):
    """The tracking file cannot be read; the message names it."""


class Tracking:
    def __init__(self, directory: Path) -> None:
        self.path = directory / TRACKING_FILE
        self._publishers: dict[str, int] = {}
        self._offsets: dict[str, int] = {}
        self._dirty = False
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text("utf-8"))
                self._publishers = {str(k): int(v) for k, v in data["publishers"].items()}
                self._offsets = {str(k): int(v) for k, v in data["offsets"].items()}
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise TrackingError(f"{self.path}: not a stream tracking file ({e})") from None

    def publisher_sequence(self, reference: str) -> int:
        """The last publishing id written by publisher ``reference`` (0: none yet)."""
        return self._publishers.get(reference, 0)

    def written(self, reference: str, publishing_id: int) -> None:
        if publishing_id > self._publishers.get(reference, 0):
            self._publishers[reference] = publishing_id
            self._dirty = True

    def offset(self, reference: str) -> int | None:
        return self._offsets.get(reference)

    def store_offset(self, reference: str, offset: int) -> None:
        if self._offsets.get(reference) != offset:
            self._offsets[reference] = offset
            self._dirty = True

    def save(self, durable: bool) -> None:
        """Write the state if it changed (fsynced when ``durable``)."""
        if not self._dirty:
            return
        data = json.dumps({"publishers": self._publishers, "offsets": self._offsets})
        temporary = self.path.with_suffix(".tmp")
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(temporary, self.path)
        self._dirty = False
