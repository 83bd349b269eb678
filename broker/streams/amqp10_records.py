"""Stream records are AMQP 1.0 messages, as RabbitMQ 4 stores them.

A stream-protocol publish is stored as the bytes it came as; a 0-9-1 publish as the AMQP
1.0 message RabbitMQ 4 stores for it (``amqp_protocol.amqp10.from_amqp091``: the
properties, headers as application properties or ``x-`` annotations, ``x-exchange`` and
``x-routing-key``). ``Amqp10Writer`` encodes the sections before the body once per
distinct exchange, routing key and content header (a publisher's messages mostly share
them) and appends each body as its data section. ``delivery.py`` turns the records back
into 0-9-1 deliveries.

``legacy_chunk_records`` converts the records of the broker's old log format (a 0-9-1
message as ``store.message_codec`` encodes it, or a stream publish's bytes as the body of
a record marked ``x-stream-raw-record``) for ``legacy_log.migrate``.
"""

from __future__ import annotations

from amqp_protocol.amqp10 import from_amqp091
from amqp_protocol.amqp10.amqp091 import AMQP10_TYPE, split_once

from ..model.message import HEADER_PREFIX, Message
from ..store.message_codec import decode_message
from .chunk_filter import InvalidFilter, chunk_filter, filter_value_of
from .legacy_log import LegacyChunk

#: The header of an old-format record that holds a stream publish's bytes as they came.
RAW_RECORD_HEADER = "x-stream-raw-record"
#: The end of ``from_amqp091``'s encoding of an empty body: one data section, empty.
_EMPTY_DATA_SECTION = b"\x00\x53\x75\xa0\x00"
_VBIN8, _VBIN32 = b"\x00\x53\x75\xa0", b"\x00\x53\x75\xb0"
#: How many distinct prefixes a writer keeps.
_PREFIXES_KEPT = 4096


def _prefix(message: Message) -> bytes | None:
    """The encoded sections before the body of ``message`` 's AMQP 1.0 form; None when
    its body is itself an AMQP 1.0 encoding (type ``amqp-1.0``: converted whole)."""
    properties = message.properties.present()
    if properties.get("type") == AMQP10_TYPE:
        return None
    empty = from_amqp091(properties, b"", message.exchange, message.routing_key)
    assert empty.endswith(_EMPTY_DATA_SECTION)
    return empty[: -len(_EMPTY_DATA_SECTION)]


class Amqp10Writer:
    """``from_amqp091`` for the 0-9-1 messages published to one stream.

    The sections before the body are encoded once per distinct exchange, routing key and
    content header. Messages that differ only in their ``message_id`` (a producer's ids:
    every header distinct) are encoded once per *shape* (the header around the id, the
    id's length) and cut around the id: the others are the cuts with their own id between
    (``split_once``), a fraction of the full conversion's cost."""

    def __init__(self) -> None:
        self._prefixes: dict[tuple[bytes, bytes], bytes | None] = {}
        #: per shape, its first message's prefix before and after the id's bytes
        self._cuts: dict[tuple[bytes, bytes, bytes, int], tuple[bytes, bytes] | None] = {}

    def encode(self, message: Message) -> bytes:
        """The AMQP 1.0 message RabbitMQ 4 stores for the 0-9-1 ``message``."""
        header = message.header_payload[HEADER_PREFIX:]
        key = (message.envelope, header)
        if key in self._prefixes:
            prefix = self._prefixes[key]
        else:
            prefix = self._cut_prefix(message, header)
            if prefix is None:
                if len(self._prefixes) >= _PREFIXES_KEPT:
                    self._prefixes.clear()
                prefix = self._prefixes[key] = _prefix(message)
        body = message.body
        if prefix is None:
            properties = message.properties.present()
            return from_amqp091(properties, body, message.exchange, message.routing_key)
        size = len(body)
        if size < 0x100:
            return b"".join((prefix, _VBIN8, size.to_bytes(1, "big"), body))
        return b"".join((prefix, _VBIN32, size.to_bytes(4, "big"), body))

    def _cut_prefix(self, message: Message, header: bytes) -> bytes | None:
        """``message``'s prefix put together from its shape's cut; None when it has no
        ``message_id`` to cut around, or its shape's first message could not be cut."""
        message_id = message.properties.message_id
        if not isinstance(message_id, str) or message_id.startswith("urn:uuid:"):
            return None  # from_amqp091 stores a urn:uuid id as a uuid, not as its text
        raw = message_id.encode()
        around = split_once(header, bytes((len(raw),)) + raw)  # a shortstr in the header
        if around is None:
            return None
        shape = (message.envelope, *around, len(raw))
        if shape in self._cuts:
            cut = self._cuts[shape]
            return None if cut is None else b"".join((cut[0], raw, cut[1]))
        if len(self._cuts) >= _PREFIXES_KEPT:
            self._cuts.clear()
        prefix = _prefix(message)
        self._cuts[shape] = None if prefix is None else split_once(prefix, raw)
        return prefix


def legacy_chunk_records(chunk: LegacyChunk, filter_size: int) -> tuple[list[bytes], bytes]:
    """The AMQP 1.0 records and bloom filter of a chunk of the old log format. A filter
    of version 2 is kept; a version 1 chunk (no filter) gets the filter of its messages'
    ``x-stream-filter-value`` headers (it predates stream-protocol publishes)."""
    writer = Amqp10Writer()
    records: list[bytes] = []
    values: list[str] = []
    for payload in chunk.payloads:
        stored = decode_message(payload)
        headers = stored.properties.headers or {}
        if headers.get(RAW_RECORD_HEADER) is True:
            records.append(stored.body)
            continue
        records.append(writer.encode(stored))
        try:
            values.append(filter_value_of(headers))
        except InvalidFilter:
            values.append("")
    if chunk.filter_bytes or not any(values):
        return records, chunk.filter_bytes
    return records, chunk_filter(values, filter_size)
