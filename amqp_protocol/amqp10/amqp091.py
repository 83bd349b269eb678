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
import operator
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from amqp_protocol.amqp10.message import (
    DATA,
    Header,
    Message,
    Properties,
    Sections,
    decode_message,
    encode_message,
    split_sections,
)
from amqp_protocol.amqp10.types import (
    Array,
    Boolean,
    Buffer,
    Char,
    Described,
    Long,
    Symbol,
    Timestamp,
    UByte,
    UInt,
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


#: The basic properties in the order of ``delivery_fields``' tuple (and of the
#: schema's columns).
PROPERTY_FIELDS: tuple[str, ...] = (
    "content_type",
    "content_encoding",
    "headers",
    "delivery_mode",
    "priority",
    "correlation_id",
    "reply_to",
    "expiration",
    "message_id",
    "timestamp",
    "type",
    "user_id",
    "app_id",
)
#: The basic properties of an object that has them as attributes, in that order.
_BASIC_FIELDS = operator.attrgetter(*PROPERTY_FIELDS)


class Amqp091Delivery(NamedTuple):
    """What a 0-9-1 consumer of a stream gets for one stored message."""

    properties: dict[str, Any]  # basic properties present (None-valued ones left out)
    body: bytes
    exchange: str
    routing_key: str


# -- 0-9-1 -> 1.0 ---------------------------------------------------------------------------


def _value_from_091(value: Any) -> Any:
    """A 0-9-1 field value as RabbitMQ types it in AMQP 1.0 (``from_091``)."""
    kind = type(value)
    if kind is str:
        return value
    if kind is int:
        return value if -(2**31) <= value < 2**31 else Long(value)
    if isinstance(value, bool):
        return Boolean(value)
    if value is None or isinstance(value, float):
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
    properties: Mapping[str, Any] | object,
    body: bytes,
    exchange: str | None = None,
    routing_key: str | None = None,
) -> Message:
    """The AMQP 1.0 message RabbitMQ 4 stores in a stream for a 0-9-1 publish of ``body``
    with ``properties`` (``exchange`` and ``routing_key`` become the ``x-exchange`` and
    ``x-routing-key`` annotations, as a publish through an exchange gives them).

    ``properties`` is a mapping of the basic properties present, or an object with them as
    attributes (``amqp_protocol``'s basic properties class: no dict made per message)."""
    (
        content_type,
        content_encoding,
        headers,
        delivery_mode,
        priority,
        correlation_id,
        reply_to,
        expiration,
        message_id,
        timestamp,
        kind,
        user_id,
        app_id,
    ) = (
        map(properties.get, PROPERTY_FIELDS)
        if type(properties) is dict or isinstance(properties, Mapping)
        else _BASIC_FIELDS(properties)
    )
    header = Header(
        durable=delivery_mode == 2,
        priority=None if priority is None else UByte(priority),
        ttl=None if expiration is None else UInt(int(expiration)),
        first_acquirer=True,
        delivery_count=UInt(0),
    )
    annotations: dict[Any, Any] = {}
    if kind is not None:
        annotations[Symbol("x-basic-type")] = kind
    application: dict[str, Any] = {}
    for key, value in (headers or {}).items():
        if key.startswith("x-"):
            annotations[Symbol(key)] = _value_from_091(value)
        elif key == "CC" and isinstance(value, list | tuple):
            annotations[Symbol("x-cc")] = _value_from_091(value)
        elif type(value) is str or not isinstance(value, Mapping | list | tuple):
            application[key] = _value_from_091(value)
    if exchange is not None:
        annotations[Symbol("x-exchange")] = exchange
    if routing_key is not None:
        annotations[Symbol("x-routing-key")] = routing_key
    fields = Properties(
        message_id=_id_from_091(message_id),
        user_id=None if user_id is None else user_id.encode("utf-8"),
        reply_to=reply_to,
        correlation_id=_id_from_091(correlation_id),
        content_type=content_type,
        content_encoding=content_encoding,
        creation_time=None if timestamp is None else _timestamp_seconds(timestamp) * 1000,
        group_id=app_id,
    )
    if kind == AMQP10_TYPE:
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
    properties: Mapping[str, Any] | object,
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


#: Message annotations that need no work: where RabbitMQ routed a 0-9-1 publish.
_ROUTING_ANNOTATIONS = frozenset(("x-exchange", "x-routing-key"))


def _headers_of(annotations: dict[Any, Any], application: dict[Any, Any] | None) -> dict[str, Any]:
    """The 0-9-1 headers of the application properties and the ``x-`` annotations."""
    headers: dict[str, Any] = {}
    if application:
        for key, value in application.items():
            if type(key) is str and len(key.encode("utf-8")) <= _SHORTSTR_MAX:
                headers[key] = _value_to_091(value)
    for key, value in annotations.items():
        if key in _ROUTING_ANNOTATIONS:
            continue
        if type(key) is not Symbol or not key.startswith("x-") or len(key) > _SHORTSTR_MAX:
            continue
        if key == "x-cc":
            headers["CC"] = _value_to_091(value)
        elif key == "x-opt-rabbitmq-received-time" and type(value) is Timestamp:
            headers["timestamp_in_ms"] = int(value)
        elif not key.startswith(_INTERNAL_ANNOTATIONS):
            headers[str(key)] = _value_to_091(value)
    return headers


def _expiration(ttl: Any, annotations: dict[Any, Any]) -> str | None:
    """The header's ttl, else a 0-9-1 publish's ``x-basic-expiration``, as RabbitMQ renders
    it: the decimal digits of the number of milliseconds."""
    if ttl is None:
        ttl = annotations.get("x-basic-expiration")
        if type(ttl) is not str or not ttl.isdigit():
            return None
    return str(int(ttl))


def _routing_key(annotations: dict[Any, Any], queue: str) -> str:
    key = annotations.get("x-routing-key")
    if key is None:
        cc = annotations.get("x-cc")
        key = cc[0] if type(cc) is list and cc else queue
    return str(key)


_NO_FIELDS: tuple[Any, ...] = (None,) * 13


def delivery_fields(
    header: Sequence[Any] | None,
    annotations: dict[Any, Any] | None,
    properties: Sequence[Any] | None,
    application: dict[Any, Any] | None,
    body_is_data: bool,
    queue: str,
    offset: int | None,
) -> tuple[Any, ...]:
    """The basic properties (``PROPERTY_FIELDS``' order, None where absent), exchange and
    routing key that RabbitMQ 4 gives a 0-9-1 consumer of stream ``queue`` for a message of
    these sections (as decoded: lists and dicts, or ``Header``/``Properties``)."""
    annotations = annotations or {}
    props = _NO_FIELDS if properties is None else (*properties, *_NO_FIELDS)
    headers = (
        _headers_of(annotations, application)
        if application or not _ROUTING_ANNOTATIONS.issuperset(annotations)
        else {}
    )
    message_id = _id_to_091(props[0], "x-message-id", headers)
    correlation_id = _id_to_091(props[5], "x-correlation-id", headers)
    if offset is not None:
        headers[STREAM_OFFSET_HEADER] = offset
    durable = priority = ttl = None
    if header:
        durable = header[0]
        priority = header[1] if len(header) > 1 else None
        ttl = header[2] if len(header) > 2 else None
    if durable is None:
        delivery_mode = annotations.get("x-basic-delivery-mode", 2)
    else:
        delivery_mode = 2 if durable else 1
    if priority is None:
        priority = annotations.get("x-basic-priority")
    content_type, content_encoding, creation = props[6], props[7], props[9]
    kind = annotations.get("x-basic-type") if body_is_data else AMQP10_TYPE
    exchange = annotations.get("x-exchange")
    return (
        None if content_type is None else str(content_type),
        None if content_encoding is None else str(content_encoding),
        # RabbitMQ sorts a delivery's headers by name when it adds its own (x-stream-offset)
        dict(sorted(headers.items())) if headers else None,
        delivery_mode,
        priority,
        correlation_id,
        _shortstr(props[4]),
        _expiration(ttl, annotations),
        message_id,
        None if creation is None else creation // 1000,
        None if kind is None else str(kind),
        _user_id(props[1]),
        _shortstr(props[10]),
        "" if exchange is None else str(exchange),
        _routing_key(annotations, queue),
    )


def _user_id(value: bytes | None) -> str | None:
    if value is None or len(value) > _SHORTSTR_MAX:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def to_amqp091(data: Buffer, queue: str = "", offset: int | None = None) -> Amqp091Delivery:
    """What RabbitMQ 4 delivers to a 0-9-1 consumer of stream ``queue`` for the stored
    message ``data`` (with the ``x-stream-offset`` header when ``offset`` is given)."""
    sections = split_sections(data)
    is_data = sections.body_code == DATA
    fields = delivery_fields(
        sections.header,
        sections.message_annotations,
        sections.properties,
        sections.application_properties,
        is_data,
        queue,
        offset,
    )
    return Amqp091Delivery(
        {k: v for k, v in zip(PROPERTY_FIELDS, fields[:13], strict=True) if v is not None},
        body_091(sections, data),
        fields[13],
        fields[14],
    )


def body_091(sections: Sections, data: Buffer) -> bytes:
    """The 0-9-1 body of a stored message: its data sections joined, else (type
    ``amqp-1.0``) the stored bytes from the first body section to the end, footer included."""
    if sections.body_code == DATA:
        body = sections.body
        return body[0] if len(body) == 1 else b"".join(body)
    return bytes(data[sections.body_start :])


def split_once(data: bytes, part: bytes) -> tuple[bytes, bytes] | None:
    """``data`` before and after ``part``; None unless ``part`` is in it exactly once. What
    a message's encoding is cut around its id with: a second encoding that differs only in
    an id of the same length is the cuts with that id between (its length prefix the same)."""
    at = data.find(part)
    if at < 0 or data.find(part, at + 1) >= 0:
        return None
    return data[:at], data[at + len(part) :]
