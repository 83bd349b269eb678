"""The draft's exchange and queue classes on the server.

The draft drops the -ok replies of exchange.declare, exchange.delete, queue.bind and
queue.unbind (and their ``nowait``): those methods are answered by nothing when they
succeed and by a channel or connection exception when they fail. exchange.declare's
``alternate-exchange`` is the model's ``alternate-exchange`` argument (RabbitMQ's: the
exchange unroutable messages go to; rule exchange.declare.alternate-exchange:empty-name:
none, they are dropped). A queue's ``alternate-exchange`` (where a deleted non-empty queue's
or an undeliverable immediate message goes) is not implemented: a declare naming one is a
540 naming the field.
"""

from __future__ import annotations

from amqp_protocol import errors
from amqp_protocol.generated.spec_0_10 import (
    ExchangeDeclare,
    ExchangeDelete,
    QueueBind,
    QueueDeclare,
    QueueUnbind,
)

from ..abc import Channel
from ..dialect import ChannelHandler


def exchange_declare(ch: Channel, m: ExchangeDeclare) -> None:
    arguments = dict(m.arguments or {})
    if m.alternate_exchange:
        arguments["alternate-exchange"] = m.alternate_exchange
    ch.vhost.declare_exchange(
        m.exchange,
        m.type,
        passive=m.passive,
        durable=m.durable,
        auto_delete=m.auto_delete,
        internal=False,
        arguments=arguments,
    )


def exchange_delete(ch: Channel, m: ExchangeDelete) -> None:
    ch.vhost.delete_exchange(m.exchange, if_unused=m.if_unused)


def queue_declare(ch: Channel, m: QueueDeclare) -> None:
    if m.alternate_exchange:
        raise errors.NotImplemented_(
            "NOT_IMPLEMENTED - queue.declare alternate-exchange "
            f"'{m.alternate_exchange}' (a queue's alternate exchange)"
        )
    q = ch.declare_queue(m, durable=m.durable, auto_delete=m.auto_delete)  # type: ignore[arg-type]
    if not m.no_wait:
        ch.send(
            ch.conn.spec.method("queue.declare-ok")(
                queue=q.name, message_count=q.message_count, consumer_count=q.consumer_count
            )
        )


def queue_bind(ch: Channel, m: QueueBind) -> None:
    ch.vhost.exchange(m.exchange)  # a missing exchange is named first, as for 0-9-1
    q = ch.queue_named(m.queue)
    ch.vhost.bind(q, m.exchange, m.routing_key, m.arguments)


def queue_unbind(ch: Channel, m: QueueUnbind) -> None:
    q = ch.queue_named(m.queue)
    ch.vhost.unbind(q, m.exchange, m.routing_key, m.arguments)


HANDLERS: dict[str, ChannelHandler] = {
    "exchange.declare": exchange_declare,
    "exchange.delete": exchange_delete,
    "queue.declare": queue_declare,
    "queue.bind": queue_bind,
    "queue.unbind": queue_unbind,
}
