"""Messages through the API: an exchange's ``publish`` and a queue's ``get``, with RabbitMQ's
request and answer shapes (``payload`` as a string, or base64 when it is not UTF-8 or the
request asks)."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from amqp_protocol import SPEC_0_9_1, errors

from ..model.exchanges import Exchange, check_sender_selected, without_bcc
from ..model.message import Message, validate_expiration
from ..model.queues import Queue
from .responses import bad_request, integer, table, text

if TYPE_CHECKING:
    from ..model.vhost import VirtualHost
    from .managed import ManagedBroker

BasicProperties = SPEC_0_9_1.properties("basic")
_PROPERTY_NAMES = frozenset(BasicProperties().fields()) - {"reserved"}
ACK_MODES = ("ack_requeue_true", "ack_requeue_false", "reject_requeue_true", "reject_requeue_false")
ENCODINGS = ("auto", "base64")


def properties_from(body: dict[str, Any]) -> Any:
    props = table(body, "properties")
    unknown = sorted(set(props) - _PROPERTY_NAMES)
    if unknown:
        bad_request(f"unknown message properties {unknown}; known: {sorted(_PROPERTY_NAMES)}")
    if "delivery_mode" in props:
        props["delivery_mode"] = integer(props, "delivery_mode", 1, minimum=1)
    if "priority" in props:
        props["priority"] = integer(props, "priority", 0)
    if "headers" in props:
        props["headers"] = table(props, "headers")
    if not validate_expiration(props.get("expiration")):
        bad_request(f"expiration={props.get('expiration')!r}: a string of digits")
    return BasicProperties(**props)


def payload_from(body: dict[str, Any]) -> bytes:
    payload = text(body, "payload")
    encoding = body.get("payload_encoding", "string")
    if encoding == "string":
        return payload.encode()
    if encoding == "base64":
        try:
            return base64.b64decode(payload, validate=True)
        except binascii.Error as e:
            bad_request(f"payload is not base64: {e}")
    bad_request(f"payload_encoding={encoding!r}: one of 'string', 'base64'")


def publish(
    broker: ManagedBroker, vhost: VirtualHost, exchange: Exchange, body: dict[str, Any]
) -> bool:
    """Route a message as basic.publish routes it; True if it reached a queue."""
    if exchange.internal:
        raise errors.AccessRefused(
            f"ACCESS_REFUSED - cannot publish to internal exchange '{exchange.name}' "
            f"in vhost '{vhost.name}'"
        )
    routing_key = text(body, "routing_key")
    properties = properties_from(body)
    payload = payload_from(body)
    headers = properties.headers or {}
    blind_keys: tuple[str, ...] = ()
    if headers:
        check_sender_selected(headers)
        properties, blind_keys = without_bcc(properties)
    message = Message(exchange.name, routing_key, properties, payload, blind_keys=blind_keys)
    queues = vhost.route(exchange, routing_key, headers)
    broker.closed_stats.publish += 1
    exchange.stats.publish_in += 1
    if not queues:
        return False
    exchange.stats.publish_out += 1
    vhost.store.message_routed(message, queues, None)
    for queue in queues:
        queue.stats.publish += 1
        queue.publish(message)
        if queue.buffers_publishes:
            queue.flush()
    return True


def _encoded(payload: bytes, encoding: str, truncate: int | None) -> dict[str, Any]:
    shown = payload[:truncate] if truncate is not None else payload
    if encoding == "auto":
        try:
            return {"payload": shown.decode(), "payload_encoding": "string"}
        except UnicodeDecodeError:
            pass
    return {"payload": base64.b64encode(shown).decode(), "payload_encoding": "base64"}


def get(broker: ManagedBroker, queue: Queue, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Take up to ``count`` messages as basic.get does, then ack, reject or requeue them
    all as ``ackmode`` says (requeued ones come back redelivered, as in RabbitMQ)."""
    count = integer(body, "count", 1, minimum=1)
    ackmode = body.get("ackmode", "ack_requeue_true")
    if ackmode not in ACK_MODES:
        bad_request(f"ackmode={ackmode!r}: one of {', '.join(ACK_MODES)}")
    encoding = body.get("encoding", "auto")
    if encoding not in ENCODINGS:
        bad_request(f"encoding={encoding!r}: one of {', '.join(ENCODINGS)}")
    truncate = integer(body, "truncate", 0) if "truncate" in body else None
    taken, answer = [], []
    for _ in range(count):
        entry = queue.get()
        if entry is None:
            break
        taken.append(entry)
        message = queue.as_delivered(entry, fetched=True)
        props = {k: v for k, v in message.properties.fields().items() if v is not None}
        props.pop("reserved", None)
        answer.append(
            {
                "payload_bytes": len(message.body),
                "redelivered": entry.redelivered,
                "exchange": message.exchange,
                "routing_key": message.routing_key,
                "message_count": queue.message_count,
                "properties": props or [],  # RabbitMQ's empty property list
                **_encoded(message.body, encoding, truncate),
            }
        )
        queue.stats.get += 1
        broker.closed_stats.get += 1
    if ackmode.endswith("requeue_true"):
        queue.requeue(taken)
    else:
        for entry in taken:
            if ackmode.startswith("ack"):
                queue.settle(entry)
            else:
                queue.reject(entry)
    return answer
