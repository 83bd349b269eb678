"""A published message and its place in one queue."""

from __future__ import annotations

from typing import Any

from amqp_spark.protocol.values import encode_shortstr


class Message:
    """An immutable published message, shared by every queue it was routed to.

    The encoded content header is computed once, on first delivery, and reused for every
    delivery of the message to any consumer.
    """

    __slots__ = (
        "exchange",
        "routing_key",
        "properties",
        "body",
        "_header",
        "_envelope",
        "priority",
        "ttl",
        "msg_id",
    )

    def __init__(self, exchange: str, routing_key: str, properties: Any, body: bytes) -> None:
        """``properties`` is a generated ``Properties`` of class basic."""
        self.exchange = exchange
        self.routing_key = routing_key
        self.properties = properties
        self.body = body
        self._header: bytes | None = None
        self._envelope: bytes | None = None
        prio = properties.priority
        self.priority: int = prio if isinstance(prio, int) else 0
        self.ttl: int | None = _parse_expiration(properties.expiration)
        #: The journal's id for this message once it is journaled (0: not journaled).
        self.msg_id = 0

    @property
    def header_payload(self) -> bytes:
        """The payload of this message's content header frame."""
        if self._header is None:
            self._header = self.properties.encode_header(len(self.body))
        return self._header

    @property
    def envelope(self) -> bytes:
        """Exchange and routing key as the tail of basic.deliver encodes them."""
        if self._envelope is None:
            self._envelope = encode_shortstr(self.exchange) + encode_shortstr(self.routing_key)
        return self._envelope

    @property
    def persistent(self) -> bool:
        return self.properties.delivery_mode == 2

    @property
    def headers(self) -> dict[str, Any]:
        return self.properties.headers or {}


def _parse_expiration(value: Any) -> int | None:
    """The per-message TTL in milliseconds, or None when absent or not a valid number
    (RabbitMQ refuses invalid values at publish; see ``validate_expiration``)."""
    if value is None:
        return None
    try:
        ttl = int(value)
    except (TypeError, ValueError):
        return None
    return ttl if ttl >= 0 else None


def validate_expiration(value: Any) -> bool:
    """True when the expiration property is absent or a non-negative integer string."""
    if value is None:
        return True
    return isinstance(value, str) and value.isdigit()


class QueuedMessage:
    """One message in one queue: what differs between the queues it was routed to."""

    __slots__ = ("message", "expires_at", "redelivered", "size")

    def __init__(self, message: Message, expires_at: float | None) -> None:
        self.message = message
        self.expires_at = expires_at
        self.redelivered = False
        self.size = len(message.body)
