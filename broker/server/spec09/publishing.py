"""Routing contents of the file, stream and message classes into queue lanes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from amqp_spark.protocol import errors

from .lanes import ClassMessage, lane
from .state import state_of

if TYPE_CHECKING:
    from ...model.exchanges import Exchange
    from ..channel import ServerChannel


def publish(
    channel: ServerChannel, exchange_name: str, message: ClassMessage, mandatory: bool
) -> None:
    """Route now, or at tx.commit on a transactional channel. "" is the default exchange."""
    exchange = channel.vhost.exchange(exchange_name)
    if exchange.internal:
        raise errors.AccessRefused(
            f"ACCESS_REFUSED - cannot publish to internal exchange '{exchange_name}' "
            f"in vhost '{channel.vhost.name}'"
        )
    channel.conn.published(len(message.body))
    if channel.transactional:
        state_of(channel).tx_publishes.append((exchange, message, mandatory))
    else:
        enqueue(channel, exchange, message, mandatory)


def enqueue(
    channel: ServerChannel, exchange: Exchange, message: ClassMessage, mandatory: bool
) -> None:
    queues = channel.vhost.route(exchange, message.routing_key, message.headers)
    if not queues and mandatory and message.content_class in ("file", "stream"):
        returned = channel.conn.spec.method(f"{message.content_class}.return")(
            reply_code=312,
            reply_text="NO_ROUTE",
            exchange=message.exchange,
            routing_key=message.routing_key,
        )
        channel.conn.send_content(channel.id, returned, message.properties, message.body)
    for queue in queues:
        lane(queue, message.content_class).publish(message)


def commit(channel: ServerChannel) -> None:
    """tx.commit: route the contents held by the transaction."""
    ext = state_of(channel)
    held, ext.tx_publishes = ext.tx_publishes, []
    for exchange, message, mandatory in held:
        enqueue(channel, exchange, message, mandatory)
