"""What the server's core offers the dialects (and the connection the channels): the public
surface of a connection and a channel, as structural types.

Dialect handlers (``spec09``, ``rabbitmq``) see a channel and its connection only through
these: they import no core module for their types, so the dialects and the core form no
import cycle, and a handler uses no member the core keeps to itself (the aiormq ``abc.py``
approach, as protocols, so the core classes need no base class on their hot paths).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from amqp_protocol import Connection as ProtocolConnection
from amqp_protocol import Method, Properties, Spec, events
from amqp_protocol.generated.any_version import (
    BasicProperties,
    BasicPublish,
    ExchangeDeclare,
    QueueDeclare,
)
from amqp_protocol.handshake import Handshake

from ..access import Access
from ..config import BrokerConfig
from ..model.message import QueuedMessage
from ..model.queues import Consumer, Queue
from ..model.stats import MessageStats
from ..model.vhost import VirtualHost
from .connection_output import ConnectionOutput

if TYPE_CHECKING:
    from .connection_view import ConnectionSnapshot
    from .descriptors import RefusalLog

#: How a dialect frames the replies to a request it hands to ``Connection.handle_request``:
#: the frame for a method sent while the request runs, or None when it is no reply.
Respond = Callable[[Method], "bytes | None"]
#: A delivery awaiting ack: (consumer or None for basic.get, queue, entry).
Unacked = tuple["Consumer | None", Queue, QueuedMessage]


class Server(Protocol):
    """The broker process as its connections see it."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def vhosts(self) -> dict[str, VirtualHost]: ...

    @property
    def connections(self) -> set[Any]: ...

    @property
    def connection_limit(self) -> int: ...

    @property
    def refusals(self) -> RefusalLog: ...

    @property
    def closed_stats(self) -> MessageStats: ...

    @property
    def blocked_reason(self) -> str | None: ...


class Connection(Protocol):
    """A client connection, after connection.open."""

    @property
    def server(self) -> Server: ...

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def proto(self) -> ProtocolConnection: ...

    @property
    def handshake(self) -> Handshake: ...

    @property
    def peer(self) -> str: ...

    @property
    def transport(self) -> asyncio.Transport | None: ...

    @property
    def user(self) -> str | None: ...

    @property
    def access(self) -> Access: ...

    @property
    def vhost(self) -> VirtualHost: ...

    @property
    def channels(self) -> Mapping[int, Channel]: ...

    @property
    def stats(self) -> MessageStats: ...

    @property
    def spec(self) -> Spec: ...

    #: what it sends, and its flow control: ``send_delivery``, ``writable``, ``cancel_content``
    @property
    def output(self) -> ConnectionOutput: ...

    def send_method(self, channel: int, method: Method) -> None: ...

    def send_content(
        self,
        channel: int,
        method: Method,
        properties: Properties,
        body: bytes,
        delivery_tag: int | None = None,
    ) -> None: ...

    def handle_request(
        self, received: events.MethodReceived | events.ContentReceived, respond: Respond
    ) -> None: ...

    def client_capability(self, name: str) -> bool: ...

    def confirms_pending(self, channel: Any) -> None: ...

    def forget_channel(self, channel_id: int) -> None: ...

    def published(self, size: int) -> None: ...

    def abort(self) -> None: ...

    def snapshot(self) -> ConnectionSnapshot[Channel]:
        """What the management API reads of the connection, read-only."""
        ...


class Channel(Protocol):
    """A channel: its state, and the operations its dialect's handlers build on."""

    @property
    def conn(self) -> Connection: ...

    @property
    def id(self) -> int: ...

    @property
    def vhost(self) -> VirtualHost: ...

    @property
    def consumers(self) -> dict[str, Consumer]: ...

    @property
    def unacked(self) -> dict[int, Unacked]: ...

    flow_active: bool

    @property
    def transactional(self) -> bool: ...

    @property
    def closed(self) -> bool: ...

    #: the queue last declared on the channel, which an empty queue name means
    @property
    def last_queue(self) -> str | None: ...

    #: what the dialect keeps per channel beyond the core's state (``Dialect.channel_state``)
    @property
    def dialect_state(self) -> object: ...

    def send(self, method: Method) -> None: ...

    def redispatch(self) -> None: ...

    def teardown(self) -> None: ...

    def move_to(self, conn: Connection, channel_id: int) -> None: ...

    def track_delivery(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> int: ...

    def track_get(self, queue: Queue, entry: QueuedMessage, no_ack: bool) -> int: ...

    def queue_named(self, name: str) -> Queue: ...

    def declare_exchange(self, m: ExchangeDeclare, *, durable: bool, auto_delete: bool) -> None: ...

    def declare_queue(self, m: QueueDeclare, *, durable: bool, auto_delete: bool) -> Queue: ...

    def qos(self, prefetch_count: int, global_: bool) -> None: ...

    def basic_publish(self, m: BasicPublish, properties: BasicProperties, body: bytes) -> None: ...

    def take_unacked(self, tag: int, multiple: bool) -> list[tuple[int, Unacked]]: ...

    def release(self, items: list[Unacked]) -> set[Queue]: ...

    def settle(self, action: str, items: list[Unacked]) -> None: ...

    def settle_or_hold(self, action: str, tag: int, multiple: bool) -> None: ...

    def require_tx(self) -> None: ...

    def take_tx_requeues(self) -> list[Unacked]: ...
