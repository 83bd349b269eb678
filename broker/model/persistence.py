"""The seam where durability plugs in (``broker/store/`` implements it).

The virtual host calls these hooks for durable entities and for persistent messages in
durable queues; the default does nothing, so the broker runs in memory. A store is handed to
``Broker(data_dir=...)`` through ``broker.server.app.make_persistence``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .exchanges import Exchange
    from .message import QueuedMessage
    from .queues import Queue


class Persistence(Protocol):
    def exchange_declared(self, vhost: str, exchange: Exchange) -> None: ...

    def exchange_deleted(self, vhost: str, name: str) -> None: ...

    def queue_declared(self, vhost: str, queue: Queue) -> None: ...

    def queue_deleted(self, vhost: str, name: str) -> None: ...

    def binding_changed(
        self,
        vhost: str,
        source: str,
        destination: str,
        kind: str,
        key: str,
        arguments: dict[str, Any],
        added: bool,
    ) -> None:
        """``kind`` is "queue" or "exchange"."""
        ...

    def message_enqueued(self, queue: Queue, entry: QueuedMessage) -> None:
        """Called for every enqueue; a store keeps those that are persistent in durable queues."""
        ...

    def message_removed(self, queue: Queue, entry: QueuedMessage) -> None: ...


class InMemory:
    """No durability: every hook is a no-op."""

    def exchange_declared(self, vhost: str, exchange: Exchange) -> None:
        pass

    def exchange_deleted(self, vhost: str, name: str) -> None:
        pass

    def queue_declared(self, vhost: str, queue: Queue) -> None:
        pass

    def queue_deleted(self, vhost: str, name: str) -> None:
        pass

    def binding_changed(
        self,
        vhost: str,
        source: str,
        destination: str,
        kind: str,
        key: str,
        arguments: dict[str, Any],
        added: bool,
    ) -> None:
        pass

    def message_enqueued(self, queue: Queue, entry: QueuedMessage) -> None:
        pass

    def message_removed(self, queue: Queue, entry: QueuedMessage) -> None:
        pass
