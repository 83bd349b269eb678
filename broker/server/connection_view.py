"""What the management API reads of a connection: a read-only snapshot that
``AMQPConnection.snapshot()`` takes, so that the API never reaches into a connection's own
state (which the connection may change as it likes)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from ..model.stats import MessageStats

#: The type of its channels (``ServerChannel``; ``abc.Channel`` for the dialects' view):
#: a parameter, so that this module imports no channel module (which imports it back).
_C = TypeVar("_C", covariant=True)


@dataclass(frozen=True)
class ConnectionSnapshot(Generic[_C]):
    #: past connection.open and not closed: the connections RabbitMQ lists
    open: bool
    #: its publishers are held by the memory alarm
    blocked: bool
    user: str | None
    vhost: str | None
    version: tuple[int, int, int]
    peer: tuple[str, int]
    local: tuple[str, int]
    ssl: bool
    channel_max: int
    frame_max: int
    heartbeat: int
    #: seconds since the epoch
    connected_at: float
    client_properties: dict[str, Any]
    #: the open channels
    channels: tuple[_C, ...]
    #: the counts of its closed channels (each open channel has its own)
    stats: MessageStats


def address(transport: asyncio.BaseTransport | None, which: str) -> tuple[str, int]:
    """A transport's ``peername`` or ``sockname`` as (host, port); ("?", 0) if unknown."""
    info = transport.get_extra_info(which) if transport is not None else None
    if isinstance(info, tuple) and len(info) >= 2:
        return str(info[0]), int(info[1])
    return "?", 0
