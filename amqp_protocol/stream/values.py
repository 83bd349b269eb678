"""The stream protocol's value types and their codecs, for the generated commands.

Integers are big-endian; a ``string`` is an int16 length and UTF-8 bytes, ``bytes`` an
int32 length (-1 reads as empty) and the bytes, an array an int32 count and its items.
Decoders take ``(data, offset)`` and return ``(value, next offset)``; they raise
``ValueError`` (or ``struct.error``) on a truncated value, which a generated ``decode``
turns into :class:`~amqp_protocol.stream.errors.MalformedFrame`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import IntEnum
from typing import NamedTuple, TypeVar

from .chunk import ChunkError, SubBatchEntry, read_sub_batch_entry

__all__ = [
    "DECODE_ERRORS",
    "ENCODE_ERRORS",
    "NO_OFFSET",
    "I32",
    "U16",
    "U32",
    "Buffer",
    "OffsetSpecification",
    "OffsetType",
    "PublishedMessage",
    "decode_array",
    "decode_bytes",
    "decode_int_map",
    "decode_messages",
    "decode_messages_v2",
    "decode_offset",
    "decode_shortbytes",
    "decode_string",
    "decode_string_map",
    "decode_strings",
    "decode_u16s",
    "decode_u64s",
    "encode_array",
    "encode_bytes",
    "encode_int_map",
    "encode_messages",
    "encode_messages_v2",
    "encode_offset",
    "encode_shortbytes",
    "encode_string",
    "encode_string_map",
    "encode_strings",
    "encode_u16s",
    "encode_u64s",
]

Buffer = bytes | bytearray | memoryview
T = TypeVar("T")

U16 = struct.Struct(">H")
U32 = struct.Struct(">I")
I32 = struct.Struct(">i")
_U64 = struct.Struct(">Q")
_I64 = struct.Struct(">q")
_HQ = struct.Struct(">HQ")
_Hq = struct.Struct(">Hq")
_QI = struct.Struct(">QI")


class OffsetType(IntEnum):
    """Where a subscription starts (``Subscribe``, ``ConsumerUpdateResponse``)."""

    NONE = 0
    FIRST = 1
    LAST = 2
    NEXT = 3
    OFFSET = 4
    TIMESTAMP = 5


class OffsetSpecification(NamedTuple):
    """An offset type and, for ``OFFSET`` and ``TIMESTAMP`` (ms), its value."""

    type: int
    value: int = 0


#: The offset specification of "none" (a ``ConsumerUpdateResponse`` that changes nothing).
NO_OFFSET = OffsetSpecification(OffsetType.NONE)
#: What a generated ``decode`` turns into ``MalformedFrame``: a value past the frame's end
#: (``struct.error``, ``ValueError`` from these decoders, ``UnicodeDecodeError``).
DECODE_ERRORS = (struct.error, ValueError, IndexError)
#: What a generated ``encode`` reports as a value it cannot encode.
ENCODE_ERRORS = (struct.error, ValueError, TypeError, AttributeError, OverflowError)


class PublishedMessage(NamedTuple):
    """One message of a ``Publish``: a record, or a sub-batch entry as published.

    ``filter_value`` is carried by ``PublishV2`` only (None in a v1 ``Publish``).
    """

    publishing_id: int
    message: Buffer | SubBatchEntry
    filter_value: str | None = None


def _end(data: Buffer, offset: int, size: int, what: str) -> int:
    end = offset + size
    if size < 0 or end > len(data):
        raise ValueError(f"{what} of {size} bytes at byte {offset} runs past the frame's end")
    return end


def encode_string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return U16.pack(len(raw)) + raw


def decode_string(data: Buffer, offset: int) -> tuple[str, int]:
    (size,) = U16.unpack_from(data, offset)
    end = _end(data, offset + 2, size, "string")
    return str(data[offset + 2 : end], "utf-8"), end


def encode_bytes(value: Buffer) -> bytes:
    return I32.pack(len(value)) + bytes(value)


def decode_bytes(data: Buffer, offset: int) -> tuple[bytes, int]:
    (size,) = I32.unpack_from(data, offset)
    if size == -1:
        return b"", offset + 4
    end = _end(data, offset + 4, size, "bytes")
    return bytes(data[offset + 4 : end]), end


def encode_shortbytes(value: Buffer) -> bytes:
    return U16.pack(len(value)) + bytes(value)


def decode_shortbytes(data: Buffer, offset: int) -> tuple[bytes, int]:
    (size,) = U16.unpack_from(data, offset)
    end = _end(data, offset + 2, size, "bytes")
    return bytes(data[offset + 2 : end]), end


def encode_array(items: Sequence[T], encode_item: Callable[[T], bytes]) -> bytes:
    return U32.pack(len(items)) + b"".join(encode_item(item) for item in items)


def decode_array(
    data: Buffer, offset: int, decode_item: Callable[[Buffer, int], tuple[T, int]]
) -> tuple[list[T], int]:
    (count,) = U32.unpack_from(data, offset)
    offset += 4
    _end(data, offset, count, "array")  # every item takes a byte at least
    items: list[T] = []
    for _ in range(count):
        item, offset = decode_item(data, offset)
        items.append(item)
    return items, offset


def encode_strings(values: Sequence[str]) -> bytes:
    return encode_array(values, encode_string)


def decode_strings(data: Buffer, offset: int) -> tuple[list[str], int]:
    return decode_array(data, offset, decode_string)


def _fixed_array(
    fmt: struct.Struct,
) -> tuple[Callable[[Sequence[int]], bytes], Callable[[Buffer, int], tuple[list[int], int]]]:
    def encode(values: Sequence[int]) -> bytes:
        return U32.pack(len(values)) + b"".join(fmt.pack(v) for v in values)

    def decode(data: Buffer, offset: int) -> tuple[list[int], int]:
        (count,) = U32.unpack_from(data, offset)
        start = offset + 4
        end = _end(data, start, count * fmt.size, "array")
        return [v for (v,) in fmt.iter_unpack(data[start:end])], end

    return encode, decode


encode_u64s, decode_u64s = _fixed_array(_U64)
encode_u16s, decode_u16s = _fixed_array(U16)


def encode_string_map(values: Mapping[str, str]) -> bytes:
    parts = [U32.pack(len(values))]
    for key, value in values.items():
        parts += (encode_string(key), encode_string(value))
    return b"".join(parts)


def decode_string_map(data: Buffer, offset: int) -> tuple[dict[str, str], int]:
    (count,) = U32.unpack_from(data, offset)
    offset += 4
    _end(data, offset, count, "map")
    out: dict[str, str] = {}
    for _ in range(count):
        key, offset = decode_string(data, offset)
        out[key], offset = decode_string(data, offset)
    return out, offset


def encode_int_map(values: Mapping[str, int]) -> bytes:
    parts = [U32.pack(len(values))]
    for key, value in values.items():
        parts += (encode_string(key), _I64.pack(value))
    return b"".join(parts)


def decode_int_map(data: Buffer, offset: int) -> tuple[dict[str, int], int]:
    (count,) = U32.unpack_from(data, offset)
    offset += 4
    _end(data, offset, count, "map")
    out: dict[str, int] = {}
    for _ in range(count):
        key, offset = decode_string(data, offset)
        (out[key],) = _I64.unpack_from(data, offset)
        offset += 8
    return out, offset


def encode_offset(spec: OffsetSpecification) -> bytes:
    if spec.type == OffsetType.OFFSET:
        return _HQ.pack(spec.type, spec.value)
    if spec.type == OffsetType.TIMESTAMP:
        return _Hq.pack(spec.type, spec.value)
    return U16.pack(spec.type)


def decode_offset(data: Buffer, offset: int) -> tuple[OffsetSpecification, int]:
    (kind,) = U16.unpack_from(data, offset)
    if kind == OffsetType.OFFSET:
        return OffsetSpecification(*_HQ.unpack_from(data, offset)), offset + 10
    if kind == OffsetType.TIMESTAMP:
        return OffsetSpecification(*_Hq.unpack_from(data, offset)), offset + 10
    if kind > OffsetType.TIMESTAMP:
        raise ValueError(f"offset type {kind} is none of 0-5 (none, first ... timestamp)")
    return OffsetSpecification(kind), offset + 2


def _encode_entry(message: Buffer | SubBatchEntry) -> bytes:
    if isinstance(message, SubBatchEntry):
        return message.encode()
    return U32.pack(len(message)) + bytes(message)


def encode_messages(messages: Iterable[PublishedMessage]) -> bytes:
    """A v1 ``Publish``'s count and entries: publishing id, then a record or a sub-batch."""
    parts = [b""]
    for m in messages:
        parts += (_U64.pack(m.publishing_id), _encode_entry(m.message))
    parts[0] = U32.pack(len(parts) // 2)
    return b"".join(parts)


def decode_messages(data: Buffer, offset: int) -> tuple[list[PublishedMessage], int]:
    """A v1 ``Publish``'s messages; records are slices of ``data`` (no copy)."""
    view = data if isinstance(data, memoryview) else memoryview(data)
    (count,) = U32.unpack_from(view, offset)
    offset += 4
    out: list[PublishedMessage] = []
    append = out.append
    for _ in range(count):
        publishing_id, size = _QI.unpack_from(view, offset)
        if size & 0x80000000:
            try:
                entry, offset = read_sub_batch_entry(view, offset + 8)
            except ChunkError as exc:
                raise ValueError(str(exc)) from None
            append(PublishedMessage(publishing_id, entry))
            continue
        start = offset + 12
        offset = _end(view, start, size, "message")
        append(PublishedMessage(publishing_id, view[start:offset]))
    return out, offset


def encode_messages_v2(messages: Iterable[PublishedMessage]) -> bytes:
    """A v2 ``Publish``'s count and entries: publishing id, filter value, record."""
    parts = [b""]
    for m in messages:
        if isinstance(m.message, SubBatchEntry):
            raise ValueError("a Publish v2 (with filter values) carries no sub-batches")
        parts += (
            _U64.pack(m.publishing_id),
            encode_string(m.filter_value or ""),
            U32.pack(len(m.message)),
            bytes(m.message),
        )
    parts[0] = U32.pack(len(parts) // 4)
    return b"".join(parts)


def decode_messages_v2(data: Buffer, offset: int) -> tuple[list[PublishedMessage], int]:
    """A v2 ``Publish``'s messages, with their filter values."""
    view = data if isinstance(data, memoryview) else memoryview(data)
    (count,) = U32.unpack_from(view, offset)
    offset += 4
    out: list[PublishedMessage] = []
    for _ in range(count):
        (publishing_id,) = _U64.unpack_from(view, offset)
        filter_value, offset = decode_string(view, offset + 8)
        (size,) = U32.unpack_from(view, offset)
        start = offset + 4
        offset = _end(view, start, size, "message")
        out.append(PublishedMessage(publishing_id, view[start:offset], filter_value))
    return out, offset
