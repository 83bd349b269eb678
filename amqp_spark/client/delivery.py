"""Messages handed to the caller: deliveries (basic.deliver, basic.get-ok) and returns."""

from __future__ import annotations

from dataclasses import dataclass

from amqp_protocol import Properties


@dataclass(slots=True)
class Delivery:
    """A message the broker delivered; ``message_count`` is set by basic.get only."""

    consumer_tag: str
    delivery_tag: int
    redelivered: bool
    exchange: str
    routing_key: str
    properties: Properties
    body: bytes
    message_count: int | None = None


@dataclass(slots=True)
class ReturnedMessage:
    """A mandatory message the broker could not route (basic.return)."""

    reply_code: int
    reply_text: str
    exchange: str
    routing_key: str
    properties: Properties
    body: bytes
