"""A classic queue: its consumers, what it asks of the broker around it, and the rules that
drop, expire or dead-letter messages. Its ready messages are kept by ``ready_messages``, its
arguments checked by ``queue_arguments``.

The queue is the single owner of its messages (RabbitMQ's idea): channels hold delivered,
unacknowledged entries only by reference and hand them back with ``settle``, ``requeue``
or ``reject``. Delivery is push: whenever something changes that may let a message move
(a publish, an ack freeing prefetch, a new consumer, a writable socket), ``dispatch`` gives
ready messages to consumers that the sink says can take one, round robin within the highest
consumer priority.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from amqp_protocol import errors

from .clock import Clock, TimerHandle
from .memory import MemoryGauge
from .message import Message, QueuedMessage, with_headers
from .queue_arguments import QueueSettings
from .ready_messages import ReadyMessages, SpillQueue
from .stats import MessageStats

_DROPPING_MODES = ("drop-head", "drop-lowest-priority")


class DeliverySink(Protocol):
    """Where a consumer's deliveries go (a channel)."""

    def can_deliver(self, consumer: Consumer) -> bool: ...

    def deliver(self, consumer: Consumer, queue: Queue, entry: QueuedMessage) -> None: ...

    def consumer_cancelled(self, consumer: Consumer) -> None:
        """The queue went away under the consumer (the server-sent basic.cancel)."""
        ...


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
        if s.overflow in _DROPPING_MODES and self._full():  # a publish rarely overflows
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

    def _consumers_in_turn(self) -> Iterator[Consumer]:
        """The consumers to deliver to, one per ready message, in ``_next_consumer``'s
        order. Within one delivery loop a consumer that cannot take a message (at its
        prefetch, its channel's, or its connection's output full) stays so: deliveries only
        add to what it holds, and acks come in later events. So with one priority and no
        single active consumer it is asked once per loop and then passed over, instead of
        once per message: the source's growing window holds several consumers, most of them
        at their prefetch, and asking each one per message cost the broker ~10% per message
        (``benchmarks/consume_pattern.py``, shape 9)."""
        consumers = self.consumers
        n = len(consumers)
        if n and self._uniform_priority and not self.settings.single_active_consumer:
            live = list(range(n))  #: indices of the consumers not yet found full, in order
            j = self._rr % n
            while live and len(consumers) == n:
                i = live[j]
                candidate = consumers[i]
                if candidate.sink.can_deliver(candidate):
                    self._rr = i + 1
                    yield candidate
                    j += 1
                else:
                    del live[j]
                if j >= len(live):
                    j = 0
            if len(consumers) == n:
                return  # every consumer is full
        # A single active consumer, several priorities, or a consumer came or went meanwhile.
        while (consumer := self._next_consumer()) is not None:
            yield consumer

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
        turns = self._consumers_in_turn()
        while ready:
            consumer = next(turns, None)
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
