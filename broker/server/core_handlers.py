"""The channel methods every dialect starts from (``CORE_HANDLERS``): the exchange and
queue methods, answered here on the channel's operations, and ``ServerChannel``'s own
(channel, basic, confirm and tx methods).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from amqp_protocol.generated.any_version import (
    ExchangeBind,
    ExchangeDeclare,
    ExchangeDelete,
    ExchangeUnbind,
    QueueBind,
    QueueDeclare,
    QueueDelete,
    QueuePurge,
    QueueUnbind,
)

from .channel import ServerChannel
from .dialect import ChannelHandler, ContentHandler


def _reply(ch: ServerChannel, name: str, **fields: Any) -> None:
    ch.send(ch.conn.spec.method(name)(**fields))


# -- exchange ---------------------------------------------------------------------------------


def _exchange_declare(ch: ServerChannel, m: ExchangeDeclare) -> None:
    ch.declare_exchange(m, durable=m.durable, auto_delete=m.auto_delete)


def _exchange_delete(ch: ServerChannel, m: ExchangeDelete) -> None:
    ch.vhost.delete_exchange(m.exchange, if_unused=m.if_unused)
    if not m.no_wait:
        _reply(ch, "exchange.delete-ok")


def _exchange_bind(ch: ServerChannel, m: ExchangeBind) -> None:
    ch.vhost.exchange(m.source)  # a missing source is named first, as RabbitMQ does
    destination = ch.vhost.exchange(m.destination)
    ch.vhost.bind(destination, m.source, m.routing_key, m.arguments)
    if not m.no_wait:
        _reply(ch, "exchange.bind-ok")


def _exchange_unbind(ch: ServerChannel, m: ExchangeUnbind) -> None:
    with ch.unbinding():
        destination = ch.vhost.exchange(m.destination)
        ch.vhost.unbind(destination, m.source, m.routing_key, m.arguments)
    if not m.no_wait:
        _reply(ch, "exchange.unbind-ok")


# -- queue ------------------------------------------------------------------------------------


def _queue_declare(ch: ServerChannel, m: QueueDeclare) -> None:
    q = ch.declare_queue(m, durable=m.durable, auto_delete=m.auto_delete)
    if not m.no_wait:
        _reply(
            ch,
            "queue.declare-ok",
            queue=q.name,
            message_count=q.message_count,
            consumer_count=q.consumer_count,
        )


def _queue_bind(ch: ServerChannel, m: QueueBind) -> None:
    ch.vhost.exchange(m.exchange)  # a missing source is named first, as RabbitMQ does
    q = ch.queue_named(m.queue)
    ch.vhost.bind(q, m.exchange, m.routing_key, m.arguments)
    if not m.no_wait:
        _reply(ch, "queue.bind-ok")


def _queue_unbind(ch: ServerChannel, m: QueueUnbind) -> None:
    name = ch.queue_name(m.queue)
    with ch.unbinding():
        q = ch.vhost.queue(name, ch.conn)
        ch.vhost.unbind(q, m.exchange, m.routing_key, m.arguments)
    _reply(ch, "queue.unbind-ok")


def _queue_purge(ch: ServerChannel, m: QueuePurge) -> None:
    count = ch.queue_named(m.queue).purge()
    if not m.no_wait:
        _reply(ch, "queue.purge-ok", message_count=count)


def _queue_delete(ch: ServerChannel, m: QueueDelete) -> None:
    name = m.queue or ch.last_queue or ""
    count = ch.vhost.delete_queue_named(name, ch.conn, if_unused=m.if_unused, if_empty=m.if_empty)
    if not m.no_wait:
        _reply(ch, "queue.delete-ok", message_count=count)


_CORE_HANDLERS: dict[str, Callable[[ServerChannel, Any], None]] = {
    "channel.close": ServerChannel._channel_close,
    "channel.close-ok": ServerChannel._channel_close_ok,
    "channel.flow": ServerChannel._channel_flow,
    "channel.flow-ok": ServerChannel._ignore,
    "exchange.declare": _exchange_declare,
    "exchange.delete": _exchange_delete,
    "exchange.bind": _exchange_bind,
    "exchange.unbind": _exchange_unbind,
    "queue.declare": _queue_declare,
    "queue.bind": _queue_bind,
    "queue.unbind": _queue_unbind,
    "queue.purge": _queue_purge,
    "queue.delete": _queue_delete,
    "basic.qos": ServerChannel._basic_qos,
    "basic.consume": ServerChannel._basic_consume,
    "basic.cancel": ServerChannel._basic_cancel,
    "basic.get": ServerChannel._basic_get,
    "basic.ack": ServerChannel._basic_ack,
    "basic.nack": ServerChannel._basic_nack,
    "basic.reject": ServerChannel._basic_reject,
    "basic.recover": ServerChannel._basic_recover,
    "basic.recover-async": ServerChannel._basic_recover,
    "confirm.select": ServerChannel._confirm_select,
    "tx.select": ServerChannel._tx_select,
    "tx.commit": ServerChannel._tx_commit,
    "tx.rollback": ServerChannel._tx_rollback,
}
#: The channel methods every dialect starts from (0-9-1's, as RabbitMQ answers them), and its
#: content-bearing ones. The core calls each handler with its ``ServerChannel``; a dialect's
#: own handlers need only the public surface (``abc.Channel``), hence the one table type.
CORE_HANDLERS = cast(dict[str, ChannelHandler], _CORE_HANDLERS)
CORE_CONTENT_HANDLERS = cast(
    dict[str, ContentHandler], {"basic.publish": ServerChannel.basic_publish}
)
