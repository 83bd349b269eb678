"""What the management API reads of a connection: a read-only snapshot that
``AMQPConnection.snapshot()`` takes (``snapshot_of``), so that the API never reaches into a
connection's own state (which the connection may change as it likes)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from amqp_protocol import Connection

from .connection_output import ConnectionOutput

if TYPE_CHECKING:
    from ..model.stats import MessageStats
    from ..model.vhost import VirtualHost


class _Channel(Protocol):
    @property
    def closed(self) -> bool: ...


#: The type of its channels (``ServerChannel``; ``abc.Channel`` for the dialects' view):
#: a parameter, so that this module imports no channel module (which imports it back).
_C = TypeVar("_C", covariant=True)
#: A channel type that ``snapshot_of`` can tell open ones of.
_V = TypeVar("_V", bound=_Channel, covariant=True)


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


class Viewed(Protocol[_V]):
    """What ``snapshot_of`` reads of a connection (``AMQPConnection``)."""

    @property
    def vhost(self) -> VirtualHost | None: ...

    @property
    def user(self) -> str | None: ...

    @property
    def proto(self) -> Connection: ...

    @property
    def transport(self) -> asyncio.Transport | None: ...

    @property
    def output(self) -> ConnectionOutput: ...

    @property
    def heartbeat(self) -> int: ...

    @property
    def connected_at(self) -> float: ...

    @property
    def client_properties(self) -> dict[str, Any]: ...

    @property
    def channels(self) -> Mapping[int, _V]: ...

    @property
    def stats(self) -> MessageStats: ...


def snapshot_of(conn: Viewed[_V]) -> ConnectionSnapshot[_V]:
    """A read-only view of ``conn`` for the management API."""
    transport = conn.transport
    return ConnectionSnapshot(
        open=conn.vhost is not None and not conn.output.closed,
        blocked=conn.output.memory_blocked,
        user=conn.user,
        vhost=conn.vhost.name if conn.vhost is not None else None,
        version=conn.proto.spec.version if conn.proto.spec is not None else (0, 0, 0),
        peer=address(transport, "peername"),
        local=address(transport, "sockname"),
        ssl=transport is not None and transport.get_extra_info("ssl_object") is not None,
        channel_max=conn.proto.channel_max,
        frame_max=conn.proto.frame_max,
        heartbeat=conn.heartbeat,
        connected_at=conn.connected_at,
        client_properties=conn.client_properties,
        channels=tuple(c for c in conn.channels.values() if not c.closed),
        stats=conn.stats,
    )
