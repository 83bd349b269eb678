"""The broker process state: configuration, virtual hosts, the listening socket and the
open connections, on one asyncio event loop.

With a data directory, the store is opened (and the durable state recovered) in the
constructor, before anything is served: a bad directory raises ``StoreError`` there.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from amqp_protocol import SPEC_0_8, SPEC_0_9

from .. import tls
from ..config import BrokerConfig
from ..model.memory import MemoryGauge
from ..model.persistence import InMemory, Persistence
from ..model.queue_types import QueueTypes
from ..model.stats import MessageStats
from ..model.vhost import VirtualHost
from ..store.monitor import ResourceMonitor
from ..store.persistence import DurableStore
from ..store.store import Store
from ..stream_server.listener import StreamListener
from ..streams.queue import StreamQueue
from . import descriptors
from .connection import AMQPConnection
from .dialect import Dialects
from .spec010 import Spec010Dialect
from .spec09 import Spec09Dialect
from .spec091 import RabbitMQDialect

if TYPE_CHECKING:
    from ..management.server import ManagementServer

log = logging.getLogger("broker")

SHUTDOWN_REPLY = (
    320,
    "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'",
)
#: Seconds shutdown waits for clients to answer connection.close.
SHUTDOWN_GRACE = 2.0
#: Seconds between two checks of the data directory's free disk space.
DISK_CHECK_INTERVAL = 1.0
MEMORY_BLOCKED_REASON = "low on memory"


def make_persistence(data_dir: str | None, loop: asyncio.AbstractEventLoop) -> Persistence:
    """The durable store of ``data_dir`` (opened and recovered, not yet journaling), or
    ``InMemory`` without one. Raises ``StoreError`` for a directory that cannot be used."""
    if not data_dir:
        return InMemory()
    return DurableStore(Store.open(Path(data_dir)), loop)


class BrokerServer:
    def __init__(self, config: BrokerConfig, loop: asyncio.AbstractEventLoop) -> None:
        self.config = config
        self.loop = loop
        #: the soft RLIMIT_NOFILE it runs with (RabbitMQ's fd_total)
        self.open_files_limit = descriptors.set_open_files_limit(config.open_files_limit)
        #: connections held at most (connection_max, within what the descriptors allow)
        self.connection_limit = descriptors.connection_limit(
            self.open_files_limit, config.connection_max
        )
        self.refusals = descriptors.RefusalLog(loop.time)
        #: the AMQP versions it speaks, preferred first: a client's protocol header picks one
        self.dialects = Dialects(
            RabbitMQDialect(), Spec09Dialect(SPEC_0_9), Spec09Dialect(SPEC_0_8), Spec010Dialect()
        )
        self.dialects.register_contents()  # before recovery reads their journaled messages
        self._accept_guard: descriptors.AcceptGuard | None = None
        self.memory = MemoryGauge(config.memory_high_watermark)
        self.memory.on_change = self._memory_changed
        self.store = make_persistence(config.data_dir, loop)
        self.queue_types = QueueTypes(stream=StreamQueue)
        self.disk: ResourceMonitor | None = None
        self.disk_alarm: str | None = None
        self._disk_timer: asyncio.TimerHandle | None = None
        try:
            if isinstance(self.store, DurableStore):
                config.merge_topic_permissions(self.store.topology)  # saved by the next line
                self.store.merge_definitions(config)
            self.vhosts = {
                name: VirtualHost(name, loop, self.memory, self.store, self.queue_types)
                for name in config.vhosts
            }
            if isinstance(self.store, DurableStore):
                began = time.perf_counter()
                count = self.store.recover(self.vhosts)
                log.info(
                    "recovered %d message(s) from %s in %.2fs",
                    count,
                    config.data_dir,
                    time.perf_counter() - began,
                )
                self.store.start()
                self.disk = ResourceMonitor(
                    memory_limit=1 << 62,  # memory is the MemoryGauge's job
                    disk_path=Path(str(config.data_dir)),
                    disk_free_limit=config.disk_free_limit,
                )
        except BaseException:
            self._close_store()
            raise
        self.connections: set[AMQPConnection] = set()
        #: message counts of closed connections and of the management API's own publishes
        self.closed_stats = MessageStats()
        #: the management HTTP listener (None when ``management.enabled`` is false)
        self.management: ManagementServer | None = None
        self._server: asyncio.Server | None = None
        self._tls_server: asyncio.Server | None = None
        self.port = 0
        #: The amqps listener's port (0 without a ``[tls]`` section).
        self.tls_port = 0
        #: RabbitMQ's stream protocol (``port`` 0: not listening)
        self.streams = StreamListener(self)

    @property
    def blocked_reason(self) -> str | None:
        """Why publishers are blocked now (memory watermark, low disk), or None."""
        if self.memory.blocked:
            return MEMORY_BLOCKED_REASON
        return self.disk_alarm

    async def start(self) -> None:
        """Listen for amqps when the config has a ``[tls]`` section, then for amqp (so that a
        peer that finds the amqp port open finds the amqps one open too)."""
        self._accept_guard = descriptors.AcceptGuard(
            self.loop, self.refusals, self.open_files_limit
        )
        self._tls_server = await tls.listen(
            lambda: AMQPConnection(self, self.dialects),
            self.config.host,
            self.config.tls,
            self.loop,
        )
        if self._tls_server is not None:
            self.tls_port = tls.bound_port(self._tls_server)
        try:
            self._server = await self.loop.create_server(
                lambda: AMQPConnection(self, self.dialects), self.config.host, self.config.port
            )
        except BaseException:
            if self._tls_server is not None:
                self._tls_server.close()
            raise
        sockets = self._server.sockets
        self.port = sockets[0].getsockname()[1] if sockets else self.config.port
        try:
            await self.streams.start()
        except BaseException:
            self.streams.close()
            self._server.close()
            if self._tls_server is not None:
                self._tls_server.close()
            raise
        log.info(
            "broker listening for AMQP on %s:%d (at most %d connections)",
            self.config.host,
            self.port,
            self.connection_limit,
        )
        await self._start_management()
        if self.disk is not None:
            self._check_disk()

    async def _start_management(self) -> None:
        """The management listener; a taken port closes the AMQP listeners again."""
        if not self.config.management.enabled:
            return
        from ..management.server import ManagementServer  # aiohttp: only when enabled

        management = ManagementServer(self)
        try:
            await management.start()
        except BaseException:
            for listener in (self._server, self._tls_server):
                if listener is not None:
                    listener.close()
            self.streams.close()
            raise
        self.management = management

    async def shutdown(self) -> None:
        """Stop listening; close every connection with 320 CONNECTION_FORCED; close the
        stream logs and the store."""
        if self.management is not None:
            await self.management.stop()
        for listener in (self._server, self._tls_server):
            if listener is not None:
                listener.close()
        self.streams.close()
        if self._disk_timer is not None:
            self._disk_timer.cancel()
        for conn in list(self.connections):
            conn.close(*SHUTDOWN_REPLY)
        deadline = self.loop.time() + SHUTDOWN_GRACE
        while self.connections and self.loop.time() < deadline:
            await asyncio.sleep(0.02)
        for conn in list(self.connections):
            conn.abort()
        if self._accept_guard is not None:
            self._accept_guard.close()
        self._close_store()
        log.info("broker stopped")

    def _close_store(self) -> None:
        for vhost in getattr(self, "vhosts", {}).values():
            for queue in vhost.queues.values():
                if isinstance(queue, StreamQueue):
                    queue.close()
        if isinstance(self.store, DurableStore):
            self.store.close()

    def _check_disk(self) -> None:
        assert self.disk is not None
        alarm = self.disk.check()
        changed = (alarm is None) != (self.disk_alarm is None)
        self.disk_alarm = alarm
        if changed:
            log.warning("disk alarm %s", f"set: {alarm}" if alarm else "cleared")
            self._blocking_changed()
        self._disk_timer = self.loop.call_later(DISK_CHECK_INTERVAL, self._check_disk)

    def _memory_changed(self, blocked: bool) -> None:
        log.info(
            "memory watermark %s: %d bytes of messages held (high watermark %d)",
            "crossed" if blocked else "cleared",
            self.memory.used,
            self.memory.high,
        )
        self._blocking_changed()

    def _blocking_changed(self) -> None:
        reason = self.blocked_reason
        for conn in list(self.connections):
            conn.set_memory_blocked(reason is not None, reason or "")
        self.streams.set_alarm(reason is not None)
