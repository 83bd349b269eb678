"""A classic queue: its ready messages, its consumers, and the rules that drop, expire or
dead-letter messages.

The queue is the single owner of its messages (RabbitMQ's idea): channels hold delivered,
unacknowledged entries only by reference and hand them back with ``settle``, ``requeue``
or ``reject``. Delivery is push: whenever something changes that may let a message move
(a publish, an ack freeing prefetch, a new consumer, a writable socket), ``dispatch`` gives
ready messages to consumers that the sink says can take one, round robin within the highest
consumer priority.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard

from amqp_protocol import errors

from .clock import Clock, TimerHandle
from .field_types import amqp_type_name
from .memory import MemoryGauge
from .message import Message, QueuedMessage, with_headers
from .stats import MessageStats

#: RabbitMQ's modes, and one of ours: ``drop-lowest-priority`` (rules basic:05, message:05,
#: stream:01 of AMQP 0-9) drops the oldest message of the lowest priority present instead of
#: the head; without priorities it is drop-head.
OVERFLOW_MODES = ("drop-head", "reject-publish", "reject-publish-dlx", "drop-lowest-priority")
_DROPPING_MODES = ("drop-head", "drop-lowest-priority")
_MAX_PRIORITY_LIMIT = 255


class DeliverySink(Protocol):
    """Where a consumer's deliveries go (a channel)."""

    def can_deliver(self, consumer: Consumer) -> bool: ...

    def deliver(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> None: ...

    def consumer_cancelled(self, consumer: Consumer) -> None:
        """The queue went away under the consumer (the server-sent basic.cancel)."""
        ...


class SpillQueue(Protocol):
    """Queue entries kept on disk, first in first out
    (``broker.store.spilled_entries.SpilledEntries``)."""

    def __len__(self) -> int: ...

    def push(self, entry: QueuedMessage) -> None: ...

    def pop(self) -> QueuedMessage: ...

    def close(self) -> None: ...


class QueueStore(Protocol):
    """What a queue asks of the store: the message hooks of ``persistence.Persistence``."""

    #: True when messages and definitions outlive the process.
    durable: bool

    def content_routed(self, queue: Queue, class_id: int, data: bytes) -> int:
        """A message of content class ``class_id`` (not basic; ``data`` is its encoding, which
        ``broker.store.persistence.CONTENT_RESTORERS[class_id]`` reads back) is enqueued on
        ``queue``: a store journals it if the queue is durable. Returns its journal id (0: not
        journaled); the queue's ``message_removed`` acks it as for basic messages."""
        ...

    def message_removed(self, queue: Queue, message: Message) -> None:
        """The message left the queue for good (acked, dropped, purged, dead-lettered, or
        refused on arrival); called exactly once per queue the message was routed to."""
        ...

    def messages_delivered(self, queue: Queue, msg_ids: list[int]) -> None:
        """``queue`` (a durable one) handed these journaled messages to consumers or to
        basic.get, unacknowledged, and their frames have not left yet: a store records it
        before returning, so that after a restart they come back redelivered."""
        ...

    def spill_fifo(self) -> SpillQueue:
        """Disk space for the tail of a queue larger than memory."""
        ...


@dataclass(frozen=True, slots=True)
class QueueContext:
    """What a queue uses of the broker around it, and all it uses: a virtual host builds
    one for its queues, a test builds one with a fake clock and no virtual host."""

    #: The virtual host's name, as reply texts name it.
    vhost: str
    clock: Clock
    memory: MemoryGauge
    store: QueueStore
    #: Where a message the queue lets go goes (rejected, expired, past a limit): the
    #: virtual host's dead-letter exchanges (the 0-9 lanes route their classes their way).
    dead_letter: Callable[[Queue, Message, str], None]
    #: Called when auto-delete or ``x-expires`` finds the queue without consumers: the
    #: virtual host deletes it unless something else still uses it.
    unused: Callable[[Queue], None]


class Consumer:
    __slots__ = ("tag", "queue", "sink", "no_ack", "exclusive", "priority", "prefetch", "unacked")

    def __init__(
        self,
        tag: str,
        queue: Queue,
        sink: DeliverySink,
        *,
        no_ack: bool = False,
        exclusive: bool = False,
        priority: int = 0,
        prefetch: int = 0,
    ) -> None:
        self.tag = tag
        self.queue = queue
        self.sink = sink
        self.no_ack = no_ack
        self.exclusive = exclusive
        self.priority = priority
        self.prefetch = prefetch  #: 0: unlimited
        self.unacked = 0


def _by_seq(entry: QueuedMessage) -> int:
    return entry.seq


class ReadyMessages:
    """Ready messages in delivery order: one FIFO per priority level (``levels`` of them, one
    without priorities), the highest level served first.

    Past ``SPILL_AFTER_MESSAGES`` or ``SPILL_AFTER_BYTES`` held in memory (over all levels),
    further messages go to disk: each level pushes its own to a ``SpillQueue`` (their bodies
    stop counting against the memory gauge) and takes them back, in order, when its in-memory
    part is empty and it is the level to serve. Within a level every in-memory entry precedes
    every spilled one, so priorities and the order within a priority hold.
    """

    SPILL_AFTER_MESSAGES = 20_000
    SPILL_AFTER_BYTES = 16 << 20

    __slots__ = (
        "_levels",
        "_spills",
        "_len",
        "_spilled",
        "_held_bytes",
        "_memory",
        "_spill_factory",
        "_seqs",
    )

    def __init__(
        self,
        levels: int = 1,
        memory: MemoryGauge | None = None,
        spill_factory: Callable[[], SpillQueue] | None = None,
    ) -> None:
        self._levels: list[deque[QueuedMessage]] = [deque() for _ in range(levels)]
        #: Each level's entries on disk (created on its first spill), newer than its in-memory ones
        self._spills: list[SpillQueue | None] = [None] * levels
        self._len = 0
        self._spilled = 0  #: entries on disk, over all levels
        self._held_bytes = 0  #: body bytes of the in-memory entries
        self._memory = memory
        self._spill_factory = spill_factory
        #: the ``seq`` of each entry appended (``next``: cheaper per publish than a counter)
        self._seqs = itertools.count()

    def __len__(self) -> int:
        return self._len

    @property
    def spilled(self) -> int:
        return self._spilled

    def __iter__(self) -> Iterator[QueuedMessage]:
        """The in-memory entries (all of them once ``clear`` has taken the spilled ones back)."""
        return itertools.chain.from_iterable(reversed(self._levels))

    def _index(self, entry: QueuedMessage) -> int:
        return min(entry.message.priority, len(self._levels) - 1)

    def _memory_full(self) -> bool:
        return (
            self._len - self._spilled >= self.SPILL_AFTER_MESSAGES
            or self._held_bytes >= self.SPILL_AFTER_BYTES
        )

    def append(self, entry: QueuedMessage) -> None:
        entry.seq = next(self._seqs)
        i = min(entry.message.priority, len(self._levels) - 1)
        if self._spill_factory is not None and (
            (self._spilled and self._spills[i])  # the level's spilled entries precede this one
            or self._len - self._spilled >= self.SPILL_AFTER_MESSAGES  # _memory_full, inlined
            or self._held_bytes >= self.SPILL_AFTER_BYTES
        ):
            spill = self._spills[i]
            if spill is None:
                spill = self._spills[i] = self._spill_factory()
            spill.push(entry)
            self._spilled += 1
            self._len += 1
            if self._memory is not None:
                self._memory.sub(entry.size)
            return
        self._len += 1
        self._held_bytes += entry.size
        self._levels[i].append(entry)

    def put_back_in_place(self, entries: list[QueuedMessage]) -> None:
        """Put ``entries`` (taken from this queue) back where they were among the entries
        of their level, by ``seq``: a consumer sees them again in the order they were
        appended, as RabbitMQ 4's classic queues do after a nack or reject with requeue, a
        basic.recover or a closed channel (measured on 4.0.5: of 1..6 all taken, nack 5, 2,
        4 gives 2, 4, 5). Costs the entries plus the ready ones with a lower ``seq``
        (earlier returns waiting at the head); spilled entries are all newer."""
        by_level: dict[int, list[QueuedMessage]] = {}
        for entry in sorted(entries, key=_by_seq):
            by_level.setdefault(self._index(entry), []).append(entry)
            self._held_bytes += entry.size
        self._len += len(entries)
        for i, batch in by_level.items():
            level = self._levels[i]
            ahead = []
            last = batch[-1].seq
            while level and level[0].seq < last:
                ahead.append(level.popleft())
            level.extendleft(reversed(list(heapq.merge(ahead, batch, key=_by_seq))))

    def put_back_behind_returns(self, entries: list[QueuedMessage]) -> None:
        """Put ``entries`` back, in order, ahead of every entry of their level never
        delivered and behind the redelivered ones at its head (RabbitMQ 4.0's quorum queues
        serve returned messages first, in the order they came back)."""
        by_level: dict[int, list[QueuedMessage]] = {}
        for entry in entries:
            by_level.setdefault(self._index(entry), []).append(entry)
            self._held_bytes += entry.size
        self._len += len(entries)
        for i, batch in by_level.items():
            level = self._levels[i]
            returns = []
            while level and level[0].redelivered:
                returns.append(level.popleft())
            level.extendleft(reversed(returns + batch))

    def _head_level(self) -> deque[QueuedMessage] | None:
        """The in-memory FIFO of the highest level with entries (refilled from disk if all
        of that level's are there), None when empty."""
        levels = self._levels
        if not self._spilled:
            for level in reversed(levels):
                if level:
                    return level
            return None
        for i in range(len(levels) - 1, -1, -1):
            if levels[i]:
                return levels[i]
            if self._spills[i]:
                return self._refill(i)
        return None

    def _refill(self, i: int) -> deque[QueuedMessage]:
        """Take level ``i``'s spilled entries back into memory, oldest first, up to the
        thresholds but at least one (the other levels may hold all the memory allowed)."""
        spill = self._spills[i]
        assert spill is not None
        level = self._levels[i]
        taken = 0
        while spill and not (level and self._memory_full()):
            entry = spill.pop()
            # A spill keeps no ``seq``: one above every entry in memory keeps the order.
            entry.seq = next(self._seqs)
            level.append(entry)
            self._spilled -= 1
            self._held_bytes += entry.size
            taken += entry.size
        if self._memory is not None:
            self._memory.add(taken)
        return level

    def peek(self) -> QueuedMessage | None:
        level = self._head_level()
        return level[0] if level else None

    def popleft(self) -> QueuedMessage:
        level = self._head_level()
        assert level is not None, "popleft from an empty queue"
        return self._take(level)

    def _take(self, level: deque[QueuedMessage]) -> QueuedMessage:
        self._len -= 1
        entry = level.popleft()
        self._held_bytes -= entry.size
        return entry

    def pop_lowest(self) -> QueuedMessage:
        """Remove the oldest entry of the lowest priority present (the head when the queue
        has one level)."""
        for i, level in enumerate(self._levels):
            if level:
                return self._take(level)
            if self._spills[i]:
                return self._take(self._refill(i))
        raise IndexError("pop_lowest from an empty queue")

    def clear(self) -> list[QueuedMessage]:
        """Remove and return every entry (spilled ones read back first)."""
        taken = 0
        for level, spill in zip(self._levels, self._spills, strict=True):
            while spill:
                entry = spill.pop()
                level.append(entry)
                taken += entry.size
        if self._memory is not None:
            self._memory.add(taken)
        entries = list(self)
        for level in self._levels:
            level.clear()
        self._len = self._spilled = self._held_bytes = 0
        return entries

    def close(self) -> None:
        """Delete the spill files (the queue is gone)."""
        for spill in self._spills:
            if spill is not None:
                spill.close()
        self._spills = [None] * len(self._levels)


def _invalid_arg(queue: str, vhost: str, name: str, why: str) -> errors.AMQPError:
    return errors.PreconditionFailed(
        f"PRECONDITION_FAILED - invalid arg '{name}' for queue '{queue}' in vhost '{vhost}': {why}"
    )


def _is_integer(value: object) -> TypeGuard[int]:
    """An AMQP integer (a boolean is not one, as for RabbitMQ)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _expected_integer(value: object) -> str:
    return f'"expected integer, got {amqp_type_name(value)}"'


def consumer_priority(queue: str, vhost: str, arguments: dict[str, Any] | None) -> int:
    """basic.consume's ``x-priority`` (0 without one); anything but an integer is refused."""
    value = (arguments or {}).get("x-priority", 0)
    if not _is_integer(value):
        raise _invalid_arg(queue, vhost, "x-priority", _expected_integer(value))
    return value


def int_arg(queue: str, vhost: str, args: dict[str, Any], name: str, minimum: int) -> int | None:
    """An integer argument at least ``minimum`` (0 or 1), refused with RabbitMQ's texts."""
    value = args.get(name)
    if value is None:
        return None
    if not _is_integer(value):
        why = _expected_integer(value)
    elif value < 0:
        why = f"{{value_negative,{value}}}"
    elif value < minimum:
        why = f"{{value_zero,{value}}}"
    else:
        return value
    raise _invalid_arg(queue, vhost, name, why)


#: The values of ``x-queue-leader-locator`` (RabbitMQ 4.0 takes the last two as aliases).
LEADER_LOCATORS = frozenset({"client-local", "balanced", "random", "least-leaders"})
#: Quorum-queue and stream arguments a classic queue refuses after the values are checked
#: (RabbitMQ 3.10.8). ``x-delivery-limit`` is one only over AMQP 0-9-1
#: (``refuse_delivery_limit``): the 0-9 rule basic.deliver:01 takes it on any queue.
_OTHER_TYPES_ARGS = frozenset(
    {
        "x-dead-letter-strategy",
        "x-quorum-initial-group-size",
        "x-max-age",
        "x-stream-max-segment-size-bytes",
        "x-initial-cluster-size",
    }
)


def refuse_delivery_limit(queue: str, vhost: str, arguments: dict[str, Any]) -> None:
    """A classic queue declared over AMQP 0-9-1 refuses ``x-delivery-limit`` whatever its
    value, as RabbitMQ 3.10 does (406, its text)."""
    if "x-delivery-limit" in arguments:
        raise errors.PreconditionFailed(
            f"PRECONDITION_FAILED - invalid arg 'x-delivery-limit' for queue '{queue}' in "
            f"vhost '{vhost}' of queue type {Queue.rabbit_type}"
        )


class QueueSettings:
    """The ``x-`` arguments of a queue, validated."""

    __slots__ = (
        "message_ttl",
        "expires",
        "max_length",
        "max_length_bytes",
        "overflow",
        "dead_letter_exchange",
        "dead_letter_routing_key",
        "max_priority",
        "single_active_consumer",
        "delivery_limit",
    )

    def __init__(self, queue: str, vhost: str, args: dict[str, Any]) -> None:
        self.message_ttl = int_arg(queue, vhost, args, "x-message-ttl", 0)
        self.expires = int_arg(queue, vhost, args, "x-expires", 1)
        self.max_length = int_arg(queue, vhost, args, "x-max-length", 0)
        self.max_length_bytes = int_arg(queue, vhost, args, "x-max-length-bytes", 0)
        self.max_priority = int_arg(queue, vhost, args, "x-max-priority", 0)
        if self.max_priority is not None:
            self.max_priority = min(self.max_priority, _MAX_PRIORITY_LIMIT)
        overflow = args.get("x-overflow", "drop-head")
        if overflow not in OVERFLOW_MODES:
            raise _invalid_arg(queue, vhost, "x-overflow", "invalid_overflow")
        self.overflow: str = overflow
        sac = args.get("x-single-active-consumer", False)
        if not isinstance(sac, bool):
            why = f"{{unacceptable_type,{amqp_type_name(sac)}}}"
            raise _invalid_arg(queue, vhost, "x-single-active-consumer", why)
        self.single_active_consumer = sac
        dlx = args.get("x-dead-letter-exchange")
        self.dead_letter_exchange: str | None = dlx if isinstance(dlx, str) else None
        dlk = args.get("x-dead-letter-routing-key")
        if dlk is not None and dlx is None:
            raise _invalid_arg(
                queue, vhost, "x-dead-letter-routing-key", "routing_key_but_no_dlx_defined"
            )
        self.dead_letter_routing_key: str | None = dlk if isinstance(dlk, str) else None
        #: RabbitMQ's quorum-queue argument, here on any queue: how many times a message may
        #: come back unacknowledged before it is dead-lettered (reason ``delivery_limit``).
        self.delivery_limit = int_arg(queue, vhost, args, "x-delivery-limit", 0)
        # Where a queue's leader goes in a cluster: checked on every queue type in
        # RabbitMQ 4.0 (3.10 refused it on classic queues); one node has nothing to place.
        locator = args.get("x-queue-leader-locator", "client-local")
        if not isinstance(locator, str):
            why = f"{{unacceptable_type,{amqp_type_name(locator)}}}"
            raise _invalid_arg(queue, vhost, "x-queue-leader-locator", why)
        if locator not in LEADER_LOCATORS:
            raise _invalid_arg(queue, vhost, "x-queue-leader-locator", "invalid_queue_locator_arg")


class Queue:
    """A classic queue. ``owner`` is the connection of an exclusive queue, else None."""

    type_name = "classic"
    #: The type as RabbitMQ names it in its reply texts.
    rabbit_type = "rabbit_classic_queue"
    #: True for a queue type that buffers publishes until ``flush`` (the channel flushes
    #: such queues before it confirms their publishes).
    buffers_publishes = False
    #: True for a queue type whose durable queues keep transient messages across a restart
    #: too (a store journals every message routed to them, whatever its delivery mode).
    persists_all_messages = False
    #: basic.consume arguments this queue type refuses (406, RabbitMQ's text).
    refused_consume_args: tuple[str, ...] = ("x-stream-offset",)
    #: Arguments of this type compared on redeclaration, besides the common ones.
    equivalent_type_args: tuple[str, ...] = ()
    #: The policy and operator policy applied to it (``policies.Policy``s, set by
    #: ``Policies.apply_to_queue`` when it is declared and when a policy changes).
    policy: Any = None
    operator_policy: Any = None

    def __init__(
        self,
        context: QueueContext,
        name: str,
        *,
        durable: bool = False,
        owner: object | None = None,
        auto_delete: bool = False,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        self.context = context
        self.name = name
        self.durable = durable
        self.owner = owner
        self.auto_delete = auto_delete
        self.arguments = dict(arguments or {})
        self.settings = self._checked_settings(self.arguments)
        self.ready = ReadyMessages(
            (self.settings.max_priority or 0) + 1, context.memory, context.store.spill_fifo
        )
        #: The store's id of a durable queue whose messages it journals (0: none).
        self.queue_id = 0
        self.ready_bytes = 0
        self.unacked = 0
        #: Entries taken with an unacknowledged get whose ack, nack, reject or return has
        #: not come yet (kept by the channels that hold them; see ``consumer_count``).
        self.gets_unsettled = 0
        self.consumers: list[Consumer] = []
        self.stats = MessageStats()
        self.deleted = False
        self._rr = 0
        self._dispatching = False
        self._had_consumers = False
        self._uniform_priority = True
        self._expiry_timer: TimerHandle | None = None
        self._expiry_at: float | None = None
        self._unused_timer: TimerHandle | None = None
        self.touch()

    def __repr__(self) -> str:
        return f"<queue {self.name!r}>"

    def _checked_settings(self, arguments: dict[str, Any]) -> QueueSettings:
        """The declaration validated (a queue type may check more than the arguments), as
        the settings the queue runs with; ``arguments``: the declared ones, or those
        policies make of them (``apply_arguments``)."""
        settings = QueueSettings(self.name, self.context.vhost, arguments)
        for name in arguments:
            if name in _OTHER_TYPES_ARGS:
                raise errors.PreconditionFailed(
                    f"PRECONDITION_FAILED - invalid arg '{name}' for queue '{self.name}' in "
                    f"vhost '{self.context.vhost}' of queue type {self.rabbit_type}"
                )
        return settings

    def apply_arguments(self, arguments: dict[str, Any]) -> None:
        """Run from now on with ``arguments`` (the declared ones as the effective policy
        makes them): new limits apply at once (a lower ``max-length`` drops or dead-letters
        the oldest, as a publish would), a new ``expires`` restarts its countdown; messages
        already queued keep the expiry they got."""
        self.settings = self._checked_settings(arguments)
        self.touch()
        if self.settings.overflow in _DROPPING_MODES:
            self._drop_over_limit()

    def _drop_over_limit(self) -> None:
        """Past a limit, let the oldest (drop-head) or the lowest priority go, as ``maxlen``."""
        ready = self.ready
        take = ready.popleft if self.settings.overflow == "drop-head" else ready.pop_lowest
        while ready and self._full():
            self._drop(take(), "maxlen")

    @property
    def exclusive(self) -> bool:
        return self.owner is not None

    @property
    def message_count(self) -> int:
        return len(self.ready)

    @property
    def consumer_count(self) -> int:
        """The consumer count queue.declare-ok reports: the queue's consumers."""
        return len(self.consumers)

    @property
    def counts_deliveries(self) -> bool:
        """True when deliveries show ``x-delivery-count`` (a store then keeps each message's
        count across restarts; a classic queue records only how far it delivered)."""
        return self.settings.delivery_limit is not None

    # -- publishing ---------------------------------------------------------------------------

    def publish(self, message: Message) -> bool:
        """Enqueue a routed message; False when overflow refuses it (reject-publish)."""
        s = self.settings
        if s.overflow not in _DROPPING_MODES and self._full(len(message.body)):
            self.context.store.message_removed(self, message)
            if s.overflow == "reject-publish-dlx":
                self.dead_letter(message, "maxlen")
            return False
        ttl = self._ttl(message)
        self._append(message, ttl)
        if s.overflow in _DROPPING_MODES:
            self._drop_over_limit()
        if self.consumers:
            self.dispatch()
        if ttl is not None:
            self.expire()
        return True

    def _append(
        self,
        message: Message,
        ttl: int | None,
        redelivered: bool = False,
        age: float = 0.0,
        delivery_count: int = 0,
    ) -> None:
        entry = QueuedMessage(
            message, None if ttl is None else self.context.clock.time() + ttl / 1000 - age
        )
        entry.redelivered = redelivered
        entry.delivery_count = delivery_count
        self._add_ready_bytes(entry.size)
        self.ready.append(entry)

    def restore(
        self,
        message: Message,
        age: float = 0.0,
        *,
        redelivered: bool = True,
        delivery_count: int = 0,
    ) -> None:
        """Put back a message the store recovered at startup: ``redelivered`` if it may have
        been delivered before the restart; ``delivery_count``, the times it was delivered,
        is its ``x-delivery-count`` on a queue that counts deliveries (the restart returned
        the last one, as a RabbitMQ quorum queue counts it). ``age``: seconds since it was
        published; its TTL counts from then, as RabbitMQ's does across restarts."""
        self._append(message, self._ttl(message), redelivered, age, delivery_count)

    def _ttl(self, message: Message) -> int | None:
        """The message's TTL in ms: the lower of its expiration and the queue's x-message-ttl."""
        ttl, queue_ttl = message.ttl, self.settings.message_ttl
        if queue_ttl is not None and (ttl is None or queue_ttl < ttl):
            return queue_ttl
        return ttl

    def flush(self) -> None:
        """Make buffered publishes visible (``buffers_publishes`` types only)."""

    def _full(self, incoming: int | None = None) -> bool:
        """Past ``x-max-length`` or ``x-max-length-bytes`` with the message of ``incoming``
        body bytes added (None: with none added). An empty body still counts as a message."""
        s = self.settings
        n = len(self.ready) + (0 if incoming is None else 1)
        incoming = incoming or 0
        if s.max_length is not None and n > s.max_length:
            return True
        return s.max_length_bytes is not None and self.ready_bytes + incoming > s.max_length_bytes

    def _add_ready_bytes(self, n: int) -> None:
        self.ready_bytes += n
        self.context.memory.add(n)

    def _take(self, entry: QueuedMessage) -> None:
        """Bookkeeping for an entry leaving the ready list."""
        self.ready_bytes -= entry.size

    def _forget(self, entry: QueuedMessage) -> None:
        """The entry is gone for good (acked, dropped, dead-lettered)."""
        self.context.memory.sub(entry.size)
        self.context.store.message_removed(self, entry.message)

    def dead_letter(self, message: Message, reason: str) -> None:
        """Let ``message`` go for ``reason`` (an ``x-death`` reason) to the dead-letter
        exchange (rule basic.deliver:01 and the x- arguments), as the context routes it."""
        self.context.dead_letter(self, message, reason)

    def _drop(self, entry: QueuedMessage, reason: str) -> None:
        self._take(entry)
        self._forget(entry)
        self.dead_letter(entry.message, reason)

    # -- expiry -------------------------------------------------------------------------------

    def expire(self) -> None:
        """Dead-letter expired messages at the head; arm a timer for the next expiry."""
        now = self.context.clock.time()
        ready = self.ready
        head = ready.peek()
        while head is not None and head.expires_at is not None and head.expires_at <= now:
            self._drop(ready.popleft(), "expired")
            head = ready.peek()
        if head is not None and head.expires_at is not None:
            self._arm_expiry(head.expires_at, now)

    def _arm_expiry(self, at: float, now: float) -> None:
        if self._expiry_timer is not None:
            if self._expiry_at is not None and self._expiry_at <= at:
                return
            self._expiry_timer.cancel()
        self._expiry_at = at
        self._expiry_timer = self.context.clock.call_later(max(0.0, at - now), self._on_expiry)

    def _on_expiry(self) -> None:
        self._expiry_timer = self._expiry_at = None
        if not self.deleted:
            self.expire()

    # -- consumers and delivery ---------------------------------------------------------------

    def add_consumer(self, consumer: Consumer, arguments: dict[str, Any] | None = None) -> None:
        """Register a consumer (the caller dispatches once it has sent consume-ok);
        ``arguments`` are basic.consume's (a stream reads its ``x-stream-offset``)."""
        for name in self.refused_consume_args:
            if name in (arguments or {}):
                raise errors.PreconditionFailed(
                    f"PRECONDITION_FAILED - invalid arg '{name}' for queue '{self.name}' in "
                    f"vhost '{self.context.vhost}' of queue type {self.rabbit_type}"
                )
        if any(c.exclusive for c in self.consumers) or (consumer.exclusive and self.consumers):
            raise errors.AccessRefused(
                f"ACCESS_REFUSED - queue '{self.name}' in vhost '{self.context.vhost}' "
                "in exclusive use"
            )
        self.consumers.append(consumer)
        self._had_consumers = True
        self._uniform_priority = len({c.priority for c in self.consumers}) == 1
        self.touch()

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            self._uniform_priority = len({c.priority for c in self.consumers}) <= 1
        if self.deleted:
            return
        if not self.consumers and self.auto_delete and self._had_consumers:
            self.context.unused(self)
            return
        self.touch()
        self.dispatch()

    def _next_consumer(self) -> Consumer | None:
        consumers = self.consumers
        n = len(consumers)
        if not n:
            return None
        if self.settings.single_active_consumer:
            first = consumers[0]
            return first if first.sink.can_deliver(first) else None
        start = self._rr % n
        uniform = self._uniform_priority
        best: Consumer | None = None
        best_i = 0
        for k in range(n):
            i = (start + k) % n
            c = consumers[i]
            if (best is None or c.priority > best.priority) and c.sink.can_deliver(c):
                best, best_i = c, i
                if uniform:
                    break
        self._rr = best_i + 1
        return best

    def dispatch(self) -> None:
        """Deliver what consumers can take now (not re-entered from a delivery)."""
        if self._dispatching or self.deleted:
            return
        self._dispatching = True
        try:
            self._deliver()
        finally:
            self._dispatching = False

    def _deliver(self) -> None:
        """Ready messages to the consumers that can take them, round robin. The journaled
        ones left unacknowledged are recorded as delivered once the loop is done: their
        frames leave later in this event-loop turn."""
        ready = self.ready
        now = self.context.clock.time()
        journaled: list[int] | None = [] if self.queue_id else None
        while ready:
            consumer = self._next_consumer()
            if consumer is None:
                break
            entry = ready.popleft()
            self._take(entry)
            if entry.expires_at is not None and entry.expires_at <= now:
                self._forget(entry)
                self.dead_letter(entry.message, "expired")
                continue
            if consumer.no_ack:
                self._forget(entry)
            else:
                self.unacked += 1
                if journaled is not None and entry.message.msg_id:
                    journaled.append(entry.message.msg_id)
            consumer.sink.deliver(consumer, self, entry)
        if journaled:
            self.context.store.messages_delivered(self, journaled)

    def as_delivered(self, entry: QueuedMessage, *, fetched: bool = False) -> Message:
        """``entry``'s message as a delivery (or, ``fetched``, a basic.get-ok) shows it.
        With ``x-delivery-limit``, as on a RabbitMQ quorum queue, it carries
        ``x-delivery-count``: the times it came back so far (0 on the first delivery)."""
        if self.settings.delivery_limit is None:
            return entry.message
        return with_headers(entry.message, {"x-delivery-count": entry.delivery_count})

    def get(self) -> QueuedMessage | None:
        """basic.get: the head message (the caller settles it unless no-ack) or None."""
        self.touch()
        self.expire()
        if not self.ready:
            return None
        entry = self.ready.popleft()
        self._take(entry)
        self.unacked += 1
        if self.queue_id and entry.message.msg_id:
            self.context.store.messages_delivered(self, [entry.message.msg_id])
        return entry

    # -- settlement ---------------------------------------------------------------------------

    def settle(self, entry: QueuedMessage) -> None:
        """An unacknowledged entry was acked (or taken with no-ack after get)."""
        self.unacked -= 1
        self._forget(entry)

    def requeue(self, entries: list[QueuedMessage]) -> None:
        """Put unacknowledged entries back in their original places, marked redelivered
        (basic.nack, basic.reject, basic.recover): see ``ReadyMessages.put_back_in_place``."""
        if self.deleted:
            for entry in entries:
                self._forget(entry)
            return
        back = [entry for entry in entries if self.returned(entry)]
        for entry in back:
            entry.redelivered = True
            self.ready_bytes += entry.size
        self.unacked -= len(back)
        self._place_back(back)
        self.dispatch()

    def _place_back(self, entries: list[QueuedMessage]) -> None:
        """Where requeued entries go: their original places (a queue type may differ)."""
        self.ready.put_back_in_place(entries)

    def return_unacked(self, entries: list[QueuedMessage]) -> None:
        """A closing channel hands back its unacknowledged entries: requeued."""
        self.requeue(entries)

    def returned(self, entry: QueuedMessage) -> bool:
        """An unacknowledged entry comes back (requeued, or its channel closed). With
        ``x-delivery-limit`` it is counted (rule basic.deliver:01), and once it came back
        more times than the limit it is dead-lettered, reason ``delivery_limit``, as on a
        RabbitMQ quorum queue: False then, and the entry is gone."""
        if self.settings.delivery_limit is None:
            return True
        entry.delivery_count += 1
        if not self.past_delivery_limit(entry.delivery_count):
            return True
        self._let_go(entry, "delivery_limit")
        return False

    def past_delivery_limit(self, delivery_count: int) -> bool:
        """Whether a message that came back ``delivery_count`` times is past
        ``x-delivery-limit``: dead-lettered (reason ``delivery_limit``), not delivered again."""
        limit = self.settings.delivery_limit
        return limit is not None and delivery_count > limit

    def reject(self, entry: QueuedMessage) -> None:
        """Rejected without requeue: discarded or dead-lettered."""
        self._let_go(entry, "rejected")

    def _let_go(self, entry: QueuedMessage, reason: str) -> None:
        """An unacknowledged entry leaves for good: discarded or dead-lettered."""
        self.unacked -= 1
        self._forget(entry)
        if not self.deleted:
            self.dead_letter(entry.message, reason)

    # -- life cycle ---------------------------------------------------------------------------

    def check_delete(self, *, if_unused: bool, if_empty: bool) -> None:
        """queue.delete with these flags: a queue type that cannot honour one raises."""

    def purge(self) -> int:
        entries = self.ready.clear()
        for entry in entries:
            self._take(entry)
            self._forget(entry)
        return len(entries)

    def touch(self) -> None:
        """The queue was used: restart its x-expires countdown (if it has one)."""
        expires = self.settings.expires
        if expires is None or self.deleted:
            return
        if self._unused_timer is not None:
            self._unused_timer.cancel()
            self._unused_timer = None
        if not self.consumers:
            self._unused_timer = self.context.clock.call_later(expires / 1000, self._on_unused)

    def _on_unused(self) -> None:
        self._unused_timer = None
        if not self.deleted and not self.consumers:
            self.context.unused(self)

    def destroy(self) -> list[Consumer]:
        """Called by the virtual host on delete: drop everything; returns the consumers."""
        self.purge()
        self.ready.close()
        self.deleted = True
        for timer in (self._expiry_timer, self._unused_timer):
            if timer is not None:
                timer.cancel()
        consumers, self.consumers = self.consumers, []
        return consumers
