"""A quorum queue (``x-queue-type=quorum``) as a one-node RabbitMQ 4.0 shows one to clients.

It is a classic ``Queue`` run with other rules, measured on RabbitMQ 3.10.8 and, where 4.0
differs (docs/rabbitmq-4-differences.md), on 4.0.5:

- declaration: durable only, never exclusive, auto-delete or server-named; the classic-only
  arguments (``x-max-priority``, ``x-queue-mode``, ...) and the stream ones are refused;
  ``x-overflow=reject-publish-dlx`` is taken as ``drop-head``;
- every message is kept across a restart, transient ones too (the Raft log keeps them all);
- every return counts: deliveries (basic.get-ok too) carry ``x-delivery-count`` once a
  message came back, and past ``x-delivery-limit`` returns (20 when the argument is absent;
  none when it is negative or not a number) the message is dead-lettered (reason
  ``delivery_limit``);
- what comes back (basic.nack, basic.reject, basic.recover, a closing channel) goes ahead of
  every message never delivered, behind those that came back before it and wait to be
  delivered again: returns are served first, in the order they came back;
- queue.declare-ok counts each unsettled basic.get as a consumer, and a cancelled consumer
  until its last delivery is settled, but not the consumers waiting to be the single
  active one;
- ``reject-publish`` is a soft limit: the publish that takes the queue past its limit is
  accepted, the following ones are refused until the ready messages fall to 80% of it;
- global qos, the ``x-cancel-on-ha-failover`` and ``x-stream-offset`` consumer arguments,
  and queue.delete with if-unused or if-empty are refused; exclusive consume is ignored.
"""

from __future__ import annotations

import math
from typing import Any

from amqp_protocol import errors
from amqp_protocol.values import Long

from .message import Message, QueuedMessage, with_headers
from .queue_arguments import QueueSettings, int_arg
from .queues import Consumer, Queue

#: Known queue arguments a quorum queue refuses (classic-only and stream arguments).
_REFUSED_ARGS = frozenset(
    {
        "x-max-priority",
        "x-queue-mode",
        "x-queue-master-locator",
        "x-queue-version",
        "x-max-age",
        "x-stream-max-segment-size-bytes",
        "x-initial-cluster-size",
    }
)
#: Quorum arguments with a fixed set of values, and the error term RabbitMQ names otherwise.
_CHOICES = {
    "x-dead-letter-strategy": ({"at-most-once", "at-least-once"}, "invalid_dlx_strategy"),
}
#: Ready messages (and bytes) a reject-publish queue must fall to before it takes publishes
#: again, as a fraction of its limits (RabbitMQ's soft limit).
_UNBLOCK_AT = 0.8


#: The delivery limit of a quorum queue declared without ``x-delivery-limit`` (RabbitMQ 4.0).
DEFAULT_DELIVERY_LIMIT = 20


def _delivery_limit(arguments: dict[str, Any]) -> int | None:
    """``x-delivery-limit`` as RabbitMQ 4.0 applies it: not validated at declaration; 20 when
    absent; a number limits, unless it is negative (-1 is the documented way to set no
    limit); anything else sets no limit."""
    if "x-delivery-limit" not in arguments:
        return DEFAULT_DELIVERY_LIMIT
    value = arguments["x-delivery-limit"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return math.floor(value)


def _below(limit: int | None, value: int) -> bool:
    return limit is None or value <= math.trunc(limit * _UNBLOCK_AT)


class QuorumQueue(Queue):
    """The factory registered as queue type ``quorum``."""

    type_name = "quorum"
    rabbit_type = "rabbit_quorum_queue"
    persists_all_messages = True
    refused_consume_args = ("x-stream-offset", "x-cancel-on-ha-failover")
    equivalent_type_args = (
        "x-delivery-limit",
        "x-dead-letter-strategy",
        "x-quorum-initial-group-size",
        "x-max-in-memory-length",
        "x-max-in-memory-bytes",
    )

    #: True while a reject-publish queue refuses publishes (it went past its limit).
    _rejecting = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Consumers cancelled while deliveries of theirs were unacknowledged; those that
        #: have settled them all since are dropped at the next cancel or count.
        self._cancelled: list[Consumer] = []

    @property
    def consumer_count(self) -> int:
        """RabbitMQ 3.10.8 counts every unsettled basic.get as a consumer of a quorum
        queue until its message is acked, requeued, rejected or its channel closes: two
        held on one channel count 2, a no-ack get none. A cancelled consumer counts until
        its last delivery is settled (acked, requeued, rejected or returned by its closing
        channel), as one with a consumer of the same tag on the same channel: RabbitMQ
        keys a quorum queue's consumers by channel and tag. With a single active consumer,
        the waiting ones do not count."""
        consumers = self.consumers
        live = {(c.sink, c.tag) for c in consumers}
        held = {(c.sink, c.tag) for c in self._still_holding()} - live
        counted = min(len(consumers), 1) if self.settings.single_active_consumer else len(consumers)
        return counted + len(held) + self.gets_unsettled

    @property
    def counts_deliveries(self) -> bool:
        """Every return counts, with or without ``x-delivery-limit``."""
        return True

    @property
    def _where(self) -> str:
        return f"queue '{self.name}' in vhost '{self.context.vhost}'"

    def _checked_settings(self, arguments: dict[str, Any]) -> QueueSettings:
        """RabbitMQ's order: the name, argument values, arguments of other types, then the
        properties."""
        # The virtual host has already refused user-chosen "amq." names: this one is generated.
        if self.name.startswith("amq.gen-"):
            raise errors.PreconditionFailed(
                "PRECONDITION_FAILED - Cannot declare a server-named queue for type "
                f"{self.rabbit_type}"
            )
        args = arguments
        where = f"for {self._where}"
        own = {k: v for k, v in args.items() if k not in ("x-delivery-limit", "x-max-priority")}
        settings = QueueSettings(self.name, self.context.vhost, own)
        for name in args:
            if name in _REFUSED_ARGS:
                raise errors.PreconditionFailed(
                    f"PRECONDITION_FAILED - invalid arg '{name}' {where} of queue type "
                    f"{self.rabbit_type}"
                )
        for name, (allowed, term) in _CHOICES.items():
            if name in args and args[name] not in allowed:
                raise errors.PreconditionFailed(
                    f"PRECONDITION_FAILED - invalid arg '{name}' {where}: {term}"
                )
        int_arg(self.name, self.context.vhost, args, "x-quorum-initial-group-size", 1)
        for name in ("x-max-in-memory-length", "x-max-in-memory-bytes"):
            int_arg(self.name, self.context.vhost, args, name, 0)
        for refused, prop in (
            (self.auto_delete, "auto-delete"),
            (self.owner is not None, "exclusive-owner"),
            (not self.durable, "non-durable"),
        ):
            if refused:
                raise errors.PreconditionFailed(
                    f"PRECONDITION_FAILED - invalid property '{prop}' {where}"
                )
        settings.delivery_limit = _delivery_limit(args)
        if settings.overflow == "reject-publish-dlx":
            settings.overflow = "drop-head"
        return settings

    # -- publishing: reject-publish as a soft limit -------------------------------------------

    def publish(self, message: Message) -> bool:
        accepted = super().publish(message)
        self._check_limit()
        return accepted

    def _full(self, incoming: int | None = None) -> bool:
        if self.settings.overflow == "reject-publish":
            return self._rejecting
        return super()._full(incoming)

    def _check_limit(self) -> None:
        """Past its limits (more than them ready), a reject-publish queue refuses publishes."""
        if self.settings.overflow == "reject-publish" and super()._full():
            self._rejecting = True

    def _take(self, entry: QueuedMessage) -> None:
        super()._take(entry)
        s = self.settings
        if self._rejecting and _below(s.max_length, len(self.ready)):
            self._rejecting = not _below(s.max_length_bytes, self.ready_bytes)

    # -- consumers and deliveries -------------------------------------------------------------

    def add_consumer(self, consumer: Consumer, arguments: dict[str, Any] | None = None) -> None:
        """Refuses global qos; an exclusive consumer is an ordinary one (RabbitMQ 3.10's
        quorum queues ignore the flag)."""
        # The channel-wide (global) prefetch lives on the channel, the consumer's sink.
        if getattr(consumer.sink, "channel_prefetch", 0):
            raise errors.NotImplemented_(
                f"NOT_IMPLEMENTED - {self._where} does not support global qos"
            )
        consumer.exclusive = False
        super().add_consumer(consumer, arguments)

    def remove_consumer(self, consumer: Consumer) -> None:
        """A consumer cancelled with unacknowledged deliveries is kept for
        ``consumer_count``, which reads their number then: settling them costs nothing
        more."""
        if consumer.unacked and consumer in self.consumers:
            self._cancelled = [*self._still_holding(), consumer]
        super().remove_consumer(consumer)

    def _still_holding(self) -> list[Consumer]:
        """The cancelled consumers with deliveries unsettled (the others are let go)."""
        self._cancelled = [c for c in self._cancelled if c.unacked]
        return self._cancelled

    def as_delivered(self, entry: QueuedMessage, *, fetched: bool = False) -> Message:
        """With ``x-delivery-count`` once the message came back, fetched or not (RabbitMQ 3.10
        gave every basic.get-ok one, 0 at first)."""
        if entry.delivery_count:
            return with_headers(entry.message, {"x-delivery-count": Long(entry.delivery_count)})
        return entry.message

    # -- returns ------------------------------------------------------------------------------

    def returned(self, entry: QueuedMessage) -> bool:
        """Every return counts, with or without ``x-delivery-limit``."""
        if self.settings.delivery_limit is None:
            entry.delivery_count += 1
            return True
        return super().returned(entry)

    def requeue(self, entries: list[QueuedMessage]) -> None:
        """What comes back (basic.nack, basic.reject, basic.recover, a closing channel) may
        take a reject-publish queue past its limit."""
        super().requeue(entries)
        self._check_limit()

    def _place_back(self, entries: list[QueuedMessage]) -> None:
        """Ahead of every message never delivered, behind those that came back earlier and
        wait to be delivered again, as on RabbitMQ 4.0 (3.10 put a nack, reject or recover
        at the back; a classic queue puts them back in their original places)."""
        self.ready.put_back_behind_returns(entries)

    def check_delete(self, *, if_unused: bool, if_empty: bool) -> None:
        for flag, name in ((if_unused, "if-unused"), (if_empty, "if-empty")):
            if flag:
                raise errors.NotImplemented_(
                    f"NOT_IMPLEMENTED - cannot delete {self._where}. queue.delete operations "
                    f"with {name} flag set are not supported by quorum queues"
                )
