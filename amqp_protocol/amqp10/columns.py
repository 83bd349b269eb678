"""Stored stream messages to the source's columns, as a 0-9-1 consumer of RabbitMQ 4 would
have them, without a Python object per message but for its body (``StoredColumns``).

The columns are those of ``amqp_spark.schema`` that a stored message determines (``body``,
``exchange``, ``routing_key``, ``offset``, ``timestamp`` in whole seconds, ``headers`` as the
0-9-1 codec's dicts, ``delivery_mode``, ``priority`` and the string properties); the source
fills the rest (queue, delivery tag, redelivered), renders ``headers`` and ``timestamp`` as
it does for 0-9-1 deliveries and adds each row's ``x-stream-offset`` header
(``amqp_spark.source.arrow``), so a row read over the stream protocol equals the row read
over 0-9-1.

Why it is fast: the messages of a stream mostly share everything before their body (one
producer's header, annotations and properties). Each record's sections before the body are
skipped by their encoded lengths, not decoded; the bytes skipped are the key of a cache of
the *kind* of message they make (every column but the body and the offset), and a row is
its body and the number of its kind: the columns are built from the distinct kinds by
index, in C (``pyarrow``'s ``take``). A message like the one before costs a comparison of
its prefix and its body's slice; a message that differs (its own id or timestamp) decodes
only its sections not seen before. Records of another shape (a body that is not one data
section) are decoded in full, each a kind of its own.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, NamedTuple

from amqp_protocol.amqp10.amqp091 import (
    PROPERTY_FIELDS,
    body_091,
    delivery_fields,
)
from amqp_protocol.amqp10.message import (
    APPLICATION_PROPERTIES,
    DATA,
    HEADER,
    MESSAGE_ANNOTATIONS,
    PROPERTIES,
    split_sections,
)
from amqp_protocol.amqp10.types import Buffer, decode

#: The columns of a kind of message (``StoredColumns.fields``): the basic properties in
#: ``PROPERTY_FIELDS``' order, the exchange and the routing key.
FIELDS: tuple[str, ...] = (*PROPERTY_FIELDS, "exchange", "routing_key")
#: How many distinct message prefixes one ``StoredColumns`` remembers.
CACHE_SIZE = 4096
_u32 = struct.Struct(">I")
#: Encoded values whose length is in their next byte (list8, map8, array8, vbin8, str8,
#: sym8) or next four bytes (their 32-bit forms).
_SIZE8 = frozenset((0xC0, 0xC1, 0xE0, 0xA0, 0xA1, 0xA3))
_SIZE32 = frozenset((0xD0, 0xD1, 0xF0, 0xB0, 0xB1, 0xB3))


class _Scan(NamedTuple):
    """A record whose sections before its one data section were skipped by their lengths."""

    prefix_end: int  # where the body section begins
    spans: list[tuple[int, int, int]]  # (descriptor code, value start, value end) each
    body: bytes


def _scan(record: Buffer) -> _Scan | None:
    """``record``'s sections before its body and its data, when they can be skipped by their
    lengths and the body is one data section; None otherwise (then the record is decoded
    in full)."""
    spans: list[tuple[int, int, int]] = []
    position, end = 0, len(record)
    while position + 3 < end:
        if record[position] != 0x00 or record[position + 1] != 0x53:
            return None
        code = record[position + 2]
        constructor = record[position + 3]
        value = position + 4
        if constructor in _SIZE8:
            after = value + 1 + record[value]
        elif constructor in _SIZE32:
            after = value + 4 + _u32.unpack_from(record, value)[0]
        elif constructor == 0x40 or constructor == 0x45:
            after = value
        else:
            return None
        if code == DATA:
            if after != end or constructor not in (0xA0, 0xB0):
                return None  # more body sections, a footer: the full decoder's case
            start = value + (1 if constructor == 0xA0 else 4)
            return _Scan(position, spans, bytes(record[start:after]))
        if not HEADER <= code < DATA or after > end:
            return None
        spans.append((code, value - 1, after))
        position = after
    return None


def _data_at(record: Buffer, position: int) -> bytes | None:
    """The body of ``record`` when one data section runs from ``position`` to its end (what
    ``_scan`` finds after a prefix it scanned before); None otherwise."""
    if record[position : position + 3] != b"\x00\x53\x75":
        return None
    constructor = record[position + 3]
    if constructor == 0xA0:
        start = position + 5
        after = start + record[position + 4]
    elif constructor == 0xB0:
        start = position + 8
        after = start + _u32.unpack_from(record, position + 4)[0]
    else:
        return None
    return bytes(record[start:after]) if after == len(record) else None


def _fields_of_sections(
    record: Buffer, spans: list[tuple[int, int, int]], queue: str, cache: dict[bytes, Any]
) -> tuple[Any, ...]:
    """The fields of a record from its sections before the body, each section decoded once
    per distinct encoding (``cache``; a message's own id or timestamp changes only its
    properties section)."""
    found: dict[int, Any] = {}
    for code, start, after in spans:
        raw = bytes(record[start:after])
        value = cache.get(raw)
        if value is None:
            value = decode(raw)
            if len(cache) >= CACHE_SIZE:
                cache.clear()
            cache[raw] = value
        found[code] = value
    return delivery_fields(
        found.get(HEADER),
        found.get(MESSAGE_ANNOTATIONS),
        found.get(PROPERTIES),
        found.get(APPLICATION_PROPERTIES),
        True,
        queue,
        None,
    )


def _full(record: Buffer, queue: str) -> tuple[tuple[Any, ...], bytes]:
    """The fields (without the stream offset) and the 0-9-1 body of any record."""
    sections = split_sections(record)
    fields = delivery_fields(
        sections.header,
        sections.message_annotations,
        sections.properties,
        sections.application_properties,
        sections.body_code == DATA,
        queue,
        None,
    )
    return fields, body_091(sections, record)


class StoredColumns:
    """Records of one stream queue gathered for one record batch, a run of consecutive
    offsets at a time: each row's body, its offset (``runs``) and its kind (``kinds``: an
    index into ``fields``, the distinct tuples of the ``FIELDS`` columns)."""

    def __init__(self, queue: str) -> None:
        self.queue = queue
        self.bodies: list[bytes] = []
        #: (first offset, number of rows) of each run of consecutive offsets, in order
        self.runs: list[tuple[int, int]] = []
        self.kinds: list[int] = []
        #: the distinct values of the ``FIELDS`` columns; headers without ``x-stream-offset``
        self.fields: list[tuple[Any, ...]] = []
        self._kind_of_prefix: dict[bytes, int] = {}
        self._sections: dict[bytes, Any] = {}

    def __len__(self) -> int:
        return len(self.bodies)

    def add(self, records: Iterable[Buffer], first_offset: int) -> None:
        """Rows for ``records``, the stream's entries from ``first_offset`` on."""
        bodies, kinds = self.bodies, self.kinds
        before = len(bodies)
        last_prefix, last_kind = b"", -1
        for record in records:
            size = len(last_prefix)
            if size and record[:size] == last_prefix:
                body = _data_at(record, size)
                if body is not None:
                    kinds.append(last_kind)
                    bodies.append(body)
                    continue
            scan = _scan(record)
            if scan is None:
                fields, body = _full(record, self.queue)
                kinds.append(self._new_kind(fields))
                bodies.append(body)
                continue
            prefix = bytes(record[: scan.prefix_end])
            if prefix != last_prefix:
                kind = self._kind_of_prefix.get(prefix)
                if kind is None:
                    fields = _fields_of_sections(record, scan.spans, self.queue, self._sections)
                    if len(self._kind_of_prefix) >= CACHE_SIZE:
                        self._kind_of_prefix.clear()
                    kind = self._kind_of_prefix[prefix] = self._new_kind(fields)
                last_prefix, last_kind = prefix, kind
            kinds.append(last_kind)
            bodies.append(scan.body)
        if len(bodies) > before:
            self.runs.append((first_offset, len(bodies) - before))

    def _new_kind(self, fields: tuple[Any, ...]) -> int:
        self.fields.append(fields)
        return len(self.fields) - 1
