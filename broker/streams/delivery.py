"""Deliveries of a stream's records, built from the log's bytes without decoding them.

A record holds a message as ``store.message_codec`` encodes it: the envelope (exchange and
routing key, as basic.deliver ends with them), the content-header payload and the body. A
delivery needs those bytes with one change, RabbitMQ's ``x-stream-offset`` header (a long)
added to the properties' headers table, so the header is patched in place: the headers
flag is set and the entry is appended to the table (or a table holding only it is
inserted). A chunk's records mostly share one content header, so the bytes around the
offset are computed once per distinct header in the chunk. Properties are decoded only if
something asks for them (deliveries of the 0-9 classes). A record published over the stream
protocol (``amqp10_records``) takes the decoded path: it is converted as RabbitMQ 4 converts
an AMQP 1.0 message for a 0-9-1 consumer.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from amqp_protocol.values import Long, encode_shortstr

from ..model.message import HEADER_PREFIX, Message, QueuedMessage, StoredMessage
from ..store.message_codec import decode_message, encoded_parts, envelope_names
from .amqp10_records import RAW_RECORD_NAME, amqp091_of_raw, is_raw
from .log import Record

OFFSET_HEADER = "x-stream-offset"

_FLAGS = struct.Struct(">H")
_TABLE_SIZE = struct.Struct(">I")
_OFFSET_VALUE = struct.Struct(">q")
#: The property flags of content-type, content-encoding and headers (basic's first three).
_CONTENT_TYPE, _CONTENT_ENCODING, _HEADERS = 0x8000, 0x4000, 0x2000
_OFFSET_NAME = encode_shortstr(OFFSET_HEADER)
#: The table entry the offset adds, but its 8 value bytes: name, then type ``l``.
_OFFSET_ENTRY = _OFFSET_NAME + b"l"
_OFFSET_ENTRY_SIZE = len(_OFFSET_ENTRY) + _OFFSET_VALUE.size

#: A patched header as the bytes before and after the offset's value.
HeaderTemplate = tuple[bytes, bytes]


def header_template(header: bytes) -> HeaderTemplate | None:
    """The content-header payload ``header`` with the offset entry added, split around the
    offset's value; None when its headers table already names ``x-stream-offset`` (the
    entry then replaces the old value in place, which the decoded path does) or marks a
    raw record (converted on the decoded path)."""
    (flags,) = _FLAGS.unpack_from(header, HEADER_PREFIX)
    pos = HEADER_PREFIX + _FLAGS.size
    for flag in (_CONTENT_TYPE, _CONTENT_ENCODING):
        if flags & flag:
            pos += 1 + header[pos]
    head = header[:HEADER_PREFIX] + _FLAGS.pack(flags | _HEADERS) + header[HEADER_PREFIX + 2 : pos]
    if flags & _HEADERS:
        (size,) = _TABLE_SIZE.unpack_from(header, pos)
        end = pos + _TABLE_SIZE.size + size
        table = header[pos + _TABLE_SIZE.size : end]
        if _OFFSET_NAME in table or RAW_RECORD_NAME in table:
            return None
    else:
        size, end, table = 0, pos, b""
    head += _TABLE_SIZE.pack(size + _OFFSET_ENTRY_SIZE) + table + _OFFSET_ENTRY
    return head, header[end:]


class LoggedMessage(StoredMessage):
    """A stream record as delivered: its content header carries the offset header, which
    the decoded properties give as a long, as a delivery from a decoded message would."""

    __slots__ = ()

    def decode_properties(self, header: bytes) -> Any:
        properties = super().decode_properties(header)
        headers = properties.headers
        headers[OFFSET_HEADER] = Long(headers[OFFSET_HEADER])
        return properties


class StreamDelivery(QueuedMessage):
    """A message read from the log for one delivery, with the offset header added."""

    __slots__ = ("offset", "sink")

    def __init__(self, message: Message, offset: int) -> None:
        super().__init__(message, None)
        self.offset = offset
        self.sink: object | None = None


def _decoded_delivery(record: Record, queue: str) -> StreamDelivery:
    """The slow path: decode the message, set the header, encode it again on delivery."""
    stored = decode_message(record.payload)
    if is_raw(stored):
        return StreamDelivery(
            amqp091_of_raw(stored, queue, record.offset, OFFSET_HEADER), record.offset
        )
    properties = stored.properties
    properties.headers = {**(properties.headers or {}), OFFSET_HEADER: Long(record.offset)}
    message = Message(
        stored.exchange, stored.routing_key, properties, stored.body, envelope=stored.envelope
    )
    return StreamDelivery(message, record.offset)


def chunk_deliveries(
    records: Sequence[Record], sink: object, queue: str = ""
) -> list[StreamDelivery]:
    """One delivery (for ``sink``) per record of a chunk of stream ``queue``, in order."""
    templates: dict[bytes, HeaderTemplate | None] = {}
    envelopes: dict[bytes, tuple[str, str]] = {}
    pack_offset: Callable[[int], bytes] = _OFFSET_VALUE.pack
    out: list[StreamDelivery] = []
    for record in records:
        envelope, header, body = encoded_parts(record.payload)
        if header in templates:
            template = templates[header]
        else:
            template = templates[header] = header_template(header)
        if template is None:
            delivery = _decoded_delivery(record, queue)
        else:
            names = envelopes.get(envelope)
            if names is None:
                names = envelopes[envelope] = envelope_names(envelope)
            offset = record.offset
            patched = template[0] + pack_offset(offset) + template[1]
            message = LoggedMessage(names[0], names[1], envelope, patched, body)
            delivery = StreamDelivery(message, offset)
        delivery.sink = sink
        out.append(delivery)
    return out
