"""What the management plane uses of the broker, typed structurally (``BrokerServer`` is
one): the server starts the management listener, so the management modules name no server
class that would import them back (no import cycle, ``tests/broker/test_import_graph.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..server.abc import Server

if TYPE_CHECKING:
    from ..config import ManagementConfig
    from ..model.memory import MemoryGauge
    from ..model.persistence import Persistence
    from ..model.queue_types import QueueTypes
    from ..server.connection import AMQPConnection


class Listener(Protocol):
    """The management listener, as the node's listeners show it."""

    @property
    def config(self) -> ManagementConfig: ...

    @property
    def port(self) -> int: ...


class StreamPorts(Protocol):
    """The stream protocol's listeners (0: not listening)."""

    @property
    def port(self) -> int: ...

    @property
    def tls_port(self) -> int: ...


class ManagedBroker(Server, Protocol):
    """The broker process as the management API reads and changes it: as its connections see
    it (``abc.Server``), and more."""

    @property
    def connections(self) -> set[AMQPConnection]: ...

    @property
    def memory(self) -> MemoryGauge: ...

    @property
    def store(self) -> Persistence: ...

    @property
    def queue_types(self) -> QueueTypes: ...

    @property
    def disk_alarm(self) -> str | None: ...

    @property
    def port(self) -> int: ...

    @property
    def tls_port(self) -> int: ...

    @property
    def management(self) -> Listener | None: ...

    @property
    def streams(self) -> StreamPorts: ...
