"""Queue types by their ``x-queue-type`` name: the seam where stream queues plug in.

A queue type is a factory with the signature of ``Queue`` returning an object with its
interface (publish, dispatch, get, settle, requeue, reject, add/remove_consumer, purge,
destroy, ...). "quorum" is a configuration of the classic queue (``quorum.py``);
``broker/streams/`` registers "stream" with ``register_queue_type``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .queues import Queue
from .quorum import QuorumQueue

QueueFactory = Callable[..., Queue]

_TYPES: dict[str, QueueFactory] = {"classic": Queue, "quorum": QuorumQueue}


def register_queue_type(name: str, factory: QueueFactory) -> None:
    _TYPES[name] = factory


def queue_factory(arguments: dict[str, Any]) -> QueueFactory | None:
    """The factory ``x-queue-type`` names (classic when absent), None if unknown."""
    return _TYPES.get(arguments.get("x-queue-type") or "classic")
