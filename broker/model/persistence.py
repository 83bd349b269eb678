"""The seam where durability plugs in (``broker/store/persistence.py`` implements it).

The virtual host calls the topology hooks for durable entities, queues call the message
hooks for every enqueue and removal, and the channel hands each routed message to
``message_routed`` with its confirm token. The default, ``InMemory``, keeps nothing, so the
broker runs in memory; ``broker.server.app.make_persistence`` returns the durable store when
the broker has a data directory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from .queues import Queue, QueueStore
from .ready_messages import SpillQueue

if TYPE_CHECKING:
    from .exchanges import Exchange
    from .message import Message


class Persistence(QueueStore, Protocol):
    """The hooks of ``QueueStore`` (those queues call) and those of the virtual host and
    the channel."""

    def exchange_declared(self, vhost: str, exchange: Exchange) -> None: ...

    def exchange_deleted(self, vhost: str, name: str) -> None: ...

    def queue_declared(self, vhost: str, queue: Queue) -> None:
        """A durable queue was declared; a store sets ``queue.queue_id`` to journal its
        messages (exclusive queues are not kept: they die with their connection)."""
        ...

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

    def message_routed(self, message: Message, queues: list[Queue], token: object) -> bool:
        """Called before ``message`` is enqueued on ``queues``: a store journals a persistent
        message once for all of them that are durable. True when it did: the publish's
        confirm (if ``token`` is not None) then waits until the store reports it written."""
        ...

    def sync(self) -> None:
        """Return once everything recorded so far is on disk (tx.commit)."""
        ...


class InMemory:
    """No durability: the hooks do nothing and spilled queues go to a temporary directory."""

    durable = False

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

    def message_routed(self, message: Message, queues: list[Queue], token: object) -> bool:
        return False

    def content_routed(self, queue: Queue, class_id: int, data: bytes) -> int:
        return 0

    def message_removed(self, queue: Queue, message: Message) -> None:
        pass

    def messages_delivered(self, queue: Queue, msg_ids: list[int]) -> None:
        pass

    def sync(self) -> None:
        pass

    def spill_fifo(self) -> SpillQueue:
        from broker.store.spill import SpillFifo
        from broker.store.spilled_entries import SpilledEntries

        return SpilledEntries(SpillFifo())
