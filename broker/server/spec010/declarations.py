"""The draft's exchange and queue classes on the server.

The draft drops the -ok replies of exchange.declare, exchange.delete, queue.bind and
queue.unbind (and their ``nowait``): those methods are answered by nothing when they
succeed and by a channel or connection exception when they fail. Where the draft keeps a
rule of 0-9 the handler is 0-9's (``spec09.declarations``: redeclaring keeps durable and
auto-delete, deleting what does not exist is 404, declare-ok, purge-ok and delete-ok count
every content class, a failed bind or unbind is a connection exception, an empty queue
name without a declared queue is 530), run on the draft's own method where 0-9's would
send an -ok the draft does not have.

Alternate exchanges:

- exchange.declare's ``alternate-exchange`` is the model's ``alternate-exchange`` argument
  (RabbitMQ's: the exchange unroutable messages go to; none: they are dropped, rule
  exchange.declare.alternate-exchange:empty-name). Redeclaring an exchange with another
  one is 406 (:pre-existing-exchange); redeclaring without one keeps the exchange's.
- queue.declare's ``alternate-exchange`` ("where rejected messages go") is the queue's
  dead-letter exchange (``x-dead-letter-exchange``), where a reject without requeue sends
  a message (none: it is dropped, rule queue.declare.alternate-exchange:empty; another
  one on redeclaring is 406, :pre-existing-exchange). An exchange that a queue dead-letters
  to cannot be deleted by a 0-10 client while the queue exists (406,
  :delete-exchange).
- The draft forbids an unroutable message from following a second alternate exchange
  (exchange.declare.alternate-exchange:double-failure): ``Spec010Dialect`` tells the core
  so (``Dialect.alternates_chain``).

A declare, bind, consume or get of another connection's exclusive queue is a channel
exception (405, rule queue.declare.exclusive:in-use), a bind's included, although other
failed binds are connection exceptions.
"""

from __future__ import annotations

from typing import Any

from amqp_protocol import errors
from amqp_protocol.generated import spec_0_9_1
from amqp_protocol.generated.spec_0_10 import (
    ExchangeDeclare,
    ExchangeDelete,
    QueueBind,
    QueueDeclare,
    QueueUnbind,
)

from ..abc import Channel
from ..core_handlers import CORE_HANDLERS
from ..dialect import ChannelHandler
from ..spec09 import declarations as spec09
from ..spec09.consumers import named_queue

#: A queue's alternate exchange, as the model keeps it.
_QUEUE_ALTERNATE = "x-dead-letter-exchange"


def exchange_declare(ch: Channel, m: ExchangeDeclare) -> None:
    existing = ch.vhost.exchanges.get(m.exchange)
    arguments = dict(m.arguments or {})
    durable, auto_delete, internal = m.durable, m.auto_delete, False
    if existing is not None and not m.passive:
        durable, auto_delete, internal = existing.durable, existing.auto_delete, existing.internal
        if not m.alternate_exchange and existing.alternate_exchange is not None:
            arguments["alternate-exchange"] = existing.alternate_exchange
    if m.alternate_exchange:
        arguments["alternate-exchange"] = m.alternate_exchange
    ch.vhost.declare_exchange(
        m.exchange,
        m.type,
        passive=m.passive,
        durable=durable,
        auto_delete=auto_delete,
        internal=internal,
        arguments=arguments,
    )


def _exchange_delete(ch: Channel, m: ExchangeDelete) -> None:
    # The default and amq.* exchanges are refused first, whatever names them as an
    # alternate (a queue's dead-letter exchange is often "").
    ch.vhost.refuse_deleting_reserved(m.exchange)
    users = [
        q.name for q in ch.vhost.queues.values() if q.arguments.get(_QUEUE_ALTERNATE) == m.exchange
    ]
    if users:
        raise errors.PreconditionFailed(
            f"PRECONDITION_FAILED - exchange '{m.exchange}' is the alternate exchange of "
            f"queue '{users[0]}'"
        )
    ch.vhost.delete_exchange(m.exchange, if_unused=m.if_unused)


#: 0-9's queue.declare, whose declare-ok is the draft's too
_queue_declare_09 = spec09.queue_declare(CORE_HANDLERS["queue.declare"])


def queue_declare(ch: Channel, m: QueueDeclare) -> None:
    """0-9's, on the same declaration with the queue's alternate exchange as its
    dead-letter exchange."""
    _exclusive_of_another(ch, m.queue)
    arguments = dict(m.arguments or {})
    if m.alternate_exchange:
        arguments[_QUEUE_ALTERNATE] = m.alternate_exchange
    declare = spec_0_9_1.QueueDeclare(
        queue=m.queue,
        passive=m.passive,
        durable=m.durable,
        exclusive=m.exclusive,
        auto_delete=m.auto_delete,
        no_wait=m.no_wait,
        arguments=arguments,
    )
    _queue_declare_09(ch, declare)


def _exclusive_of_another(ch: Channel, name: str) -> None:
    """405, a channel exception, when ``name`` is another connection's exclusive queue."""
    if name in ch.vhost.queues:
        ch.vhost.queue(name, ch.conn)


def _bind(ch: Channel, m: QueueBind) -> None:
    ch.vhost.bind(ch.queue_named(m.queue), m.exchange, m.routing_key, m.arguments)


def _unbind(ch: Channel, m: QueueUnbind) -> None:
    ch.vhost.unbind(ch.queue_named(m.queue), m.exchange, m.routing_key, m.arguments)


_bind_09 = spec09.queue_bind(_bind)


def queue_bind(ch: Channel, m: QueueBind) -> None:
    _exclusive_of_another(ch, m.queue)
    _bind_09(ch, m)


def names_a_queue(handler: ChannelHandler) -> ChannelHandler:
    """``handler``, after the 530 of an empty queue name on a channel that declared no
    queue (rules queue.purge.queue:empty-name, queue.delete.queue:empty-name,
    basic.get.queue:queue-exists-if-empty, basic.consume.queue:queue-exists-if-empty)."""

    def run(ch: Channel, m: Any) -> None:
        named_queue(ch, m.queue)
        handler(ch, m)

    return run


HANDLERS: dict[str, ChannelHandler] = {
    "exchange.declare": exchange_declare,
    "exchange.delete": spec09.exchange_delete(_exchange_delete),
    "queue.declare": queue_declare,
    "queue.bind": queue_bind,
    "queue.unbind": spec09.queue_unbind(_unbind),
    "queue.purge": names_a_queue(spec09.queue_purge(CORE_HANDLERS["queue.purge"])),
    "queue.delete": names_a_queue(spec09.queue_delete(CORE_HANDLERS["queue.delete"])),
}
