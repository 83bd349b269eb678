"""The AMQP 1.0 message format (OASIS AMQP 1.0, part 3.2): the sections of a bare or annotated
message, encoded and decoded.

A message is a sequence of described sections, each with its descriptor code: header,
delivery-annotations, message-annotations, properties, application-properties, then the body
(one or more data sections, one or more amqp-sequence sections, or one amqp-value), then the
footer. ``Message`` holds them as plain values: the header and properties as named tuples of
their fields (None where absent), the annotations and application properties as dicts.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from amqp_protocol.amqp10.types import (
    AMQP10DecodeError,
    Buffer,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    decode_value,
    encode_into,
)

HEADER = 0x70
DELIVERY_ANNOTATIONS = 0x71
MESSAGE_ANNOTATIONS = 0x72
PROPERTIES = 0x73
APPLICATION_PROPERTIES = 0x74
DATA = 0x75
AMQP_SEQUENCE = 0x76
AMQP_VALUE = 0x77
FOOTER = 0x78
SECTION_NAMES = {
    HEADER: "header",
    DELIVERY_ANNOTATIONS: "delivery-annotations",
    MESSAGE_ANNOTATIONS: "message-annotations",
    PROPERTIES: "properties",
    APPLICATION_PROPERTIES: "application-properties",
    DATA: "data",
    AMQP_SEQUENCE: "amqp-sequence",
    AMQP_VALUE: "amqp-value",
    FOOTER: "footer",
}
#: The body's kinds, as ``Message.body_kind`` names them.
BODY_KINDS = {DATA: "data", AMQP_SEQUENCE: "amqp-sequence", AMQP_VALUE: "amqp-value"}


class Header(NamedTuple):
    durable: bool | None = None
    priority: int | None = None  # ubyte
    ttl: int | None = None  # uint, milliseconds
    first_acquirer: bool | None = None
    delivery_count: int | None = None  # uint


class Properties(NamedTuple):
    message_id: Any = None  # ulong, uuid, binary or string
    user_id: bytes | None = None
    to: str | None = None
    subject: str | None = None
    reply_to: str | None = None
    correlation_id: Any = None  # as message_id
    content_type: str | None = None  # symbol
    content_encoding: str | None = None  # symbol
    absolute_expiry_time: int | None = None  # timestamp, ms
    creation_time: int | None = None  # timestamp, ms
    group_id: str | None = None
    group_sequence: int | None = None  # uint
    reply_to_group_id: str | None = None


#: The AMQP type of each field, for encoding (a plain value takes its natural type).
_HEADER_TYPES = (bool, UByte, UInt, bool, UInt)
_PROPERTIES_TYPES = (
    None,
    bytes,
    str,
    str,
    str,
    None,
    Symbol,
    Symbol,
    Timestamp,
    Timestamp,
    str,
    UInt,
    str,
)


class Message(NamedTuple):
    """An AMQP 1.0 message. ``body`` is a list of ``bytes`` (data sections), a list of
    lists (amqp-sequence sections) or the value of the amqp-value section, as
    ``body_kind`` ("data", "amqp-sequence", "amqp-value") says."""

    body: Any = ()
    body_kind: str = "data"
    header: Header | None = None
    delivery_annotations: dict[Any, Any] | None = None
    message_annotations: dict[Any, Any] | None = None
    properties: Properties | None = None
    application_properties: dict[str, Any] | None = None
    footer: dict[Any, Any] | None = None

    @property
    def data(self) -> bytes:
        """The body of data sections as one ``bytes`` (their concatenation)."""
        if self.body_kind != "data":
            raise ValueError(f"the body is an {self.body_kind}, not data")
        return b"".join(self.body)


def _typed_fields(fields: tuple[Any, ...], types: tuple[Any, ...]) -> list[Any]:
    """A section's field list as encoded: each value in its field's type, every field
    written (nulls included, as RabbitMQ writes them)."""
    return [
        None if v is None else (t(v) if t is not None and type(v) is not t else v)
        for v, t in zip(fields, types, strict=True)
    ]


def _section(out: bytearray, code: int, value: Any) -> None:
    out += bytes((0x00, 0x53, code))
    encode_into(out, value)


def _annotations(values: dict[Any, Any]) -> dict[Any, Any]:
    """Annotation keys are symbols (or ulongs): str keys become symbols."""
    return {Symbol(k) if type(k) is str else k: v for k, v in values.items()}


def encode_message(message: Message) -> bytes:
    """``message`` as its sections, in the order of the spec; absent sections are left out."""
    out = bytearray()
    if message.header is not None:
        _section(out, HEADER, _typed_fields(message.header, _HEADER_TYPES))
    if message.delivery_annotations is not None:
        _section(out, DELIVERY_ANNOTATIONS, _annotations(message.delivery_annotations))
    if message.message_annotations is not None:
        _section(out, MESSAGE_ANNOTATIONS, _annotations(message.message_annotations))
    if message.properties is not None:
        _section(out, PROPERTIES, _typed_fields(message.properties, _PROPERTIES_TYPES))
    if message.application_properties is not None:
        _section(out, APPLICATION_PROPERTIES, message.application_properties)
    if message.body_kind == "data":
        for chunk in message.body:
            _section(out, DATA, bytes(chunk))
    elif message.body_kind == "amqp-sequence":
        for items in message.body:
            _section(out, AMQP_SEQUENCE, list(items))
    elif message.body_kind == "amqp-value":
        _section(out, AMQP_VALUE, message.body)
    else:
        raise ValueError(
            f"body_kind {message.body_kind!r} is not one of data, amqp-sequence, amqp-value"
        )
    if message.footer is not None:
        _section(out, FOOTER, _annotations(message.footer))
    return bytes(out)


def section_code(data: Buffer, offset: int) -> tuple[int, int]:
    """The descriptor code of the section at ``offset`` and the offset of its value."""
    if data[offset] != 0x00:
        raise AMQP10DecodeError(f"a section (a described value) expected at {offset}")
    kind = data[offset + 1]
    if kind == 0x53:
        return data[offset + 2], offset + 3
    descriptor, position = decode_value(data, offset + 1)
    if isinstance(descriptor, int) and HEADER <= descriptor <= FOOTER:
        return descriptor, position
    raise AMQP10DecodeError(f"section descriptor {descriptor!r} at {offset} is not a message's")


class Sections(NamedTuple):
    """A message's sections as decoded values (lists for the header and the properties, as
    long as the sender wrote them), and where its body begins: what ``split_sections``
    gives for the readers that need no ``Message`` (the source's column decoder)."""

    header: list[Any] | None
    delivery_annotations: dict[Any, Any] | None
    message_annotations: dict[Any, Any] | None
    properties: list[Any] | None
    application_properties: dict[Any, Any] | None
    body_code: int  # DATA, AMQP_SEQUENCE or AMQP_VALUE
    body: list[Any]  # the value of each body section
    body_start: int  # the offset of the first body section
    footer: dict[Any, Any] | None


def split_sections(data: Buffer) -> Sections:
    """The sections of one encoded message (AMQP10DecodeError, naming where, if malformed)."""
    found: dict[int, Any] = {}
    body: list[Any] = []
    body_code = DATA
    body_start = -1
    offset, end = 0, len(data)
    while offset < end:
        start = offset
        if data[offset] == 0x00 and data[offset + 1] == 0x53:
            code, offset = data[offset + 2], offset + 3
        else:
            code, offset = section_code(data, offset)
        if code == DATA and data[offset] == 0xA0:  # the usual small data section, inline
            value_end = offset + 2 + data[offset + 1]
            if value_end > end:
                raise AMQP10DecodeError(f"the data section at {start} runs past the end")
            value: Any = bytes(data[offset + 2 : value_end])
            offset = value_end
        else:
            value, offset = decode_value(data, offset)
        if DATA <= code <= AMQP_VALUE:
            if not body:
                body_code, body_start = code, start
            elif code != body_code:
                raise AMQP10DecodeError(f"a body mixes sections of different kinds, at {start}")
            body.append(value)
        elif HEADER <= code <= FOOTER:
            found[code] = value
        else:
            raise AMQP10DecodeError(f"section descriptor 0x{code:02x} at {start} is unknown")
    return Sections(
        found.get(HEADER),
        found.get(DELIVERY_ANNOTATIONS),
        found.get(MESSAGE_ANNOTATIONS),
        found.get(PROPERTIES),
        found.get(APPLICATION_PROPERTIES),
        body_code,
        body,
        end if body_start < 0 else body_start,
        found.get(FOOTER),
    )


def decode_message(data: Buffer) -> Message:
    """The sections of one encoded message (AMQP10DecodeError, naming where, if malformed)."""
    sections = split_sections(data)
    header = sections.header
    properties = sections.properties
    body_code = sections.body_code
    body = sections.body
    return Message(
        body=body[0] if body_code == AMQP_VALUE and body else body,
        body_kind=BODY_KINDS[body_code],
        header=None if header is None else Header(*header[:5]),
        delivery_annotations=sections.delivery_annotations,
        message_annotations=sections.message_annotations,
        properties=None if properties is None else Properties(*properties[:13]),
        application_properties=sections.application_properties,
        footer=sections.footer,
    )
