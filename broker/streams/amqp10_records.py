"""Records of a stream in the form their protocol published them.

A 0-9-1 publish is stored as the broker's 0-9-1 message (``store.message_codec``); a
stream-protocol publish is stored as the bytes it came as (normally an AMQP 1.0 message),
the body of a record marked with the ``x-stream-raw-record`` header. Each side reads its
own kind as stored and the other kind converted as RabbitMQ 4 converts it
(``amqp_protocol.amqp10``): a stream-protocol reader gets a 0-9-1 record as the AMQP 1.0
message RabbitMQ 4 stores for that publish (``from_amqp091``), a 0-9-1 consumer gets a
raw record as RabbitMQ 4 delivers that AMQP 1.0 message over 0-9-1 (``to_amqp091``).
"""

from __future__ import annotations

from amqp_protocol import SPEC_0_9_1
from amqp_protocol.amqp10 import from_amqp091, to_amqp091
from amqp_protocol.values import Long, encode_shortstr

from ..model.message import Message, StoredMessage
from ..store.message_codec import decode_message

#: The header of a record that holds a stream publish's bytes as they came.
RAW_RECORD_HEADER = "x-stream-raw-record"
#: Its name as a content header's table holds it: a header without it is no raw record.
RAW_RECORD_NAME = encode_shortstr(RAW_RECORD_HEADER)
_BASIC_PROPERTIES = SPEC_0_9_1.properties("basic")
_RAW_PROPERTIES = {"headers": {RAW_RECORD_HEADER: True}}


def raw_record(data: bytes, stream: str) -> Message:
    """The record to store for the bytes of a stream-protocol publish to ``stream``."""
    return Message("", stream, _BASIC_PROPERTIES(**_RAW_PROPERTIES), data)


def is_raw(stored: StoredMessage) -> bool:
    headers = stored.properties.headers
    return bool(headers) and headers.get(RAW_RECORD_HEADER) is True


def amqp10_of(payload: bytes) -> bytes:
    """The AMQP 1.0 message (a raw record: its bytes) of one stored record."""
    stored = decode_message(payload)
    if is_raw(stored):
        return stored.body
    return from_amqp091(
        stored.properties.present(), stored.body, stored.exchange, stored.routing_key
    )


def amqp091_of_raw(stored: StoredMessage, queue: str, offset: int, offset_header: str) -> Message:
    """What a 0-9-1 consumer of ``queue`` gets for a raw record at ``offset``: the AMQP 1.0
    message as RabbitMQ 4 delivers it, with the offset header; bytes that are no AMQP 1.0
    message come as the body, with the offset header alone."""
    try:
        delivery = to_amqp091(stored.body, queue, offset)
    except ValueError:
        properties = _BASIC_PROPERTIES(headers={offset_header: Long(offset)})
        return Message("", queue, properties, stored.body)
    fields = dict(delivery.properties)
    headers = dict(fields.get("headers") or {})
    headers[offset_header] = Long(offset)
    fields["headers"] = headers
    return Message(
        delivery.exchange, delivery.routing_key, _BASIC_PROPERTIES(**fields), delivery.body
    )
