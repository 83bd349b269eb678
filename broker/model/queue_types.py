"""Queue types by their ``x-queue-type`` name: the seam where stream queues plug in.

A queue type is a factory with the signature of ``Queue`` (a ``QueueContext``, the name,
the declaration's flags and arguments) returning an object with its interface (publish,
dispatch, get, settle, requeue, reject, add/remove_consumer, purge, destroy, ...).
"classic" and "quorum" (a configuration of the classic queue, ``quorum.py``) are the
model's own; the server adds the stream type of ``broker/streams/`` where it builds its
virtual hosts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .queues import Queue
from .quorum import QuorumQueue

QueueFactory = Callable[..., Queue]


class QueueTypes:
    """The queue types a broker's virtual hosts declare: classic, quorum and ``extra``."""

    def __init__(self, **extra: QueueFactory) -> None:
        self._factories: dict[str, QueueFactory] = {
            "classic": Queue,
            "quorum": QuorumQueue,
            **extra,
        }

    def factory(self, arguments: dict[str, Any]) -> QueueFactory | None:
        """The factory ``x-queue-type`` names (classic when absent), None if unknown."""
        return self._factories.get(arguments.get("x-queue-type") or "classic")
