"""AMQP 0-9-1 messages to and from the AMQP 1.0 messages a stream stores, as RabbitMQ 4.0.5
converts them (its ``mc_amqpl`` module; measured on a RabbitMQ 4.0.5 node: docs/amqp10.md,
tests/protocol/amqp10/test_rabbitmq_mapping.py).

Properties are the basic class's fields by name (``content_type`` ... ``app_id``, as
``amqp_protocol``'s properties classes name them); header values are the Python values the
0-9-1 field-table codec of ``amqp_protocol.values`` gives and takes (``str``, ``bytes``,
``int``, ``float``, ``bool``, ``None``, ``datetime``, ``dict``, ``list``).
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Mapping
from typing import Any, NamedTuple

from amqp_protocol.amqp10.message import (
    AMQP_VALUE,
    Header,
    Message,
    Properties,
    decode_message,
    encode_message,
)
from amqp_protocol.amqp10.types import (
    Array,
    Char,
    Described,
    Long,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    encode,
)

#: The 0-9-1 ``type`` RabbitMQ gives a message whose body is not data sections: the body is
#: then the AMQP 1.0 encoding of its body sections.
AMQP10_TYPE = "amqp-1.0"
#: The header a stream queue adds to each delivery to a 0-9-1 consumer: the entry's offset.
STREAM_OFFSET_HEADER = "x-stream-offset"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
#: Message annotations RabbitMQ keeps to itself (never a 0-9-1 header).
_INTERNAL_ANNOTATIONS = ("x-basic-", "x-routing-key", "x-exchange", "x-death")
_URN_UUID = "urn:uuid:"
_SHORTSTR_MAX = 255


class Amqp091Delivery(NamedTuple):
    """What a 0-9-1 consumer of a stream gets for one stored message."""

    properties: dict[str, Any]  # basic properties present (None-valued ones left out)
    body: bytes
    exchange: str
    routing_key: str


# -- 0-9-1 -> 1.0 ---------------------------------------------------------------------------


def _value_from_091(value: Any) -> Any:
    """A 0-9-1 field value as RabbitMQ types it in AMQP 1.0 (``from_091``)."""
    if value is None or isinstance(value, bool | float):
        return value
    if isinstance(value, int):
        return value if -(2**31) <= value < 2**31 else Long(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        try:
            return raw.decode("utf-8") if len(raw) <= 4096 and b"\x00" not in raw else raw
        except UnicodeDecodeError:
            return raw
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
        return Timestamp(((moment - _EPOCH) // datetime.timedelta(seconds=1)) * 1000)
    if isinstance(value, Mapping):
        return {Symbol(k): _value_from_091(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_value_from_091(v) for v in value]
    if isinstance(value, decimal.Decimal):
        # RabbitMQ 4.0.5 has no AMQP 1.0 type for it and closes the publisher's connection
        # (541 INTERNAL_ERROR): there is no stored form to copy.
        raise ValueError(f"a decimal header value ({value}) has no AMQP 1.0 form in a stream")
    raise TypeError(f"{type(value).__name__} is not an AMQP 0-9-1 field value")


def _id_from_091(value: str | None) -> Any:
    if value is not None and value.startswith(_URN_UUID):
        try:
            return uuid.UUID(value[len(_URN_UUID) :])
        except ValueError:
            pass
    return value


def _timestamp_seconds(value: Any) -> int:
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
        return (moment - _EPOCH) // datetime.timedelta(seconds=1)
    return int(value)


def from_amqp091_message(
    properties: Mapping[str, Any],
    body: bytes,
    exchange: str | None = None,
    routing_key: str | None = None,
) -> Message:
    """The AMQP 1.0 message RabbitMQ 4 stores in a stream for a 0-9-1 publish of ``body``
    with ``properties`` (``exchange`` and ``routing_key`` become the ``x-exchange`` and
    ``x-routing-key`` annotations, as a publish through an exchange gives them)."""
    get = properties.get
    headers: Mapping[str, Any] = get("headers") or {}
    expiration = get("expiration")
    priority = get("priority")
    header = Header(
        durable=get("delivery_mode") == 2,
        priority=None if priority is None else UByte(priority),
        ttl=None if expiration is None else UInt(int(expiration)),
        first_acquirer=True,
        delivery_count=UInt(0),
    )
    annotations: dict[Any, Any] = {}
    if get("type") is not None:
        annotations[Symbol("x-basic-type")] = get("type")
    application: dict[str, Any] = {}
    for key, value in headers.items():
        if key.startswith("x-"):
            annotations[Symbol(key)] = _value_from_091(value)
        elif key == "CC" and isinstance(value, list | tuple):
            annotations[Symbol("x-cc")] = _value_from_091(value)
        elif not isinstance(value, Mapping | list | tuple):
            application[key] = _value_from_091(value)
    if exchange is not None:
        annotations[Symbol("x-exchange")] = exchange
    if routing_key is not None:
        annotations[Symbol("x-routing-key")] = routing_key
    timestamp = get("timestamp")
    user_id = get("user_id")
    fields = Properties(
        message_id=_id_from_091(get("message_id")),
        user_id=None if user_id is None else user_id.encode("utf-8"),
        reply_to=get("reply_to"),
        correlation_id=_id_from_091(get("correlation_id")),
        content_type=get("content_type"),
        content_encoding=get("content_encoding"),
        creation_time=None if timestamp is None else _timestamp_seconds(timestamp) * 1000,
        group_id=get("app_id"),
    )
    if get("type") == AMQP10_TYPE:
        stored = decode_message(body)
        message_body, body_kind = stored.body, stored.body_kind
    else:
        message_body, body_kind = [bytes(body)], "data"
    return Message(
        body=message_body,
        body_kind=body_kind,
        header=header,
        message_annotations=annotations or None,
        properties=None if fields == _NO_PROPERTIES else fields,
        application_properties=application or None,
    )


_NO_PROPERTIES = Properties()


def from_amqp091(
    properties: Mapping[str, Any],
    body: bytes,
    exchange: str | None = None,
    routing_key: str | None = None,
) -> bytes:
    """``from_amqp091_message`` encoded: the bytes a stream stores for a 0-9-1 publish; what
    the sink writes for a row (without ``exchange``/``routing_key``) so that RabbitMQ 4 gives
    a 0-9-1 consumer the same properties back."""
    return encode_message(from_amqp091_message(properties, body, exchange, routing_key))


# -- 1.0 -> 0-9-1 ---------------------------------------------------------------------------


def _value_to_091(value: Any) -> Any:
    """An AMQP 1.0 value as a 0-9-1 consumer of RabbitMQ 4 decodes it (``to_091``)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    if kind is Timestamp:
        return _EPOCH + datetime.timedelta(seconds=value // 1000)
    if kind is bytes:
        # a longstr on the wire: the codec gives text where the bytes are UTF-8
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    if kind is Symbol or kind is Char:
        return str(value)
    if kind is dict:
        return {str(k): _value_to_091(v) for k, v in value.items()}
    if kind is list:
        return [_value_to_091(v) for v in value]
    if kind is Array:
        return [_value_to_091(v) for v in value.items]
    if kind is Described:
        return _value_to_091(value.value)
    if kind is uuid.UUID:
        # RabbitMQ 4.0.5 closes the 0-9-1 consumer's channel (541) on such a header; the
        # nearest faithful text is the URN it uses for uuid message ids.
        return _URN_UUID + str(value)
    return bytes(value) if isinstance(value, bytes) else value


def _shortstr(value: Any) -> str | None:
    return value if type(value) is str and len(value.encode("utf-8")) <= _SHORTSTR_MAX else None


def _id_to_091(value: Any, header: str, headers: dict[str, Any]) -> str | None:
    """A message or correlation id as 0-9-1 carries it (``message_id/3``): text if it fits a
    shortstr, else the header ``header``."""
    if value is None:
        return None
    kind = type(value)
    if kind is uuid.UUID:
        return _URN_UUID + str(value)
    if kind is int:
        return str(value)
    if kind is str and len(value.encode("utf-8")) <= _SHORTSTR_MAX:
        return str(value)
    headers[header] = _value_to_091(value) if kind is str else bytes(value)
    return None


def amqp091_view(message: Message, queue: str, offset: int | None = None) -> Amqp091Delivery:
    """What RabbitMQ 4 delivers to a 0-9-1 consumer of stream ``queue`` for ``message``
    (with the ``x-stream-offset`` header when ``offset`` is given)."""
    annotations = message.message_annotations or {}
    header = message.header
    props = message.properties or _NO_PROPERTIES
    headers: dict[str, Any] = {}
    for key, value in (message.application_properties or {}).items():
        if type(key) is str and len(key.encode("utf-8")) <= _SHORTSTR_MAX:
            headers[key] = _value_to_091(value)
    for key, value in annotations.items():
        if type(key) is not Symbol or not key.startswith("x-") or len(key) > _SHORTSTR_MAX:
            continue
        if key == "x-cc":
            headers["CC"] = _value_to_091(value)
        elif key == "x-opt-rabbitmq-received-time" and type(value) is Timestamp:
            headers["timestamp_in_ms"] = int(value)
        elif not key.startswith(_INTERNAL_ANNOTATIONS):
            headers[str(key)] = _value_to_091(value)
    message_id = _id_to_091(props.message_id, "x-message-id", headers)
    correlation_id = _id_to_091(props.correlation_id, "x-correlation-id", headers)
    if offset is not None:
        headers[STREAM_OFFSET_HEADER] = offset
    if header is not None and header.durable is not None:
        delivery_mode = 2 if header.durable else 1
    else:
        delivery_mode = annotations.get("x-basic-delivery-mode", 2)
    priority = header.priority if header is not None else None
    if priority is None and header is None:
        priority = annotations.get("x-basic-priority")
    ttl = header.ttl if header is not None else None
    expiration = str(ttl) if ttl is not None else None
    if expiration is None and header is None:
        expiration = annotations.get("x-basic-expiration")
    if message.body_kind == "data":
        body = b"".join(message.body)
        kind = annotations.get("x-basic-type")
    else:
        body = _encoded_body(message)
        kind = AMQP10_TYPE
    user_id = props.user_id
    creation = props.creation_time
    present = {
        "content_type": None if props.content_type is None else str(props.content_type),
        "content_encoding": (
            None if props.content_encoding is None else str(props.content_encoding)
        ),
        # RabbitMQ sorts a delivery's headers by name when it adds its own (x-stream-offset)
        "headers": dict(sorted(headers.items())) if headers else None,
        "delivery_mode": delivery_mode,
        "priority": priority,
        "correlation_id": correlation_id,
        "reply_to": _shortstr(props.reply_to),
        "expiration": expiration,
        "message_id": message_id,
        "timestamp": None if creation is None else creation // 1000,
        "type": None if kind is None else str(kind),
        "user_id": _user_id(user_id),
        "app_id": _shortstr(props.group_id),
    }
    exchange = annotations.get("x-exchange")
    routing_key = annotations.get("x-routing-key")
    return Amqp091Delivery(
        {k: v for k, v in present.items() if v is not None},
        body,
        "" if exchange is None else str(exchange),
        queue if routing_key is None else str(routing_key),
    )


def _user_id(value: bytes | None) -> str | None:
    if value is None or len(value) > _SHORTSTR_MAX:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _encoded_body(message: Message) -> bytes:
    """The AMQP 1.0 encoding of a body that is not data sections (what RabbitMQ gives a 0-9-1
    consumer as the body, with the type ``amqp-1.0``)."""
    if message.body_kind == "amqp-value":
        return bytes((0x00, 0x53, AMQP_VALUE)) + encode(message.body)
    return b"".join(b"\x00\x53\x76" + encode(list(items)) for items in message.body)


def to_amqp091(data: bytes, queue: str = "", offset: int | None = None) -> Amqp091Delivery:
    """``amqp091_view`` of one stored message's bytes."""
    return amqp091_view(decode_message(data), queue, offset)
