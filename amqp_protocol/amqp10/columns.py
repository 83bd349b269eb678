"""Stored stream messages to the source's columns, as a 0-9-1 consumer of RabbitMQ 4 would
have them: one Python list per column, ready for ``pyarrow.array``.

The columns are those of ``amqp_spark.schema`` that a stored message determines (``body``,
``exchange``, ``routing_key``, ``offset``, ``timestamp`` in whole seconds, ``headers`` as the
0-9-1 codec's dicts, ``delivery_mode``, ``priority`` and the string properties); the source
fills the rest (queue, delivery tag, redelivered) and renders ``headers`` and ``timestamp``
as it does for 0-9-1 deliveries (``amqp_spark.source.arrow``), so a row read over the
stream protocol equals the row read over 0-9-1.

Why it is fast: the messages of a stream mostly share everything before their body (one
producer's header, annotations and properties). Each record's sections before the body are
skipped by their encoded lengths, not decoded; the bytes skipped are the key of a cache of
what they give (every column but the body and the offset), so a message like the one before
costs a scan, a dict lookup and its body's slice. A message that differs (its own id or
timestamp) decodes only its sections not seen before. Records of another shape (a body that
is not one data section) are decoded in full.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, NamedTuple

from amqp_protocol.amqp10.amqp091 import (
    PROPERTY_FIELDS,
    STREAM_OFFSET_HEADER,
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

#: The columns ``decode_columns`` fills, the basic properties in ``PROPERTY_FIELDS``' order.
COLUMNS: tuple[str, ...] = ("body", "offset", *PROPERTY_FIELDS, "exchange", "routing_key")
_HEADERS = PROPERTY_FIELDS.index("headers")
#: How many distinct message prefixes one call remembers.
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


def _headers_around_offset(
    headers: dict[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A message's headers before and after where ``x-stream-offset`` sorts."""
    items = sorted((headers or {}).items())
    return (
        {k: v for k, v in items if k < STREAM_OFFSET_HEADER},
        {k: v for k, v in items if k > STREAM_OFFSET_HEADER},
    )


def decode_columns(
    records: Iterable[Buffer], queue: str, first_offset: int
) -> dict[str, list[Any]]:
    """The columns of ``records``, consecutive entries of stream ``queue`` from
    ``first_offset`` on (each gets its ``x-stream-offset`` header, as over 0-9-1)."""
    cache: dict[bytes, tuple[tuple[Any, ...], dict[str, Any], dict[str, Any]]] = {}
    section_cache: dict[bytes, Any] = {}
    bodies: list[bytes] = []
    rows: list[tuple[Any, ...]] = []
    headers: list[dict[str, Any]] = []
    offset = first_offset
    for record in records:
        scan = _scan(record)
        if scan is None:
            fields, body = _full(record, queue)
            before, after = _headers_around_offset(fields[_HEADERS])
        else:
            body = scan.body
            prefix = bytes(record[: scan.prefix_end])
            entry = cache.get(prefix)
            if entry is None:
                fields = _fields_of_sections(record, scan.spans, queue, section_cache)
                before, after = _headers_around_offset(fields[_HEADERS])
                if len(cache) >= CACHE_SIZE:
                    cache.clear()
                cache[prefix] = (fields, before, after)
            else:
                fields, before, after = entry
        bodies.append(body)
        rows.append(fields)
        headers.append({**before, STREAM_OFFSET_HEADER: offset, **after})
        offset += 1
    columns: dict[str, list[Any]] = {
        "body": bodies,
        "offset": list(range(first_offset, offset)),
    }
    transposed = list(zip(*rows, strict=True)) if rows else [()] * (len(COLUMNS) - 2)
    for name, column in zip(COLUMNS[2:], transposed, strict=True):
        columns[name] = list(column)
    columns["headers"] = headers
    return columns
