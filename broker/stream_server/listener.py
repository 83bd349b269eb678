"""The stream protocol's listeners (plain, and TLS when the broker has a ``[tls]``
section with a ``stream_port``) and their connections."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import tls
from ..config import BrokerConfig
from .connection import StreamConnection

if TYPE_CHECKING:
    from ..server.abc import Server

log = logging.getLogger("broker.stream")

#: The largest frame the server accepts and offers in Tune (RabbitMQ's default).
FRAME_MAX = 1_048_576
#: Seconds a connection gets to close when the broker stops.
_SHUTDOWN_GRACE = 1.0


class StreamPortError(OSError):
    """The stream protocol's port cannot be listened on; the message says which and why."""


async def _listen(
    factory: Callable[[], asyncio.Protocol], host: str, port: int, **options: Any
) -> asyncio.Server:
    loop = asyncio.get_running_loop()
    try:
        return await loop.create_server(factory, host, port, **options)
    except OSError as e:
        raise StreamPortError(
            f"cannot listen for the stream protocol on {host}:{port}: {e.strerror or e} "
            "(--stream-port PORT chooses another, 0 none)"
        ) from None


class StreamListener:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.config: BrokerConfig = server.config
        self.loop = server.loop
        self.frame_max = FRAME_MAX
        self.connections: set[StreamConnection] = set()
        self._listeners: list[asyncio.Server] = []
        self.port = 0
        self.tls_port = 0

    async def start(self) -> None:
        """Listen on ``stream_port`` (and the TLS section's ``stream_port``); 0 is an
        ephemeral port, None no listener."""
        config = self.config
        host = config.host
        if config.tls is not None and config.tls.stream_port is not None:
            secure = await _listen(
                lambda: StreamConnection(self),
                host,
                config.tls.stream_port,
                ssl=tls.server_context(config.tls),
                ssl_handshake_timeout=tls.TLS_HANDSHAKE_TIMEOUT,
            )
            self._listeners.append(secure)
            self.tls_port = tls.bound_port(secure)
            log.info(
                "broker listening for the stream protocol over TLS on %s:%d", host, self.tls_port
            )
        if config.stream_port is not None:
            plain = await _listen(lambda: StreamConnection(self), host, config.stream_port)
            self._listeners.append(plain)
            self.port = tls.bound_port(plain)
            log.info("broker listening for the stream protocol on %s:%d", host, self.port)

    def close(self) -> None:
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.abort()

    def set_alarm(self, alarm: bool) -> None:
        """A resource alarm (memory, disk) set or cleared: connections with publishers stop
        (or go on) being read."""
        for conn in list(self.connections):
            conn.set_alarm(alarm)

    def advertised(self, transport: asyncio.BaseTransport | None) -> tuple[str, int]:
        """The host and port a client on ``transport`` reaches this listener at (Metadata,
        Open): the address it connected to."""
        assert transport is not None
        host, port = transport.get_extra_info("sockname")[:2]
        return str(host), int(port)

    def peer_common_name(self, transport: asyncio.BaseTransport | None) -> str | None:
        assert transport is not None
        return tls.peer_common_name(transport)
