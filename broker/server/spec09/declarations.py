"""0-9's rules for declaring, deleting and binding exchanges and queues where they differ
from RabbitMQ's 0-9-1 behaviour, which the core handlers follow:

- redeclaring an existing exchange ignores durable and auto-delete, redeclaring an existing queue
  ignores durable and auto-delete (exchange.declare.auto-delete:sticky,
  queue.declare.durable:pre-existence, queue.declare.auto-delete:pre-existence);
- queue.declare-ok, queue.purge-ok and queue.delete-ok count the messages (and consumers)
  of every content class, not only basic; purging and deleting a queue purge and delete its
  lanes too, and deleting it cancels their consumers;
- deleting an exchange or a queue that does not exist is a 404 channel error
  (exchange.delete.exchange:exists, queue.delete.queue:02);
- rule queue.delete:01 ("The server SHOULD use a dead-letter queue to hold messages that were
  pending on a deleted queue"): a queue deleted by queue.delete sends its pending basic, file
  and message-class messages to its ``x-dead-letter-exchange`` (``x-death`` reason
  ``queue_deleted``, our extension; see ``VirtualHost.delete_queue``), where RabbitMQ, and so
  this broker for 0-9-1 clients, drops them. Stream content is dropped: the stream class is
  "unacknowledged and unreliable" and never kept. A queue that goes by itself (auto-delete,
  ``x-expires``, its exclusive owner closing) drops its messages as RabbitMQ does whatever
  its clients speak: the rule belongs to queue.delete, and such a queue has no deleting
  method whose version could decide (its last consumer may be a 0-9-1 client);
- a failed queue.bind or queue.unbind is a connection exception (queue.bind:failure,
  queue.unbind:01); binding a durable queue to a transient exchange, or any queue to an
  internal exchange, is refused with 530 (queue.bind:transient-exchange,
  queue.bind:internal-exchange).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from amqp_protocol import errors
from amqp_protocol.generated.any_version import (
    ExchangeDeclare,
    ExchangeDelete,
    QueueBind,
    QueueDeclare,
    QueueDelete,
    QueuePurge,
    QueueUnbind,
)

from .consumers import named_queue
from .lanes import lane_totals

if TYPE_CHECKING:
    from ..abc import Channel

Handler = Callable[["Channel", Any], None]


def exchange_declare(_core: Handler) -> Handler:
    """Replaces the core handler: redeclaring keeps the exchange's durable and auto-delete
    (exchange.declare.durable:sticky, exchange.declare.auto-delete:sticky)."""

    def run(ch: Channel, m: ExchangeDeclare) -> None:
        existing = ch.vhost.exchanges.get(m.exchange)
        durable, auto_delete = m.durable, m.auto_delete
        if existing is not None and not m.passive:
            durable, auto_delete = existing.durable, existing.auto_delete
        ch.declare_exchange(m, durable=durable, auto_delete=auto_delete)

    return run


def queue_declare(_core: Handler) -> Handler:
    """Replaces the core handler: redeclaring keeps the queue's durable and auto-delete;
    declare-ok counts the lanes too."""

    def run(ch: Channel, m: QueueDeclare) -> None:
        existing = ch.vhost.queues.get(m.queue) if m.queue else None
        if existing is not None and not m.passive:
            durable, auto_delete = existing.durable, existing.auto_delete
        else:
            durable, auto_delete = m.durable, m.auto_delete
        queue = ch.declare_queue(m, durable=durable, auto_delete=auto_delete)
        if not m.no_wait:
            messages, consumers = lane_totals(ch.vhost, queue)
            ch.send(
                ch.conn.spec.method("queue.declare-ok")(
                    queue=queue.name, message_count=messages, consumer_count=consumers
                )
            )

    return run


def queue_purge(_core: Handler) -> Handler:
    """Replaces the core handler: the lanes are purged and counted too."""

    def run(ch: Channel, m: QueuePurge) -> None:
        queue = ch.queue_named(m.queue)
        lanes = ch.vhost.lanes_of(queue)
        count = queue.message_count + sum(queue_lane.purge() for queue_lane in lanes)
        queue.purge()
        if not m.no_wait:
            ch.send(ch.conn.spec.method("queue.purge-ok")(message_count=count))

    return run


def exchange_delete(core: Handler) -> Handler:
    def run(ch: Channel, m: ExchangeDelete) -> None:
        if m.exchange and m.exchange not in ch.vhost.exchanges:
            raise errors.NotFound(f"NOT_FOUND - no exchange '{m.exchange}'")
        core(ch, m)

    return run


def queue_delete(_core: Handler) -> Handler:
    """Replaces the core handler: the queue's pending messages (of every content class) go to
    its dead-letter exchange instead of being dropped (rule queue.delete:01)."""

    def run(ch: Channel, m: QueueDelete) -> None:
        name = m.queue or ch.last_queue or ""
        if name not in ch.vhost.queues:
            raise errors.NotFound(f"NOT_FOUND - no queue '{name}'")
        queue = ch.queue_named(name)
        messages, consumers = lane_totals(ch.vhost, queue)
        if m.if_unused and consumers:
            raise errors.PreconditionFailed(f"PRECONDITION_FAILED - queue '{name}' in use")
        if m.if_empty and messages:
            raise errors.PreconditionFailed(f"PRECONDITION_FAILED - queue '{name}' not empty")
        ch.vhost.delete_queue(queue, dead_letter_pending=True)  # the lanes and consumers too
        if not m.no_wait:
            ch.send(ch.conn.spec.method("queue.delete-ok")(message_count=messages))

    return run


def _as_connection_exception(err: errors.AMQPError) -> errors.AMQPError:
    """0-9 has no channel-level bind failures: the same reply, closing the connection."""
    if err.hard:
        return err
    return errors.AMQPError(err.reply_text, reply_code=err.reply_code)


def queue_bind(core: Handler) -> Handler:
    def run(ch: Channel, m: QueueBind) -> None:
        try:
            queue = named_queue(ch, m.queue)
            exchange = ch.vhost.exchange(m.exchange)
            if exchange.internal:
                raise errors.NotAllowed(
                    f"NOT_ALLOWED - cannot bind to internal exchange '{m.exchange}'"
                )
            if queue.durable and not exchange.durable:
                raise errors.NotAllowed(
                    f"NOT_ALLOWED - durable queue '{queue.name}' cannot bind to "
                    f"transient exchange '{m.exchange}'"
                )
            core(ch, m)
        except errors.AMQPError as err:
            raise _as_connection_exception(err) from err

    return run


def queue_unbind(core: Handler) -> Handler:
    def run(ch: Channel, m: QueueUnbind) -> None:
        try:
            core(ch, m)
        except errors.AMQPError as err:
            raise _as_connection_exception(err) from err

    return run


WRAPPERS: dict[str, Callable[[Handler], Handler]] = {
    "exchange.declare": exchange_declare,
    "exchange.delete": exchange_delete,
    "queue.declare": queue_declare,
    "queue.delete": queue_delete,
    "queue.purge": queue_purge,
    "queue.bind": queue_bind,
    "queue.unbind": queue_unbind,
}
