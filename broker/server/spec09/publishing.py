"""Routing contents of the file, stream and message classes into queue lanes, and the
immediate flag of every content class.

Immediate (rules basic.publish.immediate:01, file.publish.immediate:01,
stream.publish.immediate:01, message.transfer.immediate:01): a message published with
immediate set is routed only when at least one queue it routes to has a consumer of its
content class ready to take it now; otherwise it is returned with 313 NO_CONSUMERS
(basic.return, file.return, stream.return) or, for message.transfer, which has no return,
answered with message.reject code 1 ("immediate delivery was attempted but failed"). On a
transactional channel the check is made at publish time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from amqp_protocol import errors

from .class_message import ClassMessage
from .lane_queue import kept
from .lanes import lane
from .state import state_of

if TYPE_CHECKING:
    from ...model.exchanges import Exchange
    from ..abc import Channel


def consumer_ready(
    channel: Channel, exchange: Exchange, routing_key: str, headers: Any, content_class: str
) -> bool:
    """Would a ``content_class`` message be taken by a consumer right now?"""
    for queue in channel.vhost.route(exchange, routing_key, headers or {}):
        target = queue if content_class == "basic" else lane(channel.vhost, queue, content_class)
        if any(c.sink.can_deliver(c) for c in target.consumers):
            return True
    return False


def send_return(channel: Channel, message: Any, content_class: str, code: int, text: str) -> None:
    returned = channel.conn.spec.method(f"{content_class}.return")(
        reply_code=code, reply_text=text, exchange=message.exchange, routing_key=message.routing_key
    )
    channel.conn.send_content(channel.id, returned, message.properties, message.body)


def publish(
    channel: Channel,
    exchange_name: str,
    message: ClassMessage,
    mandatory: bool,
    immediate: bool = False,
) -> bool:
    """Route now, or at tx.commit on a transactional channel. "" is the default exchange.
    False when an immediate message found no consumer (file and stream ones are returned)."""
    exchange = channel.vhost.exchange(exchange_name)
    if exchange.internal:
        raise errors.AccessRefused(
            f"ACCESS_REFUSED - cannot publish to internal exchange '{exchange_name}' "
            f"in vhost '{channel.vhost.name}'"
        )
    channel.conn.published(len(message.body))
    cls = message.content_class
    key, headers = message.routing_key, message.headers
    if immediate and not consumer_ready(channel, exchange, key, headers, cls):
        if cls != "message":
            send_return(channel, message, cls, 313, "NO_CONSUMERS")
        return False
    ext = state_of(channel)
    held = ext.tx_publishes if channel.transactional else ext.tx_held
    if held is None:
        enqueue(channel, exchange, message, mandatory)
    else:
        held.append((exchange, message, mandatory))
    return True


def enqueue(channel: Channel, exchange: Exchange, message: ClassMessage, mandatory: bool) -> None:
    queues = channel.vhost.route(exchange, message.routing_key, message.headers)
    if not queues and mandatory and message.content_class in ("file", "stream"):
        send_return(channel, message, message.content_class, 312, "NO_ROUTE")
    for queue in queues:
        lane(channel.vhost, queue, message.content_class).publish(message)


def commit(channel: Channel, held: list[tuple[Exchange, ClassMessage, bool]]) -> None:
    """A commit: route the contents a transaction ``held`` (emptying it), the journal synced
    when one of them is kept on disk, so that the commit is answered once they are."""
    contents = held[:]
    held.clear()
    for exchange, message, mandatory in contents:
        enqueue(channel, exchange, message, mandatory)
    if any(kept(message) for _, message, _ in contents):
        channel.vhost.store.sync()
