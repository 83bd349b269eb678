"""The broker process state: configuration, virtual hosts, the listening socket and the
open connections, on one asyncio event loop."""

from __future__ import annotations

import asyncio
import logging

from ..config import BrokerConfig
from ..model.memory import MemoryGauge
from ..model.persistence import InMemory, Persistence
from ..model.vhost import VirtualHost
from .connection import AMQPConnection

log = logging.getLogger("broker")

SHUTDOWN_REPLY = (
    320,
    "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'",
)
#: Seconds shutdown waits for clients to answer connection.close.
SHUTDOWN_GRACE = 2.0


def make_persistence(data_dir: str | None) -> Persistence:
    """The store for ``data_dir``; in memory until ``broker/store`` provides one."""
    return InMemory()


class BrokerServer:
    def __init__(self, config: BrokerConfig, loop: asyncio.AbstractEventLoop) -> None:
        self.config = config
        self.loop = loop
        self.memory = MemoryGauge(config.memory_high_watermark)
        self.memory.on_change = self._memory_changed
        store = make_persistence(config.data_dir)
        self.vhosts = {name: VirtualHost(name, loop, self.memory, store) for name in config.vhosts}
        self.connections: set[AMQPConnection] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await self.loop.create_server(
            lambda: AMQPConnection(self), self.config.host, self.config.port
        )
        sockets = self._server.sockets
        self.port = sockets[0].getsockname()[1] if sockets else self.config.port
        log.info("broker listening for AMQP on %s:%d", self.config.host, self.port)

    async def shutdown(self) -> None:
        """Stop listening; close every connection with 320 CONNECTION_FORCED."""
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.close(*SHUTDOWN_REPLY)
        deadline = self.loop.time() + SHUTDOWN_GRACE
        while self.connections and self.loop.time() < deadline:
            await asyncio.sleep(0.02)
        for conn in list(self.connections):
            conn.abort()
        log.info("broker stopped")

    def _memory_changed(self, blocked: bool) -> None:
        log.info(
            "memory watermark %s: %d bytes of messages held (high watermark %d)",
            "crossed" if blocked else "cleared",
            self.memory.used,
            self.memory.high,
        )
        for conn in list(self.connections):
            conn.set_memory_blocked(blocked)
