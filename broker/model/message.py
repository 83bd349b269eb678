"""A published message and its place in one queue."""

from __future__ import annotations

import copy
from typing import Any

from amqp_protocol import SPEC_0_9_1
from amqp_protocol.values import encode_shortstr

_BasicProperties = SPEC_0_9_1.properties("basic")
#: class-id u16, weight u16, body-size u64: what precedes the property flags in a header
HEADER_PREFIX = 12

#: Encoded envelopes by (exchange, routing key): publishers reuse a few of them.
_envelopes: dict[tuple[str, str], bytes] = {}
_ENVELOPES_KEPT = 4096


def encode_envelope(exchange: str, routing_key: str) -> bytes:
    """Exchange and routing key as the tail of basic.deliver encodes them (cached)."""
    key = (exchange, routing_key)
    envelope = _envelopes.get(key)
    if envelope is None:
        if len(_envelopes) >= _ENVELOPES_KEPT:
            _envelopes.clear()
        envelope = _envelopes[key] = encode_shortstr(exchange) + encode_shortstr(routing_key)
    return envelope


class Message:
    """An immutable published message, shared by every queue it was routed to.

    The encoded content header is computed once, on first delivery, and reused for every
    delivery of the message to any consumer; a message read back from disk is given the
    header it was stored with (``header``), which is never encoded again.
    """

    #: The AMQP class of the content (basic; the 0-9 classes' messages say theirs).
    class_id: int = SPEC_0_9_1.classes["basic"].class_id

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
        "blind_keys",
    )

    def __init__(
        self,
        exchange: str,
        routing_key: str,
        properties: Any,
        body: bytes,
        *,
        header: bytes | None = None,
        envelope: bytes | None = None,
        blind_keys: tuple[str, ...] = (),
    ) -> None:
        """``properties`` is a generated ``Properties`` of class basic; ``header`` and
        ``envelope``, when given, are the encoded content header (``header_payload``) and
        ``envelope`` of exactly these properties, exchange and routing key. ``blind_keys``
        are the keys of the ``BCC`` header the message was published with (the header itself
        is not kept): RabbitMQ routes a dead-lettered message by them too."""
        self.exchange = exchange
        self.routing_key = routing_key
        self.properties = properties
        self.body = body
        self._header = header
        self._envelope = envelope
        prio = properties.priority
        self.priority: int = prio if isinstance(prio, int) else 0
        self.ttl: int | None = _parse_expiration(properties.expiration)
        #: The journal's id for this message once it is journaled (0: not journaled).
        self.msg_id = 0
        self.blind_keys = blind_keys

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
            self._envelope = encode_envelope(self.exchange, self.routing_key)
        return self._envelope

    def set_properties(self, properties: Any) -> None:
        """Give a fresh copy of a message (not yet routed) new ``properties``: its content
        header is encoded anew on first delivery."""
        self.properties = properties
        self._header = None

    def readdress(self, exchange: str, routing_key: str) -> None:
        """Give a fresh copy of a message (not yet routed) a new exchange and routing key:
        its envelope is encoded anew on first delivery."""
        self.exchange = exchange
        self.routing_key = routing_key
        self._envelope = None

    @property
    def persistent(self) -> bool:
        return self.properties.delivery_mode == 2

    @property
    def headers(self) -> dict[str, Any]:
        return self.properties.headers or {}


class StoredMessage(Message):
    """A message read back from disk (a spilled queue entry, a journaled message, a stream
    record) as the bytes a delivery sends: envelope, content header, body. A basic.deliver
    needs nothing else, so the properties, and the priority and TTL they give, are decoded
    only when something asks for them."""

    __slots__ = ("_decoded",)

    def __init__(
        self,
        exchange: str,
        routing_key: str,
        envelope: bytes,
        header: bytes,
        body: bytes,
        blind_keys: tuple[str, ...] = (),
    ) -> None:
        # Message.__init__ reads the decoded properties: its fields are set here.
        self.exchange = exchange
        self.routing_key = routing_key
        self._envelope = envelope
        self._header = header
        self.body = body
        self.msg_id = 0
        self.blind_keys = blind_keys
        self._decoded: Any = None

    def decode_properties(self, header: bytes) -> Any:
        return _BasicProperties.decode(header, HEADER_PREFIX)

    @property
    def properties(self) -> Any:
        if self._decoded is None:
            assert self._header is not None
            self._decoded = self.decode_properties(self._header)
        return self._decoded

    @properties.setter
    def properties(self, value: Any) -> None:
        self._decoded = value

    @property
    def priority(self) -> int:
        priority = self.properties.priority
        return priority if isinstance(priority, int) else 0

    @priority.setter
    def priority(self, value: int) -> None:
        raise AttributeError("a stored message's priority is its properties'")

    @property
    def ttl(self) -> int | None:
        return _parse_expiration(self.properties.expiration)

    @ttl.setter
    def ttl(self, value: int | None) -> None:
        raise AttributeError("a stored message's TTL is its properties'")


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


def with_headers(message: Message, headers: dict[str, Any], *, replace: bool = False) -> Message:
    """A copy of ``message`` (of any class with a properties object) whose properties' headers
    are updated with ``headers`` (or are ``headers``, with ``replace``); everything else, the
    journal id included, is shared."""
    props = message.properties
    fields = props.fields()
    fields["headers"] = headers if replace else {**(props.headers or {}), **headers}
    if isinstance(message, StoredMessage):  # its priority and TTL are read-only properties
        changed = Message(
            message.exchange,
            message.routing_key,
            type(props)(**fields),
            message.body,
            envelope=message.envelope,
            blind_keys=message.blind_keys,
        )
        changed.msg_id = message.msg_id
        return changed
    changed = copy.copy(message)
    changed.set_properties(type(props)(**fields))
    return changed


class QueuedMessage:
    """One message in one queue: what differs between the queues it was routed to.

    ``delivery_count`` counts the times the entry came back unacknowledged to a queue with
    ``x-delivery-limit`` (RabbitMQ's quorum-queue counter; see ``Queue.as_delivered``).
    ``seq``, its place in its queue's order (see ``ReadyMessages.put_back_in_place``)."""

    __slots__ = ("message", "expires_at", "redelivered", "size", "delivery_count", "seq")

    def __init__(self, message: Message, expires_at: float | None) -> None:
        self.message = message
        self.expires_at = expires_at
        self.redelivered = False
        self.size = len(message.body)
        self.delivery_count = 0
        self.seq = 0
