"""What a channel speaking AMQP 0-9 (or 0-8) keeps beyond a 0-9-1 channel."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...model.exchanges import Exchange
    from ...model.message import QueuedMessage
    from ...model.queues import Consumer, Queue
    from ..abc import Channel
    from .class_message import ClassMessage


@dataclass(frozen=True)
class Ticket:
    """An access ticket (see access)."""

    number: int
    realm: str
    rights: frozenset[str]
    exclusive: bool


@dataclass
class OutgoingFile:
    """A file delivery in progress: file.open sent, waiting for the client's open-ok."""

    consumer: Consumer
    lane: Queue
    entry: QueuedMessage
    delivery_tag: int | None  #: None for a no-ack consumer


@dataclass
class HeldTransfer:
    """A message.transfer whose body is a reference that is still open."""

    exchange: Exchange
    message: ClassMessage


@dataclass
class Spec09State:
    tickets: dict[int, Ticket] = field(default_factory=dict)
    #: Tickets granted so far: numbers are never reused, so a destroyed ticket stays invalid.
    tickets_issued: int = 0
    #: file.qos / message.qos prefetch-count of consumers created from now on (stream.qos's
    #: is ignored: stream content is never acknowledged, see stream_class).
    prefetch: dict[str, int] = field(default_factory=dict)
    #: basic.qos prefetch-size: octets of unacknowledged basic deliveries the channel may
    #: have outstanding before it stops sending more (0: no limit).
    prefetch_size: int = 0
    #: file: the staging identifier the client opened (file.open) and its staged bytes so far.
    staging: str | None = None
    staged: bytes = b""
    outgoing_file: OutgoingFile | None = None
    #: stream.qos consume-rate in octets per second (0: unlimited) and when the next
    #: stream delivery may go.
    consume_rate: int = 0
    next_stream_at: float = 0.0
    rate_timer: Any = None
    #: message class: open references and their data, transfers held on them, and the
    #: delivery tags of the server's transfers awaiting message.ok (None: no-ack).
    references: dict[str, bytearray] = field(default_factory=dict)
    held: dict[str, list[HeldTransfer]] = field(default_factory=dict)
    transfers_awaiting_ok: deque[int | None] = field(default_factory=deque)
    #: tx: contents of the 0-9 classes published in the open transaction.
    tx_publishes: list[tuple[Exchange, ClassMessage, bool]] = field(default_factory=list)
    #: Deliveries rejected with requeue that no other channel could take: they go back to
    #: their queues when this channel closes (see rejects).
    parked: list[tuple[Queue, QueuedMessage]] = field(default_factory=list)
    dtx_selected: bool = False
    dtx_identifier: str | None = None


def state_of(channel: Channel) -> Spec09State:
    """The 0-9 classes' state of ``channel``: its dialect state, or, for a dialect that reuses
    0-9's classes beside its own (the 0-10 draft's access, file, stream and tunnel), the
    ``Spec09State`` its state keeps as ``classes09``."""
    state = channel.dialect_state
    state = getattr(state, "classes09", state)
    assert isinstance(state, Spec09State), "a 0-9 method on a channel that does not speak 0-9"
    return state
