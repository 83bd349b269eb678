"""0-9-1 deliveries of a stream's records (AMQP 1.0 messages), as RabbitMQ 4 makes them.

A 0-9-1 consumer of a stream gets each stored message as ``amqp_protocol.amqp10.to_amqp091``
says, with RabbitMQ's ``x-stream-offset`` header (a long) among the headers. A stream's
messages mostly share everything before their body (one publisher's properties and
annotations): that prefix is the key of a *kind*, whose exchange, routing key and content
header are converted once, the header split around the offset's 8 value bytes. A record
that starts with its predecessor's prefix and whose body is one data section after it is
delivered from its kind: a comparison, a slice for the body and the offset packed into the
header. Other records (several body sections, an ``amqp-value`` body, a footer) are
converted in full, and bytes that are no AMQP 1.0 message come as the body with the offset
header alone.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, NamedTuple

from amqp_protocol import SPEC_0_9_1
from amqp_protocol.amqp10 import AMQP10DecodeError, to_amqp091
from amqp_protocol.amqp10.amqp091 import STREAM_OFFSET_HEADER
from amqp_protocol.amqp10.message import DATA, split_sections
from amqp_protocol.values import Long

from ..model.message import HEADER_PREFIX, Message, QueuedMessage, StoredMessage, encode_envelope
from .log import Record

OFFSET_HEADER = STREAM_OFFSET_HEADER

_BASIC_PROPERTIES = SPEC_0_9_1.properties("basic")
_U32 = struct.Struct(">I")
_DATA_SECTION = bytes((0x00, 0x53, DATA))
_VBIN8 = _DATA_SECTION + b"\xa0"
#: Two offsets whose encodings differ in each of their 8 bytes: where a header's encodings
#: with either differ is where the offset's value is.
_PROBES = (0x0101010101010101, 0x0202020202020202)
#: How many distinct prefixes a reader keeps.
_KINDS_KEPT = 4096


class _Kind(NamedTuple):
    """What the records sharing ``prefix`` are delivered with."""

    prefix: bytes
    exchange: str
    routing_key: str
    envelope: bytes
    #: the content header of a record: ``header.pack(body size, offset)``
    header: _HeaderTemplate


class _HeaderTemplate:
    """A content header whose body size and offset value vary: one ``pack`` each."""

    __slots__ = ("_head", "_middle", "_struct", "_tail")

    def __init__(self, encoded: bytes, at: int) -> None:
        self._head = encoded[:4]  # class id, weight (then the body size)
        self._middle = encoded[HEADER_PREFIX:at]
        self._tail = encoded[at + 8 :]
        self._struct = struct.Struct(f">4sQ{len(self._middle)}sq{len(self._tail)}s")

    def pack(self, body_size: int, offset: int) -> bytes:
        return self._struct.pack(self._head, body_size, self._middle, offset, self._tail)


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


def _data_at(record: bytes, position: int) -> bytes | None:
    """The body of ``record`` when one data section runs from ``position`` to its end."""
    if record[position : position + 3] != _DATA_SECTION:
        return None
    constructor = record[position + 3 : position + 4]
    if constructor == b"\xa0" and len(record) >= position + 5:
        start, size = position + 5, record[position + 4]
    elif constructor == b"\xb0" and len(record) >= position + 8:
        start, size = position + 8, _U32.unpack_from(record, position + 4)[0]
    else:
        return None
    return record[start:] if start + size == len(record) else None


def _converted(payload: bytes, queue: str, offset: int) -> Message:
    """The full conversion of one record (``to_amqp091``), the offset header a long."""
    try:
        delivery = to_amqp091(payload, queue, offset)
    except (AMQP10DecodeError, ValueError, IndexError):
        properties = _BASIC_PROPERTIES(headers={OFFSET_HEADER: Long(offset)})
        return Message("", queue, properties, payload)
    fields = dict(delivery.properties)
    fields["headers"] = {**fields.get("headers", {}), OFFSET_HEADER: Long(offset)}
    return Message(
        delivery.exchange, delivery.routing_key, _BASIC_PROPERTIES(**fields), delivery.body
    )


class Amqp091Reader:
    """The 0-9-1 deliveries of the records of stream ``queue``, kinds kept across chunks."""

    def __init__(self, queue: str) -> None:
        self.queue = queue
        self._kinds: dict[bytes, _Kind | None] = {}
        #: the kind of the last record delivered: the next chunk's first record's likely one
        self._last: _Kind | None = None

    def _kind_of(self, payload: bytes) -> tuple[_Kind, bytes] | None:
        """The kind of ``payload`` and its body; None when it takes the full conversion."""
        try:
            sections = split_sections(payload)
        except (AMQP10DecodeError, ValueError, IndexError):
            return None
        if sections.body_code != DATA or len(sections.body) != 1 or sections.footer:
            return None
        prefix = payload[: sections.body_start]
        if prefix in self._kinds:
            kind = self._kinds[prefix]
        else:
            if len(self._kinds) >= _KINDS_KEPT:
                self._kinds.clear()
            kind = self._kinds[prefix] = self._new_kind(payload, prefix)
        body = _data_at(payload, len(prefix))
        return None if kind is None or body is None else (kind, body)

    def _new_kind(self, payload: bytes, prefix: bytes) -> _Kind | None:
        try:
            delivery = to_amqp091(payload, self.queue, 0)
        except (AMQP10DecodeError, ValueError):
            return None
        encoded = []
        for probe in _PROBES:
            fields = dict(delivery.properties)
            fields["headers"] = {**fields["headers"], OFFSET_HEADER: Long(probe)}
            encoded.append(_BASIC_PROPERTIES(**fields).encode_header(0))
        first, second = encoded
        differ = [i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b]
        if len(differ) != 8 or differ[-1] - differ[0] != 7:
            return None
        at = differ[0]
        return _Kind(
            prefix,
            delivery.exchange,
            delivery.routing_key,
            encode_envelope(delivery.exchange, delivery.routing_key),
            _HeaderTemplate(first, at),
        )

    def deliveries(self, records: Sequence[Record], sink: object) -> list[StreamDelivery]:
        """One delivery (for ``sink``) per record, in order."""
        out: list[StreamDelivery] = []
        kind = self._last
        prefix = b"" if kind is None else kind.prefix
        for record in records:
            payload, offset = record.payload, record.offset
            body = None
            if kind is not None and payload.startswith(prefix):
                n = len(prefix)
                # the usual body: one short data section (vbin8) to the end
                size_at = n + 4
                if (
                    payload[n:size_at] == _VBIN8
                    and len(payload) > size_at
                    and len(payload) == size_at + 1 + payload[size_at]
                ):
                    body = payload[n + 5 :]
                else:
                    body = _data_at(payload, n)
            if body is None:
                found = self._kind_of(payload)
                kind, body = found if found is not None else (None, None)
                prefix = b"" if kind is None else kind.prefix
            if kind is None or body is None:
                message: Message = _converted(payload, self.queue, offset)
            else:
                header = kind.header.pack(len(body), offset)
                message = LoggedMessage(
                    kind.exchange, kind.routing_key, kind.envelope, header, body
                )
            delivery = StreamDelivery(message, offset)
            delivery.sink = sink
            out.append(delivery)
        self._last = kind
        return out
