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
from amqp_protocol.amqp10.amqp091 import AMQP10_TYPE
from amqp_protocol.values import Long, encode_shortstr

from ..model.message import Message, StoredMessage
from ..store.message_codec import decode_message, encoded_parts

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


#: The end of ``from_amqp091``'s encoding of an empty body: one data section, empty.
_EMPTY_DATA_SECTION = b"\x00\x53\x75\xa0\x00"
#: What ``Amqp10Records`` keeps for a header whose records are raw / converted whole.
_RAW, _WHOLE = 0, 1
_VBIN8, _VBIN32 = b"\x00\x53\x75\xa0", b"\x00\x53\x75\xb0"


class Amqp10Records:
    """``amqp10_of`` for the records of one chunk, which mostly share their envelope and
    content header: the sections before the body are encoded once per distinct pair, and
    each record's body appended as its data section. A raw record is its body; one whose
    body is an AMQP 1.0 encoding (type ``amqp-1.0``) takes ``amqp10_of``."""

    def __init__(self) -> None:
        self._prefixes: dict[tuple[bytes, bytes], bytes | int] = {}

    def convert(self, payload: bytes) -> bytes:
        envelope, header, body = encoded_parts(payload)
        key = (envelope, header)
        prefix = self._prefixes.get(key)
        if prefix is None:
            prefix = self._prefixes[key] = self._prefix(payload)
        if not isinstance(prefix, bytes):
            return body if prefix == _RAW else amqp10_of(payload)
        size = len(body)
        if size < 0x100:
            return b"".join((prefix, _VBIN8, size.to_bytes(1, "big"), body))
        return b"".join((prefix, _VBIN32, size.to_bytes(4, "big"), body))

    @staticmethod
    def _prefix(payload: bytes) -> bytes | int:
        stored = decode_message(payload)
        properties = stored.properties.present()
        if is_raw(stored):
            return _RAW
        if properties.get("type") == AMQP10_TYPE:
            return _WHOLE
        empty = from_amqp091(properties, b"", stored.exchange, stored.routing_key)
        assert empty.endswith(_EMPTY_DATA_SECTION)
        return empty[: -len(_EMPTY_DATA_SECTION)]


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
